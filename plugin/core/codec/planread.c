/*
 * The plan's JSON reader (vpPlanFromJson, plan.h): it accepts nothing the writer would not
 * have written, every key known, every value typed and in range, and the spelling before
 * format 1 as well (a ledger written by an older vcpuplaced).
 */
#include "core/model/plan.h"
#include "core/codec/jsonkeys.h"
#include "core/codec/planreadpriv.h"
#include "core/model/request.h"

#include <limits.h>
#include <string.h>

static bool
vpPlanReadPolicy(JsonObject *obj, vpPolicy *policy, GError **error)
{
    /* the last two (cpus=shared and its ratio) are written for shared VMs only */
    static const char *const keys[] = {"smt",   "coresched", "locality", "emulator", "rebalance",
                                       "unmet", "cpus",      "ratio",    NULL};
    JsonObject *pobj = vpPlanGetObject(obj, "policy", error);
    size_t i;

    if (!pobj || !vpJsonCheckKeys(pobj, "policy", keys, error))
        return false;
    for (i = 0; keys[i]; i++) {
        g_autoptr(GError) local = NULL;
        const char *value;

        if (i >= 6 && !json_object_has_member(pobj, keys[i]))
            continue;
        if (!vpPlanGetString(pobj, "policy.", keys[i], false, &value, error))
            return false;
        if (!vpPolicySetAttr(policy, keys[i], value, &local)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "policy.%s", local->message);
            return false;
        }
    }
    return true;
}

static bool
vpPlanReadVcpus(JsonObject *obj, vpPlan **plan, const char *domain, GError **error)
{
    static const char *const keys[] = {"vcpu", "cpu", "core", "l3", "numa", "package", NULL};
    static const char *const known[] = {"vcpu", "cpu",     "core", "l3",
                                        "numa", "package", "cpus", NULL};
    static const char *const legacy_keys[] = {"vcpu", "pu", "core", "l3", "numa", "package", NULL};
    JsonNode *node = vpPlanMember(obj, "vcpus", error);
    JsonArray *arr;
    guint n, i;

    if (!node)
        return false;
    if (!JSON_NODE_HOLDS_ARRAY(node)) {
        g_autofree char *shown = vpPlanShow(node);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "vcpus=%s is not an array", shown);
        return false;
    }
    arr = json_node_get_array(node);
    n = json_array_get_length(arr);
    if (n < 1 || n > VP_PLAN_MAX_VCPUS) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "vcpus has %u entries, expected 1..%d", n,
                    VP_PLAN_MAX_VCPUS);
        return false;
    }

    *plan = vpPlanNew(domain, n);
    for (i = 0; i < n; i++) {
        g_autofree char *path = g_strdup_printf("vcpus[%u].", i);
        g_autofree char *where = g_strdup_printf("vcpus[%u]", i);
        JsonNode *elem = json_array_get_element(arr, i);
        JsonObject *vobj;
        const char *cpu;
        gint64 v;

        if (!JSON_NODE_HOLDS_OBJECT(elem)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is not an object", where);
            return false;
        }
        vobj = json_node_get_object(elem);
        cpu = vpPlanLegacyName(vobj, "cpu", "pu");
        if (!vpJsonCheckKeys(vobj, where, strcmp(cpu, "pu") ? known : legacy_keys, error))
            return false;
        if (!vpPlanGetInt(vobj, path, "vcpu", i, i, &v, error))
            return false;
        if (!vpPlanGetIndex(vobj, path, cpu, VP_PLAN_MAX_CPU, &v, error))
            return false;
        (*plan)->vcpu_pu[i] = v;
        /* Derived from the topology when written; checked for type only, since a ledger
         * must survive the logical indexes shifting when CPUs go offline. */
        for (const char *const *k = keys + 2; *k; k++) {
            if (!vpPlanGetIndex(vobj, path, *k, INT_MAX, &v, error))
                return false;
        }
    }
    return true;
}

static bool
vpPlanReadGuestTopology(JsonObject *obj, vpPlan *plan, GError **error)
{
    static const char *const keys[] = {"sockets", "cores", "threads", NULL};
    JsonObject *gobj;
    gint64 v;

    if (!json_object_has_member(obj, "guest_topology"))
        return true;
    if (!(gobj = vpPlanGetObject(obj, "guest_topology", error)))
        return false;
    if (!vpJsonCheckKeys(gobj, "guest_topology", keys, error))
        return false;
    if (!vpPlanGetInt(gobj, "guest_topology.", "sockets", 1, VP_PLAN_MAX_VCPUS, &v, error))
        return false;
    plan->guest_sockets = v;
    if (!vpPlanGetInt(gobj, "guest_topology.", "cores", 1, VP_PLAN_MAX_VCPUS, &v, error))
        return false;
    plan->guest_cores = v;
    if (!vpPlanGetInt(gobj, "guest_topology.", "threads", 1, VP_PLAN_MAX_VCPUS, &v, error))
        return false;
    plan->guest_threads = v;
    return true;
}

/* guest_cells is derived from the placement (vpPlanGuestCells): read for its shape only, N
 * cells of numa:N numbered in order whose vCPU lists split the vCPUs into consecutive
 * blocks, none empty. */
static bool
vpPlanCheckGuestCells(JsonObject *obj, const vpPlan *plan, GError **error)
{
    static const char *const keys[] = {"cell", "vcpus", "numa", NULL};
    static const char *const legacy_keys[] = {"cell", "vcpus", "node", NULL};
    JsonNode *node = json_object_get_member(obj, "guest_cells");
    unsigned n = vpLocalitySplit(plan->policy.locality), first = 0;
    JsonArray *arr;

    if (!node)
        return true;
    if (!n || plan->nvcpus < n || !JSON_NODE_HOLDS_ARRAY(node) ||
        json_array_get_length(arr = json_node_get_array(node)) != n) {
        g_autofree char *shown = vpPlanShow(node);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "guest_cells=%s does not match locality='%s' over %u vCPUs", shown,
                    vpLocalityName(plan->policy.locality), plan->nvcpus);
        return false;
    }
    for (unsigned k = 0; k < n; k++) {
        g_autofree char *path = g_strdup_printf("guest_cells[%u].", k);
        g_autofree char *where = g_strdup_printf("guest_cells[%u]", k);
        g_autofree char *field = g_strdup_printf("guest_cells[%u].vcpus", k);
        g_autoptr(vpBitmap) want = hwloc_bitmap_alloc();
        g_autoptr(vpBitmap) set = NULL;
        JsonNode *elem = json_array_get_element(arr, k);
        JsonObject *cobj;
        const char *list, *numa;
        gint64 v;
        int last;

        if (!JSON_NODE_HOLDS_OBJECT(elem)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is not an object", where);
            return false;
        }
        cobj = json_node_get_object(elem);
        numa = vpPlanLegacyName(cobj, "numa", "node");
        if (!vpJsonCheckKeys(cobj, where, strcmp(numa, "node") ? keys : legacy_keys, error) ||
            !vpPlanGetInt(cobj, path, "cell", k, k, &v, error) ||
            !vpPlanGetInt(cobj, path, numa, 0, VP_PLAN_MAX_CPU, &v, error) ||
            !vpPlanGetString(cobj, path, "vcpus", false, &list, error))
            return false;
        if (!(set = vpCpuListParse(field, list, error)))
            return false;
        /* the block after the previous cell's, as long as this cell's own list says, leaving
         * a vCPU for each later cell (the last one takes the rest) */
        last = hwloc_bitmap_last(set);
        if (k + 1 == n)
            last = (int)plan->nvcpus - 1;
        else if (last < (int)first || last > (int)(plan->nvcpus - (n - k)))
            last = (int)first;
        hwloc_bitmap_set_range(want, (int)first, last);
        first = (unsigned)last + 1;
        if (!hwloc_bitmap_isequal(set, want)) {
            g_autofree char *expect = vpCpuListFormat(want);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='%s', expected '%s'", field, list,
                        expect);
            return false;
        }
    }
    return true;
}

static bool
vpPlanReadMoves(JsonObject *obj, vpPlan *plan, GError **error)
{
    static const char *const keys[] = {"domain", "vcpu", "from", "to", "reason", NULL};
    JsonNode *node = json_object_get_member(obj, "moves");
    JsonArray *arr;
    guint n;

    if (!node)
        return true;
    if (!JSON_NODE_HOLDS_ARRAY(node) ||
        (n = json_array_get_length(json_node_get_array(node))) < 1 || n > VP_PLAN_MAX_VCPUS) {
        g_autofree char *shown = vpPlanShow(node);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "moves=%s is not an array of 1..%d moves",
                    shown, VP_PLAN_MAX_VCPUS);
        return false;
    }
    arr = json_node_get_array(node);
    for (guint i = 0; i < n; i++) {
        g_autofree char *path = g_strdup_printf("moves[%u].", i);
        g_autofree char *where = g_strdup_printf("moves[%u]", i);
        JsonNode *elem = json_array_get_element(arr, i);
        JsonObject *mobj;
        const char *domain, *reason;
        gint64 vcpu, from, to;

        if (!JSON_NODE_HOLDS_OBJECT(elem)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is not an object", where);
            return false;
        }
        mobj = json_node_get_object(elem);
        if (!vpJsonCheckKeys(mobj, where, keys, error) ||
            !vpPlanGetString(mobj, path, "domain", false, &domain, error) ||
            !vpPlanGetInt(mobj, path, "vcpu", 0, VP_PLAN_MAX_VCPUS - 1, &vcpu, error) ||
            !vpPlanGetInt(mobj, path, "from", 0, VP_PLAN_MAX_CPU, &from, error) ||
            !vpPlanGetInt(mobj, path, "to", 0, VP_PLAN_MAX_CPU, &to, error) ||
            !vpPlanGetString(mobj, path, "reason", false, &reason, error))
            return false;
        if (!*domain) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%sdomain is empty", path);
            return false;
        }
        if (from == to) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%sfrom=%" G_GINT64_FORMAT " equals to: a move must change the CPU", path,
                        from);
            return false;
        }
        vpPlanAddMove(plan, domain, vcpu, from, to, reason);
    }
    return true;
}

/* A byte count up to 2^62 (no machine has more memory; bounds the sums). */
#define VP_PLAN_MAX_BYTES ((gint64)1 << 62)

static bool
vpPlanReadMemory(JsonObject *obj, vpPlan *plan, GError **error)
{
    static const char *const keys[] = {"numa", "bytes", "page_size", NULL};
    JsonNode *node = json_object_get_member(obj, "memory");
    JsonArray *arr;

    if (!JSON_NODE_HOLDS_ARRAY(node)) {
        g_autofree char *shown = vpPlanShow(node);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "memory=%s is not an array", shown);
        return false;
    }
    arr = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(arr); i++) {
        JsonNode *e = json_array_get_element(arr, i);
        g_autofree char *path = g_strdup_printf("memory[%u].", i);
        JsonObject *eobj;
        gint64 numa, bytes, page = (gint64)plan->page_size;

        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "memory[%u] is not an object", i);
            return false;
        }
        eobj = json_node_get_object(e);
        if (!vpJsonCheckKeys(eobj, path, keys, error) ||
            !vpPlanGetInt(eobj, path, "numa", 0, VP_PLAN_MAX_CPU, &numa, error) ||
            !vpPlanGetInt(eobj, path, "bytes", 0, VP_PLAN_MAX_BYTES, &bytes, error) ||
            (json_object_has_member(eobj, "page_size") &&
             !vpPlanGetInt(eobj, path, "page_size", 0, VP_PLAN_MAX_BYTES, &page, error)))
            return false;
        if (vpPlanMemoryOnPages(plan, numa, page)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "memory names node %" G_GINT64_FORMAT
                        " twice for pages of %" G_GINT64_FORMAT " bytes",
                        numa, page);
            return false;
        }
        vpPlanAddPages(plan, numa, page, bytes);
    }
    return true;
}

static bool
vpPlanReadOwnAndMemory(JsonObject *obj, vpPlan *plan, GError **error)
{
    gint64 v;

    if (json_object_has_member(obj, "own")) {
        hwloc_bitmap_t set = vpPlanGetSet(obj, "own", error);

        if (!set)
            return false;
        hwloc_bitmap_free(plan->own);
        plan->own = set;
    }
    if (json_object_has_member(obj, "cpuset")) {
        hwloc_bitmap_t set = vpPlanGetSet(obj, "cpuset", error);

        if (!set)
            return false;
        if (hwloc_bitmap_iszero(set)) {
            hwloc_bitmap_free(set);
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "cpuset='' names no CPU");
            return false;
        }
        plan->cpuset = set;
    }
    /* before memory: its entries' pages default to it */
    if (json_object_has_member(obj, "page_size")) {
        if (!vpPlanGetInt(obj, "", "page_size", 0, VP_PLAN_MAX_BYTES, &v, error))
            return false;
        plan->page_size = v;
    }
    if (json_object_has_member(obj, "memory") && !vpPlanReadMemory(obj, plan, error))
        return false;
    return true;
}

/* "group": null, or a valid trust group name. */
static bool
vpPlanReadGroup(JsonObject *obj, const char **group, GError **error)
{
    if (!vpPlanGetString(obj, "", "group", true, group, error))
        return false;
    if (*group && !vpPolicyValidGroup(*group)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "group='%s' is not 1 to 64 characters of A-Z a-z 0-9 . _ -", *group);
        return false;
    }
    return true;
}

static bool
vpPlanReadHow(JsonObject *obj, vpPlan *plan, GError **error)
{
    const char *how;
    int i;

    if (!vpPlanGetString(obj, "", "how", false, &how, error))
        return false;
    for (i = 0; i < VP_HOW_LAST && strcmp(vpHowName(i), how) != 0; i++)
        ;
    if (i == VP_HOW_LAST) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "how='%s' is not one of placed, pinned, adopted", how);
        return false;
    }
    plan->how = i;
    return true;
}

/* A shared plan's "shared" cores and each vCPU's "cpus" inside them, unpinned; present
 * exactly for cpus=shared. */
static bool
vpPlanReadShared(JsonObject *obj, vpPlan *plan, GError **error)
{
    JsonArray *arr = json_node_get_array(json_object_get_member(obj, "vcpus"));
    bool shared = plan->policy.cpus == VP_CPUS_SHARED;
    hwloc_bitmap_t set;

    if (shared != json_object_has_member(obj, "shared")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "cpus='%s' but \"shared\" is %s",
                    vpCpusName(plan->policy.cpus), shared ? "absent" : "present");
        return false;
    }
    if (!shared)
        return true;
    vpPlanMakeShared(plan);
    if (!(set = vpPlanGetSet(obj, "shared", error)))
        return false;
    hwloc_bitmap_free(plan->shared);
    plan->shared = set;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        JsonObject *vobj = json_node_get_object(json_array_get_element(arr, i));

        if (!(set = vpPlanGetSet(vobj, "cpus", error)))
            return false;
        hwloc_bitmap_free(plan->vcpu_set[i]);
        plan->vcpu_set[i] = set;
        if (plan->vcpu_pu[i] >= 0 || !hwloc_bitmap_isincluded(set, plan->shared)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "vcpus[%u] of a shared plan is pinned, or its cpus lie outside \"shared\"",
                        i);
            return false;
        }
    }
    return true;
}

/* "emulator" and "reserved": CPU lists, each possibly empty. */
static bool
vpPlanReadSets(JsonObject *obj, vpPlan *plan, GError **error)
{
    hwloc_bitmap_t set;

    if (!(set = vpPlanGetSet(obj, "emulator", error)))
        return false;
    hwloc_bitmap_free(plan->emulator);
    plan->emulator = set;
    if (!(set = vpPlanGetSet(obj, "reserved", error)))
        return false;
    hwloc_bitmap_free(plan->reserved);
    plan->reserved = set;
    return true;
}

/* "level" by name and "level_index" (null: the whole level). */
static bool
vpPlanReadLevel(JsonObject *obj, vpPlan *plan, GError **error)
{
    const char *level;
    gint64 v;
    int i;

    if (!vpPlanGetString(obj, "", "level", false, &level, error))
        return false;
    if ((i = vpLevelFromName(level)) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "level='%s' is not one of core, cluster, l3, numa, package, host", level);
        return false;
    }
    plan->level = i;
    if (!vpPlanGetIndex(obj, "", "level_index", INT_MAX, &v, error))
        return false;
    plan->level_index = v;
    return true;
}

/* "topology_mismatch", "degraded" and "overcommit" (absent: false; only smt=share may). */
static bool
vpPlanReadFlags(JsonObject *obj, vpPlan *plan, GError **error)
{
    bool mismatch, degraded, overcommit;

    if (!vpPlanGetBool(obj, "topology_mismatch", &mismatch, error) ||
        !vpPlanGetBool(obj, "degraded", &degraded, error))
        return false;
    plan->topology_mismatch = mismatch;
    plan->degraded = degraded;
    if (!json_object_has_member(obj, "overcommit"))
        return true;
    if (!vpPlanGetBool(obj, "overcommit", &overcommit, error))
        return false;
    if (overcommit && plan->policy.smt != VP_SMT_SHARE) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "overcommit is true but smt='%s' (only share may time-share PUs)",
                    vpSmtName(plan->policy.smt));
        return false;
    }
    plan->overcommit = overcommit;
    return true;
}

/* "beside_others": absent or 1..vCPUs, and only for smt=pack (pack's last tier). */
static bool
vpPlanReadBeside(JsonObject *obj, vpPlan *plan, GError **error)
{
    gint64 v;

    if (!json_object_has_member(obj, "beside_others"))
        return true;
    if (!vpPlanGetInt(obj, "", "beside_others", 1, MAX(plan->nvcpus, 1), &v, error))
        return false;
    if (plan->policy.smt != VP_SMT_PACK) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "beside_others=%" G_GINT64_FORMAT " but smt='%s' (only pack counts it)", v,
                    vpSmtName(plan->policy.smt));
        return false;
    }
    plan->beside_others = (unsigned)v;
    return true;
}

/* "degraded_reason": set exactly when degraded is true. */
static bool
vpPlanReadReason(JsonObject *obj, vpPlan *plan, GError **error)
{
    const char *reason;

    if (!vpPlanGetString(obj, "", "degraded_reason", true, &reason, error))
        return false;
    if (plan->degraded != (reason != NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    plan->degraded ? "degraded is true but degraded_reason is null"
                                   : "degraded is false but degraded_reason is set");
        return false;
    }
    plan->degraded_reason = g_strdup(reason);
    return true;
}

/* Reads everything but the domain name, into *plan which it allocates. */
static bool
vpPlanRead(JsonObject *obj, const char *domain, vpPlan **plan, GError **error)
{
    static const char *const keys[] = {
        "format",     "domain",        "group",           "policy",
        "how",        "vcpus",         "emulator",        "reserved",
        "level",      "level_index",   "guest_topology",  "topology_mismatch",
        "overcommit", "own",           "cpuset",          "memory",
        "page_size",  "degraded",      "degraded_reason", "guest_cells",
        "moves",      "beside_others", "shared",          NULL};
    vpPolicy policy = {0};
    const char *group;
    gint64 v;

    if (!vpJsonCheckKeys(obj, "plan", keys, error))
        return false;
    /* present where the plan is a document of its own (plan --json), absent in a ledger */
    if (json_object_has_member(obj, "format") &&
        !vpPlanGetInt(obj, "", "format", VP_JSON_FORMAT, VP_JSON_FORMAT, &v, error))
        return false;
    if (!vpPlanReadGroup(obj, &group, error))
        return false;

    vpPolicyInitDefaults(&policy);
    if (!vpPlanReadPolicy(obj, &policy, error))
        return false;
    if (!vpPlanReadVcpus(obj, plan, domain, error))
        return false;
    (*plan)->policy = policy;
    (*plan)->policy.group = g_strdup(group);

    return vpPlanReadHow(obj, *plan, error) && vpPlanReadSets(obj, *plan, error) &&
           vpPlanReadLevel(obj, *plan, error) && vpPlanReadGuestTopology(obj, *plan, error) &&
           vpPlanReadFlags(obj, *plan, error) && vpPlanReadBeside(obj, *plan, error) &&
           vpPlanReadOwnAndMemory(obj, *plan, error) && vpPlanReadReason(obj, *plan, error) &&
           vpPlanCheckGuestCells(obj, *plan, error) && vpPlanReadMoves(obj, *plan, error) &&
           vpPlanReadShared(obj, *plan, error);
}

vpPlan *
vpPlanFromJson(JsonNode *node, GError **error)
{
    g_autoptr(vpPlan) plan = NULL;
    g_autoptr(GError) local = NULL;
    const char *domain;
    JsonObject *obj;

    if (!node || !JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "plan is not a JSON object");
        return NULL;
    }
    obj = json_node_get_object(node);
    if (!vpPlanGetString(obj, "", "domain", false, &domain, error))
        return NULL;
    if (!*domain) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain is empty");
        return NULL;
    }
    if (!vpPlanRead(obj, domain, &plan, &local)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "plan of domain '%s': %s", domain,
                    local->message);
        return NULL;
    }
    return g_steal_pointer(&plan);
}
