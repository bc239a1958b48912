/*
 * The ledger: one owner slot per PU plus each domain's plan. Every change goes through
 * vpLedgerClaims(), which turns a plan into the PU slots it needs and rejects a plan that
 * names a CPU the topology lacks or gives one PU twice, so the owner table can never hold
 * two entries for one PU: loading a file and adding a fresh plan take the same path.
 * The one exception is deliberate: overcommitted smt=share plans may time-share a PU with
 * other smt=share vCPUs; those extra holders live in a per-PU side list.
 */
#include "ledger.h"
#include "core/jsonkeys.h"
#include "core/jsonparse.h"

#include <string.h>

struct _vpLedger {
    const vpTopology *topo;
    int npus;
    vpOwner *owners;   /* per logical PU; domain points into the plan in plans */
    GArray **sharers;  /* per logical PU, NULL or extra vpOwner entries (time-sharing) */
    GHashTable *plans; /* domain name (owned by the plan) -> vpPlan copy */
};

typedef struct {
    int pu; /* logical index */
    vpOwnKind kind;
    int vcpu;
} vpClaim;

static const char *const ownKindNames[VP_OWN_LAST] = {
    [VP_OWN_NONE] = "free",         [VP_OWN_VCPU] = "vcpu",  [VP_OWN_EMULATOR] = "emulator",
    [VP_OWN_RESERVED] = "reserved", [VP_OWN_PINNED] = "own",
};

const char *
vpOwnKindName(vpOwnKind kind)
{
    return kind < VP_OWN_LAST ? ownKindNames[kind] : NULL;
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
    return ledger;
}

void
vpLedgerFree(vpLedger *ledger)
{
    if (!ledger)
        return;
    g_hash_table_unref(ledger->plans);
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
    case VP_OWN_NONE:
    case VP_OWN_LAST:
        break;
    }
    return g_strdup("nothing");
}

static gboolean
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
        return FALSE;
    }
    for (i = 0; i < claims->len; i++) {
        const vpClaim *other = &g_array_index(claims, vpClaim, i);

        if (other->pu == pu) {
            g_autofree char *first = vpClaimDescribe(other->kind, other->vcpu);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain '%s': CPU %d is given twice, to %s and to %s", plan->domain, os,
                        first, who);
            return FALSE;
        }
    }
    g_array_append_val(claims, claim);
    return TRUE;
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

gboolean
vpLedgerAdd(vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(GArray) claims = NULL;
    vpPlan *copy;
    guint i;

    if (g_hash_table_contains(ledger->plans, plan->domain)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s' is already in the ledger",
                    plan->domain);
        return FALSE;
    }
    if (!(claims = vpLedgerClaims(ledger, plan, error)))
        return FALSE;
    for (i = 0; i < claims->len; i++) {
        const vpClaim *c = &g_array_index(claims, vpClaim, i);
        const vpOwner *held = &ledger->owners[c->pu];

        if (held->domain && !vpLedgerTimeShare(ledger, plan, c) &&
            !(c->kind == VP_OWN_PINNED && vpLedgerOnlyPinned(ledger, c->pu))) {
            g_autofree char *who = vpClaimDescribe(c->kind, c->vcpu);
            g_autofree char *holder = vpClaimDescribe(held->kind, held->vcpu);

            g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                        "domain '%s': CPU %u for %s is held by domain '%s' for %s", plan->domain,
                        vpTopologyPU(ledger->topo, c->pu)->os, who, held->domain, holder);
            return FALSE;
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
    return TRUE;
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
    return plan;
}

gboolean
vpLedgerRemove(vpLedger *ledger, const char *domain)
{
    vpPlan *plan = vpLedgerSteal(ledger, domain);

    vpPlanFree(plan);
    return plan != NULL;
}

gboolean
vpLedgerReplace(vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(vpPlan) old = vpLedgerSteal(ledger, plan->domain);

    if (vpLedgerAdd(ledger, plan, error))
        return TRUE;
    /* The old plan fitted before and nothing else changed: putting it back cannot fail. */
    if (old && !vpLedgerAdd(ledger, old, NULL))
        g_assert_not_reached();
    return FALSE;
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

const char *
vpLedgerGroupAt(const vpLedger *ledger, int pu)
{
    const vpPlan *plan;

    if (pu < 0 || pu >= ledger->npus || !ledger->owners[pu].domain)
        return NULL;
    plan = g_hash_table_lookup(ledger->plans, ledger->owners[pu].domain);
    return plan->group;
}

bool
vpLedgerPUFree(const vpLedger *ledger, int pu)
{
    return pu >= 0 && pu < ledger->npus && !ledger->owners[pu].domain;
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

gboolean
vpLedgerCheck(const vpLedger *ledger, GError **error)
{
    g_autofree GArray **expect = g_new0(GArray *, ledger->npus);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    gboolean ok = TRUE;
    guint d, i;
    int pu;

    for (d = 0; d < names->len && ok; d++) {
        const vpPlan *plan = g_hash_table_lookup(ledger->plans, names->pdata[d]);
        g_autoptr(GArray) claims = vpLedgerClaims(ledger, plan, error);

        if (!claims) {
            ok = FALSE;
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
        guint plain = 0, pinned = 0;

        for (i = 0; i < n; i++) {
            const vpOwner *o = &g_array_index(expect[pu], vpOwner, i);
            const vpPlan *plan = g_hash_table_lookup(ledger->plans, o->domain);

            plain += !plan->overcommit;
            pinned += o->kind == VP_OWN_PINNED;
            if (n > 1 && (o->kind != VP_OWN_VCPU || plan->policy.smt != VP_SMT_SHARE ||
                          plan->policy.unmet != VP_UNMET_DEGRADE))
                plain = n;
        }
        /* time-sharing: share vCPUs only, and all but at most one holder overcommitted */
        if (n > 1 && plain > 1 && pinned < n) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "CPU %u is held by both domain '%s' and domain '%s'",
                        vpTopologyPU(ledger->topo, pu)->os,
                        g_array_index(expect[pu], vpOwner, 0).domain,
                        g_array_index(expect[pu], vpOwner, 1).domain);
            ok = FALSE;
        }
        for (i = 0; i < n && ok; i++) {
            const vpOwner *o = &g_array_index(expect[pu], vpOwner, i);

            if (!vpLedgerHolds(ledger, pu, o)) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "CPU %u: the plan of '%s' holds it for %s, the owner table does not",
                            vpTopologyPU(ledger->topo, pu)->os, o->domain, vpOwnKindName(o->kind));
                ok = FALSE;
            }
        }
        if (ok && vpLedgerNOwners(ledger, pu) != n) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "CPU %u: owner table has %u holders, the plans %u",
                        vpTopologyPU(ledger->topo, pu)->os, vpLedgerNOwners(ledger, pu), n);
            ok = FALSE;
        }
    }
    for (pu = 0; pu < ledger->npus; pu++) {
        if (expect[pu])
            g_array_free(expect[pu], TRUE);
    }
    return ok;
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
    GHashTableIter it;
    gpointer value;
    guint64 sum = 0;

    g_hash_table_iter_init(&it, ledger->plans);
    while (g_hash_table_iter_next(&it, NULL, &value))
        sum += vpPlanMemoryOnPages(value, node, page_size);
    return sum;
}

static bool
bindingMode(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE || mode == VP_MEM_INTERLEAVE;
}

/* The OS nodes of this host that the live <numatune> confines the memory to; NULL when some
 * of it may lie anywhere (no numatune, preferred, a cell without a binding memnode). */
static hwloc_bitmap_t
liveMemoryNodes(const vpTopology *topo, const vpRequest *live)
{
    bool whole = bindingMode(live->mem_mode) && live->nodeset;
    g_autoptr(vpBitmap) in = whole ? hwloc_bitmap_dup(live->nodeset) : hwloc_bitmap_alloc();
    hwloc_bitmap_t out;

    for (unsigned c = 0; c < live->ncells && !whole; c++) {
        const vpCell *cell = &live->cells[c];
        vpMemMode mode = cell->mode != VP_MEM_NONE ? cell->mode : live->mem_mode;

        if (!cell->nodeset || !bindingMode(mode))
            return NULL;
        hwloc_bitmap_or(in, in, cell->nodeset);
    }
    if (!whole && live->ncells == 0)
        return NULL;
    out = hwloc_bitmap_alloc();
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        if (!node->made_up && hwloc_bitmap_isset(in, node->os))
            hwloc_bitmap_set(out, node->os);
    }
    return out;
}

/* Per node group index, how memory that must go somewhere inside allowed is spread (as first
 * touch would): over the nodes of the domain's vCPUs there, else evenly over allowed. All
 * zero when allowed names no node of this host. */
static guint64 *
spreadWeights(const vpTopology *topo, const vpPlan *plan, hwloc_const_bitmap_t allowed)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    guint64 *w = g_new0(guint64, nnodes);
    bool any = false;

    for (unsigned i = 0; i < plan->nvcpus; i++) {
        int pu = plan->vcpu_pu[i] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[i]) : -1;
        int g = pu >= 0 ? vpTopologyNodeOfPU(topo, pu) : -1;
        const vpGroup *node = g >= 0 ? vpTopologyGroup(topo, VP_LEVEL_NUMA, g) : NULL;

        if (node && !node->made_up && (!allowed || hwloc_bitmap_isset(allowed, node->os)))
            w[g]++;
    }
    for (int g = 0; g < nnodes; g++)
        any |= w[g] > 0;
    for (int g = 0; g < nnodes && !any && allowed; g++)
        w[g] = hwloc_bitmap_isset(allowed, vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os);
    return w;
}

/* Adds bytes in pages of page_size to plan, split by the weights w; FALSE (nothing added)
 * when every weight is zero. */
static bool
spreadPages(vpPlan *plan, const vpTopology *topo, const guint64 *w, guint64 page_size,
            guint64 bytes)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA), first = -1;
    guint64 sum = 0, given = 0;

    for (int g = 0; g < nnodes; g++) {
        sum += w[g];
        if (w[g] && first < 0)
            first = g;
    }
    if (first < 0)
        return false;
    for (int g = first + 1; g < nnodes; g++) {
        /* 128-bit: sizes in bytes times weights in bytes overflow 64 bits */
        guint64 share = (guint64)((unsigned __int128)bytes * w[g] / sum);

        if (!share)
            continue;
        vpPlanAddPages(plan, vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os, page_size, share);
        given += share;
    }
    vpPlanAddPages(plan, vpTopologyGroup(topo, VP_LEVEL_NUMA, first)->os, page_size, bytes - given);
    return true;
}

static char *
memoryText(const vpPlan *plan)
{
    g_autoptr(GString) s = g_string_new(NULL);

    if (!plan->nmem)
        return g_strdup("nothing");
    for (unsigned i = 0; i < plan->nmem; i++) {
        g_autofree char *mem = vpMemoryFormat(plan->mem[i].bytes);
        g_autofree char *page =
            plan->mem[i].page_size ? vpMemoryFormat(plan->mem[i].page_size) : NULL;

        g_string_append_printf(s, "%snode %u: %s%s%s%s", i ? ", " : "", plan->mem[i].node, mem,
                               page ? " in " : "", page ? page : "", page ? " pages" : "");
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool
sameMemory(const vpPlan *a, const vpPlan *b)
{
    if (a->nmem != b->nmem || a->page_size != b->page_size)
        return false;
    for (unsigned i = 0; i < a->nmem; i++) {
        if (a->mem[i].node != b->mem[i].node || a->mem[i].bytes != b->mem[i].bytes ||
            a->mem[i].page_size != b->mem[i].page_size)
            return false;
    }
    return true;
}

/* Each holding of plan scaled to the live total, into fixed: base pages that lie outside
 * allowed are spread inside it (the kernel migrates them when cpuset.mems changes; where
 * allowed names no node of this host they cannot be elsewhere and stay), huge pages stay
 * where they are (neither libvirt nor a cpuset change moves a running domain's huge pages),
 * and each such holding is named in stay. */
static void
followHoldings(const vpTopology *topo, const vpPlan *plan, hwloc_const_bitmap_t allowed,
               guint64 total, vpPlan *fixed, GString *stay)
{
    g_autofree guint64 *w = allowed ? spreadWeights(topo, plan, allowed) : NULL;
    bool movable = false;
    guint64 sum = 0, given = 0, moving = 0;

    for (int g = 0; w && g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++)
        movable |= w[g] > 0;
    for (unsigned i = 0; i < plan->nmem; i++)
        sum += plan->mem[i].bytes;
    for (unsigned i = 0; i < plan->nmem && sum; i++) {
        const vpNodeMemory *m = &plan->mem[i];
        guint64 bytes = (guint64)((unsigned __int128)total * m->bytes / sum);
        bool outside = allowed && !hwloc_bitmap_isset(allowed, m->node);

        if (i == plan->nmem - 1)
            bytes = total - given;
        given += bytes;
        if (outside && !m->page_size && movable) {
            moving += bytes;
            continue;
        }
        if (bytes)
            vpPlanAddPages(fixed, m->node, m->page_size, bytes);
        if (outside && m->page_size) {
            g_autofree char *mem = vpMemoryFormat(bytes);
            g_autofree char *page = vpMemoryFormat(m->page_size);
            g_string_append_printf(stay, "%snode %u: %s in %s pages", stay->len ? ", " : "",
                                   m->node, mem, page);
        }
    }
    if (moving)
        spreadPages(fixed, topo, w, 0, moving);
}

char *
vpLedgerReconcileMemory(vpLedger *ledger, const char *domain, const vpRequest *live)
{
    const vpTopology *topo = ledger->topo;
    const vpPlan *plan = vpLedgerLookup(ledger, domain);
    g_autoptr(vpBitmap) allowed = NULL;
    g_autoptr(vpPlan) fixed = NULL;
    g_autoptr(GString) stay = g_string_new(NULL);

    if (!plan || !live->memory)
        return NULL;
    allowed = liveMemoryNodes(topo, live);
    fixed = vpPlanCopy(plan);
    g_clear_pointer(&fixed->mem, g_free);
    fixed->nmem = 0;
    if (plan->nmem) {
        followHoldings(topo, plan, allowed, live->memory, fixed, stay);
    } else {
        g_autofree guint64 *w = spreadWeights(topo, plan, allowed);

        fixed->page_size = live->hugepage_size;
        spreadPages(fixed, topo, w, fixed->page_size, live->memory);
    }
    if (sameMemory(plan, fixed) && !stay->len)
        return NULL;
    g_autofree char *was = memoryText(plan);
    g_autofree char *now = memoryText(fixed);
    if (!vpLedgerReplace(ledger, fixed, NULL))
        g_assert_not_reached(); /* the same PUs as the plan it replaces */
    if (!stay->len)
        return g_strdup_printf("%s -> %s", was, now);
    return g_strdup_printf("%s -> %s; huge pages outside the live nodeset stay (%s): libvirt "
                           "does not move them live",
                           was, now, stay->str);
}

JsonNode *
vpLedgerToJson(const vpLedger *ledger)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    guint i;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format");
    json_builder_add_int_value(b, VP_JSON_FORMAT);
    json_builder_set_member_name(b, "domains");
    json_builder_begin_array(b);
    for (i = 0; i < names->len; i++) {
        const vpPlan *plan = g_hash_table_lookup(ledger->plans, names->pdata[i]);

        json_builder_add_value(b, vpPlanToJson(plan, ledger->topo));
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

vpLedger *
vpLedgerFromJson(const vpTopology *topo, JsonNode *node, GError **error)
{
    static const char *const keys[] = {"format", "domains", NULL};
    static const char *const legacy_keys[] = {"version", "domains", NULL};
    const char *format;
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    JsonObject *obj;
    JsonNode *member;
    JsonArray *domains;
    guint i;

    if (!node || !JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger is not a JSON object");
        return NULL;
    }
    obj = json_node_get_object(node);
    /* Ledgers before the common JSON vocabulary said "version": 1, and their plans "pu" for
     * a CPU and -1 for none: the plan reader takes both spellings, so an upgrade keeps it. */
    format = json_object_has_member(obj, "version") && !json_object_has_member(obj, "format")
                 ? "version"
                 : "format";
    member = json_object_get_member(obj, format);
    if (!member || !JSON_NODE_HOLDS_VALUE(member) ||
        json_node_get_value_type(member) != G_TYPE_INT64 ||
        json_node_get_int(member) != VP_JSON_FORMAT) {
        g_autofree char *shown = member ? json_to_string(member, FALSE) : g_strdup("missing");

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s=%.40s is not supported (this build reads format %d)", format, shown,
                    VP_JSON_FORMAT);
        return NULL;
    }
    member = json_object_get_member(obj, "domains");
    if (!member || !JSON_NODE_HOLDS_ARRAY(member)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domains is missing or not an array");
        return NULL;
    }
    if (!vpJsonCheckKeys(obj, "ledger", strcmp(format, "format") ? legacy_keys : keys, error))
        return NULL;

    domains = json_node_get_array(member);
    for (i = 0; i < json_array_get_length(domains); i++) {
        g_autoptr(GError) local = NULL;
        g_autoptr(vpPlan) plan = vpPlanFromJson(json_array_get_element(domains, i), &local);

        if (!plan || !vpLedgerAdd(ledger, plan, &local)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domains[%u]: %s", i, local->message);
            return NULL;
        }
    }
    return g_steal_pointer(&ledger);
}

char *
vpLedgerToText(const vpLedger *ledger)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = vpLedgerToJson(ledger);
    g_autofree char *text = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}

vpLedger *
vpLedgerFromText(const vpTopology *topo, const char *text, gsize len, const char *name,
                 GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(JsonNode) root = NULL;
    vpLedger *ledger;

    if (len == 0 || strspn(text, " \t\r\n") >= len) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "ledger %s is empty (truncated?); remove it to start from an empty ledger",
                    name);
        return NULL;
    }
    if (!(root = vpJsonParse(text, len, &local))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger %s is corrupt: %s", name,
                    local->message);
        return NULL;
    }
    if (!(ledger = vpLedgerFromJson(topo, root, &local))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger %s: %s", name, local->message);
        return NULL;
    }
    return ledger;
}
