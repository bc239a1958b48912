/*
 * The ledger: one owner slot per PU plus each domain's plan. Every change goes through
 * vpLedgerClaims(), which turns a plan into the PU slots it needs and rejects a plan that
 * names a CPU the topology lacks or gives one PU twice, so the owner table can never hold
 * two entries for one PU: loading a file and adding a fresh plan take the same path.
 * Two exceptions are deliberate: overcommitted smt=share plans may time-share a PU with
 * other smt=share vCPUs, and cpus=shared plans hold their cores together up to the ratio;
 * those extra holders live in a per-PU side list.
 */
#include "core/model/ledger.h"

#include <stdatomic.h>
#include <string.h>

struct _vpLedger {
    const vpTopology *topo;
    int npus;
    vpOwner *owners;    /* per logical PU; domain points into the plan in plans */
    GArray **sharers;   /* per logical PU, NULL or extra vpOwner entries (time-sharing) */
    GHashTable *plans;  /* domain name (owned by the plan) -> vpPlan copy */
    GArray *memory;     /* vpNodeMemory: the plans' holdings summed per node and page size */
    guint64 generation; /* vpLedgerGeneration() */
};

typedef struct {
    int pu; /* logical index */
    vpOwnKind kind;
    int vcpu;
} vpClaim;

static const char *const ownKindNames[VP_OWN_LAST] = {
    [VP_OWN_NONE] = "free",         [VP_OWN_VCPU] = "vcpu",  [VP_OWN_EMULATOR] = "emulator",
    [VP_OWN_RESERVED] = "reserved", [VP_OWN_PINNED] = "own", [VP_OWN_SHARED] = "shared",
};

const char *
vpOwnKindName(vpOwnKind kind)
{
    return kind < VP_OWN_LAST ? ownKindNames[kind] : NULL;
}

/* Drawn from one counter for every ledger of the process, so that a ledger made anew (a
 * reload's copy) never shows the number of the one it replaced. */
static guint64
nextGeneration(void)
{
    static atomic_uint_fast64_t last;

    return atomic_fetch_add_explicit(&last, 1, memory_order_relaxed) + 1;
}

vpLedger *
vpLedgerNew(const vpTopology *topo)
{
    vpLedger *ledger = g_new0(vpLedger, 1);
    int i;

    ledger->topo = topo;
    ledger->npus = vpTopologyNPUs(topo);
    ledger->owners = g_new0(vpOwner, ledger->npus);
    ledger->sharers = g_new0(GArray *, ledger->npus);
    for (i = 0; i < ledger->npus; i++)
        ledger->owners[i].vcpu = -1;
    ledger->plans =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vpPlanFree);
    ledger->memory = g_array_new(FALSE, FALSE, sizeof(vpNodeMemory));
    ledger->generation = nextGeneration();
    return ledger;
}

void
vpLedgerFree(vpLedger *ledger)
{
    if (!ledger)
        return;
    g_hash_table_unref(ledger->plans);
    g_array_free(ledger->memory, TRUE);
    for (int i = 0; i < ledger->npus; i++) {
        if (ledger->sharers[i])
            g_array_free(ledger->sharers[i], TRUE);
    }
    g_free(ledger->sharers);
    g_free(ledger->owners);
    g_free(ledger);
}

/* "vCPU 3", "the emulator", "a reserved sibling": who a slot is for, in messages. */
static char *
vpClaimDescribe(vpOwnKind kind, int vcpu)
{
    switch (kind) {
    case VP_OWN_VCPU:
        return g_strdup_printf("vCPU %d", vcpu);
    case VP_OWN_EMULATOR:
        return g_strdup("the emulator");
    case VP_OWN_RESERVED:
        return g_strdup("a reserved sibling");
    case VP_OWN_PINNED:
        return g_strdup("its own pins");
    case VP_OWN_SHARED:
        return g_strdup("its shared cores");
    case VP_OWN_NONE:
    case VP_OWN_LAST:
        break;
    }
    return g_strdup("nothing");
}

static bool
vpLedgerClaimOne(const vpLedger *ledger, const vpPlan *plan, GArray *claims, int os, vpOwnKind kind,
                 int vcpu, GError **error)
{
    int pu = vpTopologyPUByOS(ledger->topo, os);
    vpClaim claim = {pu, kind, vcpu};
    g_autofree char *who = vpClaimDescribe(kind, vcpu);
    guint i;

    if (pu < 0) {
        bool offline = hwloc_bitmap_isset(vpTopologyOffline(ledger->topo), os);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain '%s': %s is on CPU %d, which the topology (%s) %s", plan->domain, who,
                    os, vpTopologyGetSource(ledger->topo), offline ? "has offline" : "lacks");
        return false;
    }
    for (i = 0; i < claims->len; i++) {
        const vpClaim *other = &g_array_index(claims, vpClaim, i);

        if (other->pu == pu) {
            g_autofree char *first = vpClaimDescribe(other->kind, other->vcpu);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain '%s': CPU %d is given twice, to %s and to %s", plan->domain, os,
                        first, who);
            return false;
        }
    }
    g_array_append_val(claims, claim);
    return true;
}

/* The PU slots a plan needs. A dedicated emulator PU is in plan->reserved (plan.h) and is
 * then the emulator's whole set; when the emulator floats over vCPU PUs or runs on
 * housekeeping CPUs its set is not inside reserved, and reserved PUs are idle siblings. */
static GArray *
vpLedgerClaims(const vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(GArray) claims = g_array_new(FALSE, FALSE, sizeof(vpClaim));
    bool dedicated = !hwloc_bitmap_iszero(plan->emulator) &&
                     hwloc_bitmap_isincluded(plan->emulator, plan->reserved);
    unsigned i;
    int os;

    for (i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] < 0)
            continue;
        if (!vpLedgerClaimOne(ledger, plan, claims, plan->vcpu_pu[i], VP_OWN_VCPU, i, error))
            return NULL;
    }
    hwloc_bitmap_foreach_begin(os, plan->shared)
    {
        if (!vpLedgerClaimOne(ledger, plan, claims, os, VP_OWN_SHARED, -1, error))
            return NULL;
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(os, plan->reserved)
    {
        vpOwnKind kind =
            dedicated && hwloc_bitmap_isset(plan->emulator, os) ? VP_OWN_EMULATOR : VP_OWN_RESERVED;

        if (!vpLedgerClaimOne(ledger, plan, claims, os, kind, -1, error))
            return NULL;
    }
    hwloc_bitmap_foreach_end();
    /* The domain's own pins hold what its placed threads do not already hold; CPUs outside
     * the topology are the domain's business (libvirt refuses them), not ledger slots. */
    hwloc_bitmap_foreach_begin(os, plan->own)
    {
        int pu = vpTopologyPUByOS(ledger->topo, os);
        bool taken = false;

        for (i = 0; i < claims->len && pu >= 0; i++)
            taken |= g_array_index(claims, vpClaim, i).pu == pu;
        if (pu >= 0 && !taken &&
            !vpLedgerClaimOne(ledger, plan, claims, os, VP_OWN_PINNED, -1, error))
            return NULL;
    }
    hwloc_bitmap_foreach_end();
    return g_steal_pointer(&claims);
}

/* A claim on a held PU is fine only between vCPUs of smt=share domains that both accept
 * degrading, and only for a plan the placer marked as overcommitted. */
static bool
vpLedgerTimeShare(const vpLedger *ledger, const vpPlan *plan, const vpClaim *c)
{
    const vpOwner *held = &ledger->owners[c->pu];
    const vpPlan *holder = g_hash_table_lookup(ledger->plans, held->domain);

    /* either side may be the overcommitted one: a ledger file lists plans by name, not in
     * the order they were placed */
    return (plan->overcommit || (holder && holder->overcommit)) &&
           plan->policy.smt == VP_SMT_SHARE && plan->policy.unmet == VP_UNMET_DEGRADE &&
           c->kind == VP_OWN_VCPU && held->kind == VP_OWN_VCPU && holder &&
           holder->policy.smt == VP_SMT_SHARE && holder->policy.unmet == VP_UNMET_DEGRADE;
}

/* Domains may name the same CPUs in their own pins (an emulator set many share): such CPUs
 * are held by all of them together, and by nothing else. */
static bool
vpLedgerOnlyPinned(const vpLedger *ledger, int pu)
{
    for (unsigned i = 0; i < vpLedgerNOwners(ledger, pu); i++) {
        if (vpLedgerOwnerAt(ledger, pu, i).kind != VP_OWN_PINNED)
            return false;
    }
    return true;
}

/* The placer asks what a node holds about twice per node per decision: a sum kept as plans
 * come and go costs a few entries (nodes x page sizes) there instead of every plan held. */
static void
vpLedgerCountMemory(vpLedger *ledger, const vpPlan *plan, bool add)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        const vpNodeMemory *m = &plan->mem[i];
        guint k;

        for (k = 0; k < ledger->memory->len; k++) {
            vpNodeMemory *sum = &g_array_index(ledger->memory, vpNodeMemory, k);

            if (sum->node == m->node && sum->page_size == m->page_size)
                break;
        }
        if (k == ledger->memory->len) {
            vpNodeMemory zero = {.node = m->node, .page_size = m->page_size};

            g_array_append_val(ledger->memory, zero);
        }
        if (add)
            g_array_index(ledger->memory, vpNodeMemory, k).bytes += m->bytes;
        else
            g_array_index(ledger->memory, vpNodeMemory, k).bytes -= m->bytes;
    }
}

/* Whether a shared claim on pu keeps every shared domain there within its ratio; the
 * refusal gives the figures. A tiny slack absorbs the rounding of sums of 1/n. */
static bool
vpLedgerSharedFits(const vpLedger *ledger, const vpPlan *plan, int pu, GError **error)
{
    unsigned os = vpTopologyPU(ledger->topo, pu)->os;
    double load = vpLedgerSharedLoad(ledger, pu) + vpPlanSharedLoad(plan, (int)os);
    double held = vpLedgerSharedRatio(ledger, pu);
    double ratio = held > 0 ? MIN(held, plan->policy.ratio) : plan->policy.ratio;

    if (load <= ratio + 1e-9)
        return true;
    g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                "domain '%s': CPU %u would carry %.2f vCPUs, past the ratio %g of its shared "
                "domains",
                plan->domain, os, load, ratio);
    return false;
}

bool
vpLedgerAdd(vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(GArray) claims = NULL;
    vpPlan *copy;
    guint i;

    if (g_hash_table_contains(ledger->plans, plan->domain)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s' is already in the ledger",
                    plan->domain);
        return false;
    }
    if (!(claims = vpLedgerClaims(ledger, plan, error)))
        return false;
    for (i = 0; i < claims->len; i++) {
        const vpClaim *c = &g_array_index(claims, vpClaim, i);
        const vpOwner *held = &ledger->owners[c->pu];

        if (c->kind == VP_OWN_SHARED && (!held->domain || held->kind == VP_OWN_SHARED)) {
            if (!vpLedgerSharedFits(ledger, plan, c->pu, error))
                return false;
            continue;
        }
        if (held->domain && !vpLedgerTimeShare(ledger, plan, c) &&
            !(c->kind == VP_OWN_PINNED && vpLedgerOnlyPinned(ledger, c->pu))) {
            g_autofree char *who = vpClaimDescribe(c->kind, c->vcpu);
            g_autofree char *holder = vpClaimDescribe(held->kind, held->vcpu);

            g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                        "domain '%s': CPU %u for %s is held by domain '%s' for %s", plan->domain,
                        vpTopologyPU(ledger->topo, c->pu)->os, who, held->domain, holder);
            return false;
        }
    }

    copy = vpPlanCopy(plan);
    for (i = 0; i < claims->len; i++) {
        const vpClaim *c = &g_array_index(claims, vpClaim, i);
        vpOwner owner = {copy->domain, c->kind, c->vcpu};

        if (!ledger->owners[c->pu].domain) {
            ledger->owners[c->pu] = owner;
            continue;
        }
        if (!ledger->sharers[c->pu])
            ledger->sharers[c->pu] = g_array_new(FALSE, FALSE, sizeof(vpOwner));
        g_array_append_val(ledger->sharers[c->pu], owner);
    }
    g_hash_table_insert(ledger->plans, copy->domain, copy);
    vpLedgerCountMemory(ledger, copy, true);
    ledger->generation = nextGeneration();
    return true;
}

/* Takes a domain's plan out of the ledger and hands it to the caller. */
static vpPlan *
vpLedgerSteal(vpLedger *ledger, const char *domain)
{
    vpPlan *plan = g_hash_table_lookup(ledger->plans, domain);
    int i;

    if (!plan)
        return NULL;
    for (i = 0; i < ledger->npus; i++) {
        GArray *more = ledger->sharers[i];

        for (guint k = more ? more->len : 0; k > 0; k--) {
            if (g_array_index(more, vpOwner, k - 1).domain == plan->domain)
                g_array_remove_index(more, k - 1);
        }
        if (ledger->owners[i].domain != plan->domain)
            continue;
        if (more && more->len) {
            ledger->owners[i] = g_array_index(more, vpOwner, 0);
            g_array_remove_index(more, 0);
        } else {
            ledger->owners[i] = (vpOwner){NULL, VP_OWN_NONE, -1};
        }
    }
    g_hash_table_steal(ledger->plans, domain);
    vpLedgerCountMemory(ledger, plan, false);
    ledger->generation = nextGeneration();
    return plan;
}

bool
vpLedgerRemove(vpLedger *ledger, const char *domain)
{
    vpPlan *plan = vpLedgerSteal(ledger, domain);

    vpPlanFree(plan);
    return plan != NULL;
}

bool
vpLedgerReplace(vpLedger *ledger, const vpPlan *plan, GError **error)
{
    guint64 before = ledger->generation;
    g_autoptr(vpPlan) old = vpLedgerSteal(ledger, plan->domain);

    if (vpLedgerAdd(ledger, plan, error))
        return true;
    /* The old plan fitted before and nothing else changed: putting it back cannot fail. */
    if (old && !vpLedgerAdd(ledger, old, NULL))
        g_assert_not_reached();
    /* The ledger holds what it held before: the same number says so. */
    ledger->generation = before;
    return false;
}

const vpPlan *
vpLedgerLookup(const vpLedger *ledger, const char *domain)
{
    return g_hash_table_lookup(ledger->plans, domain);
}

vpOwner
vpLedgerOwner(const vpLedger *ledger, int pu)
{
    if (pu < 0 || pu >= ledger->npus)
        return (vpOwner){NULL, VP_OWN_NONE, -1};
    return ledger->owners[pu];
}

unsigned
vpLedgerNOwners(const vpLedger *ledger, int pu)
{
    if (pu < 0 || pu >= ledger->npus || !ledger->owners[pu].domain)
        return 0;
    return 1 + (ledger->sharers[pu] ? ledger->sharers[pu]->len : 0);
}

vpOwner
vpLedgerOwnerAt(const vpLedger *ledger, int pu, unsigned i)
{
    if (i == 0)
        return vpLedgerOwner(ledger, pu);
    if (i >= vpLedgerNOwners(ledger, pu))
        return (vpOwner){NULL, VP_OWN_NONE, -1};
    return g_array_index(ledger->sharers[pu], vpOwner, i - 1);
}

bool
vpLedgerPUFree(const vpLedger *ledger, int pu)
{
    return pu >= 0 && pu < ledger->npus && !ledger->owners[pu].domain;
}

double
vpLedgerSharedLoad(const vpLedger *ledger, int pu)
{
    unsigned os = vpTopologyPU(ledger->topo, pu)->os;
    double load = 0;

    for (unsigned i = 0; i < vpLedgerNOwners(ledger, pu); i++) {
        vpOwner o = vpLedgerOwnerAt(ledger, pu, i);

        if (o.kind == VP_OWN_SHARED)
            load += vpPlanSharedLoad(g_hash_table_lookup(ledger->plans, o.domain), (int)os);
    }
    return load;
}

double
vpLedgerSharedRatio(const vpLedger *ledger, int pu)
{
    double ratio = 0;

    for (unsigned i = 0; i < vpLedgerNOwners(ledger, pu); i++) {
        vpOwner o = vpLedgerOwnerAt(ledger, pu, i);
        const vpPlan *plan = g_hash_table_lookup(ledger->plans, o.domain);

        if (o.kind == VP_OWN_SHARED && (ratio == 0 || plan->policy.ratio < ratio))
            ratio = plan->policy.ratio;
    }
    return ratio;
}

static int
vpLedgerCompareNames(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *
vpLedgerDomains(const vpLedger *ledger)
{
    GPtrArray *names = g_ptr_array_new();
    GHashTableIter iter;
    gpointer key;

    g_hash_table_iter_init(&iter, ledger->plans);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        g_ptr_array_add(names, key);
    g_ptr_array_sort(names, vpLedgerCompareNames);
    return names;
}

GPtrArray *
vpLedgerPlansCopy(const vpLedger *ledger)
{
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    GPtrArray *plans = g_ptr_array_new_full(names->len, (GDestroyNotify)vpPlanFree);

    for (guint i = 0; i < names->len; i++)
        g_ptr_array_add(plans, vpPlanCopy(g_hash_table_lookup(ledger->plans, names->pdata[i])));
    return plans;
}

unsigned
vpLedgerNDomains(const vpLedger *ledger)
{
    return g_hash_table_size(ledger->plans);
}

const vpTopology *
vpLedgerTopology(const vpLedger *ledger)
{
    return ledger->topo;
}

guint64
vpLedgerGeneration(const vpLedger *ledger)
{
    return ledger->generation;
}

static bool
vpLedgerHolds(const vpLedger *ledger, int pu, const vpOwner *want)
{
    for (unsigned i = 0; i < vpLedgerNOwners(ledger, pu); i++) {
        vpOwner have = vpLedgerOwnerAt(ledger, pu, i);

        if (have.domain == want->domain && have.kind == want->kind && have.vcpu == want->vcpu)
            return true;
    }
    return false;
}

/* The sums vpLedgerCountMemory() keeps against the plans', added up from scratch. */
static bool
vpLedgerCheckMemory(const vpLedger *ledger, GError **error)
{
    for (guint k = 0; k < ledger->memory->len; k++) {
        const vpNodeMemory *sum = &g_array_index(ledger->memory, vpNodeMemory, k);
        GHashTableIter it;
        gpointer value;
        guint64 bytes = 0;

        g_hash_table_iter_init(&it, ledger->plans);
        while (g_hash_table_iter_next(&it, NULL, &value))
            bytes += vpPlanMemoryOnPages(value, sum->node, sum->page_size);
        if (bytes != sum->bytes) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "node %u: the ledger counts %" G_GUINT64_FORMAT
                        " bytes in pages of %" G_GUINT64_FORMAT
                        ", its plans hold %" G_GUINT64_FORMAT,
                        sum->node, sum->bytes, sum->page_size, bytes);
            return false;
        }
    }
    return true;
}

bool
vpLedgerCheck(const vpLedger *ledger, GError **error)
{
    g_autofree GArray **expect = g_new0(GArray *, ledger->npus);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    bool ok = true;
    guint d, i;
    int pu;

    for (d = 0; d < names->len && ok; d++) {
        const vpPlan *plan = g_hash_table_lookup(ledger->plans, names->pdata[d]);
        g_autoptr(GArray) claims = vpLedgerClaims(ledger, plan, error);

        if (!claims) {
            ok = false;
            break;
        }
        for (i = 0; i < claims->len; i++) {
            const vpClaim *c = &g_array_index(claims, vpClaim, i);
            vpOwner o = {plan->domain, c->kind, c->vcpu};

            if (!expect[c->pu])
                expect[c->pu] = g_array_new(FALSE, FALSE, sizeof(vpOwner));
            g_array_append_val(expect[c->pu], o);
        }
    }
    for (pu = 0; pu < ledger->npus && ok; pu++) {
        guint n = expect[pu] ? expect[pu]->len : 0;
        guint plain = 0, pinned = 0, shared = 0;

        for (i = 0; i < n; i++) {
            const vpOwner *o = &g_array_index(expect[pu], vpOwner, i);
            const vpPlan *plan = g_hash_table_lookup(ledger->plans, o->domain);

            plain += !plan->overcommit;
            pinned += o->kind == VP_OWN_PINNED;
            shared += o->kind == VP_OWN_SHARED;
            if (n > 1 && (o->kind != VP_OWN_VCPU || plan->policy.smt != VP_SMT_SHARE ||
                          plan->policy.unmet != VP_UNMET_DEGRADE))
                plain = n;
        }
        /* time-sharing: share vCPUs only, and all but at most one holder overcommitted */
        if (n > 1 && plain > 1 && pinned < n && shared < n) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "CPU %u is held by both domain '%s' and domain '%s'",
                        vpTopologyPU(ledger->topo, pu)->os,
                        g_array_index(expect[pu], vpOwner, 0).domain,
                        g_array_index(expect[pu], vpOwner, 1).domain);
            ok = false;
        }
        for (i = 0; i < n && ok; i++) {
            const vpOwner *o = &g_array_index(expect[pu], vpOwner, i);

            if (!vpLedgerHolds(ledger, pu, o)) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "CPU %u: the plan of '%s' holds it for %s, the owner table does not",
                            vpTopologyPU(ledger->topo, pu)->os, o->domain, vpOwnKindName(o->kind));
                ok = false;
            }
        }
        if (ok && vpLedgerNOwners(ledger, pu) != n) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "CPU %u: owner table has %u holders, the plans %u",
                        vpTopologyPU(ledger->topo, pu)->os, vpLedgerNOwners(ledger, pu), n);
            ok = false;
        }
    }
    for (pu = 0; pu < ledger->npus; pu++) {
        if (expect[pu])
            g_array_free(expect[pu], TRUE);
    }
    return ok && vpLedgerCheckMemory(ledger, error);
}

vpLedger *
vpLedgerCopy(const vpLedger *ledger, const vpTopology *topo, GError **error)
{
    g_autoptr(vpLedger) copy = vpLedgerNew(topo);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        if (!vpLedgerAdd(copy, g_hash_table_lookup(ledger->plans, names->pdata[i]), error))
            return NULL;
    }
    return g_steal_pointer(&copy);
}

guint64
vpLedgerNodeMemory(const vpLedger *ledger, unsigned node, guint64 page_size)
{
    for (guint k = 0; k < ledger->memory->len; k++) {
        const vpNodeMemory *sum = &g_array_index(ledger->memory, vpNodeMemory, k);

        if (sum->node == node && sum->page_size == page_size)
            return sum->bytes;
    }
    return 0;
}
