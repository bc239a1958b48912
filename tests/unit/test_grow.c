/*
 * vCPU hotplug in the plan (vpPlanResize): new vCPUs go where the placer would put them
 * beside the domain's others, the ledger accepts every result, and what could not be met
 * is said. Synthetic topologies number siblings adjacently: with "l3:2 core:2 pu:2", L3 0
 * holds cores {0,1} and {2,3}, L3 1 holds {4,5} and {6,7}.
 */
#include "core/place/grow.h"
#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <string.h>

#define TWO_L3 "synthetic:pack:1 l3:2 core:2 pu:2"

/* A recorded plan: vCPUs on the given CPUs (-1 ends the list), reserved siblings as a
 * CPU list, placed at one L3 group. */
static void
record(vpLedger *ledger, const char *name, vpSmt smt, const char *group, int l3, const int *cpus,
       const char *reserved)
{
    unsigned n = 0;
    g_autoptr(vpPlan) plan = NULL;
    g_autoptr(GError) error = NULL;

    while (cpus[n] >= 0)
        n++;
    plan = vpPlanNew(name, n);
    plan->policy.smt = smt;
    plan->policy.group = g_strdup(group);
    plan->policy.coresched = group ? VP_CORESCHED_GROUP : VP_CORESCHED_VM;
    memcpy(plan->vcpu_pu, cpus, sizeof(int) * n);
    if (reserved) {
        hwloc_bitmap_t set = vpCpuListParse("reserved", reserved, &error);
        ck_assert_msg(set, "%s", error ? error->message : "");
        hwloc_bitmap_copy(plan->reserved, set);
        hwloc_bitmap_free(set);
    }
    plan->level = l3 >= 0 ? VP_LEVEL_L3 : VP_LEVEL_HOST;
    plan->level_index = l3;
    ck_assert_msg(vpLedgerAdd(ledger, plan, &error), "%s", error ? error->message : "");
}

/* Resizes name in the ledger and checks that the ledger takes the result. */
static const vpPlan *
resize(const vpTopology *topo, vpLedger *ledger, const char *name, unsigned n)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpPlan) plan =
        vpPlanResize(topo, ledger, vpLedgerLookup(ledger, name), NULL, n, &error);

    ck_assert_msg(plan, "%s: %s", name, error ? error->message : "");
    ck_assert_uint_eq(plan->nvcpus, n);
    ck_assert_msg(vpLedgerReplace(ledger, plan, &error), "%s", error ? error->message : "");
    ck_assert_msg(vpLedgerCheck(ledger, &error), "%s", error ? error->message : "");
    return vpLedgerLookup(ledger, name);
}

static char *
cpusOf(const vpPlan *plan)
{
    GString *s = g_string_new(NULL);

    for (unsigned i = 0; i < plan->nvcpus; i++)
        g_string_append_printf(s, "%s%d", i ? "," : "", plan->vcpu_pu[i]);
    return g_string_free(s, FALSE);
}

static char *
reservedOf(const vpPlan *plan)
{
    return hwloc_bitmap_iszero(plan->reserved) ? g_strdup("") : vpCpuListFormat(plan->reserved);
}

#define END (-1)

START_TEST(test_spread_free_core_beside_the_others)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *cpus = NULL;

    record(ledger, "a", VP_SMT_SPREAD, NULL, 0, (int[]){0, END}, NULL);
    plan = resize(topo, ledger, "a", 2);
    cpus = cpusOf(plan);
    /* the free core of its own L3, not its own sibling 1, not the other L3 */
    ck_assert_str_eq(cpus, "0,2");
    ck_assert(!plan->degraded);
    ck_assert_int_eq(plan->level, VP_LEVEL_L3);
    ck_assert_int_eq(plan->level_index, 0);
}
END_TEST

START_TEST(test_spread_prefers_free_core_elsewhere_to_a_sibling)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *cpus = NULL;

    record(ledger, "a", VP_SMT_SPREAD, NULL, 0, (int[]){0, END}, NULL);
    record(ledger, "b", VP_SMT_SPREAD, NULL, 0, (int[]){2, END}, NULL);
    plan = resize(topo, ledger, "a", 2);
    cpus = cpusOf(plan);
    ck_assert_msg(strcmp(cpus, "0,4") == 0 || strcmp(cpus, "0,6") == 0, "got %s", cpus);
    ck_assert(plan->degraded);
    ck_assert_str_eq(plan->degraded_reason, "vCPU 1 placed outside the l3 of the other vCPUs: no "
                                            "free core there");
    /* the smallest level holding both: the one NUMA node */
    ck_assert_int_eq(plan->level, VP_LEVEL_NUMA);
}
END_TEST

/* No free core left: its own sibling (its own cookie), never a stranger's. */
START_TEST(test_spread_own_sibling_before_strangers)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *cpus = NULL;

    record(ledger, "b", VP_SMT_SPREAD, NULL, 0, (int[]){2, END}, NULL);
    record(ledger, "c", VP_SMT_SPREAD, NULL, 1, (int[]){4, END}, NULL);
    record(ledger, "a", VP_SMT_SPREAD, NULL, 1, (int[]){6, END}, NULL);
    record(ledger, "d", VP_SMT_SPREAD, NULL, 0, (int[]){0, END}, NULL);
    plan = resize(topo, ledger, "a", 2);
    cpus = cpusOf(plan);
    ck_assert_str_eq(cpus, "6,7");
    ck_assert(!plan->degraded);
}
END_TEST

/* A trust group that shares cookies: a group mate's sibling is as good as its own. */
START_TEST(test_group_mates_sibling)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;

    record(ledger, "a", VP_SMT_SPREAD, "g", 0, (int[]){0, 1, END}, NULL);
    record(ledger, "m", VP_SMT_SPREAD, "g", 0, (int[]){2, END}, NULL);
    record(ledger, "x", VP_SMT_SPREAD, NULL, 1, (int[]){4, END}, NULL);
    record(ledger, "y", VP_SMT_SPREAD, NULL, 1, (int[]){6, END}, NULL);
    plan = resize(topo, ledger, "a", 3);
    ck_assert_int_eq(plan->vcpu_pu[2], 3);
}
END_TEST

START_TEST(test_isolate_holds_the_sibling)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *cpus = NULL;
    g_autofree char *reserved = NULL;

    record(ledger, "a", VP_SMT_ISOLATE, NULL, 0, (int[]){0, END}, "1");
    plan = resize(topo, ledger, "a", 2);
    cpus = cpusOf(plan);
    reserved = reservedOf(plan);
    ck_assert_str_eq(cpus, "0,2");
    ck_assert_str_eq(reserved, "1,3");
}
END_TEST

/* isolate with unmet=refuse: a vCPU that exists cannot be refused; relaxed, and said so. */
START_TEST(test_isolate_relaxed_when_no_whole_core)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;

    record(ledger, "a", VP_SMT_ISOLATE, NULL, 0, (int[]){0, END}, "1");
    record(ledger, "b", VP_SMT_SPREAD, NULL, 0, (int[]){2, END}, NULL);
    plan = resize(topo, ledger, "a", 2);
    ck_assert(plan->degraded);
    ck_assert_msg(
        g_str_has_prefix(plan->degraded_reason, "vCPU 1: smt=isolate relaxed to smt=spread: "),
        "%s", plan->degraded_reason);
    ck_assert_int_eq(plan->vcpu_pu[1], 3);
}
END_TEST

START_TEST(test_pack_fills_its_idle_sibling_first)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *cpus = NULL;
    g_autofree char *reserved = NULL;

    record(ledger, "a", VP_SMT_PACK, NULL, 0, (int[]){0, END}, "1");
    plan = resize(topo, ledger, "a", 2);
    ck_assert_int_eq(plan->vcpu_pu[1], 1);
    ck_assert(hwloc_bitmap_iszero(plan->reserved));
    plan = resize(topo, ledger, "a", 3);
    cpus = cpusOf(plan);
    reserved = reservedOf(plan);
    ck_assert_str_eq(cpus, "0,1,2");
    ck_assert_str_eq(reserved, "3");
}
END_TEST

START_TEST(test_shrink_frees)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;
    g_autofree char *iso = NULL;
    g_autofree char *pack = NULL;

    record(ledger, "i", VP_SMT_ISOLATE, NULL, 0, (int[]){0, 2, END}, "1,3");
    record(ledger, "p", VP_SMT_PACK, NULL, 1, (int[]){4, 5, END}, NULL);
    plan = resize(topo, ledger, "i", 1);
    iso = reservedOf(plan);
    ck_assert_str_eq(iso, "1");
    ck_assert(vpLedgerPUFree(ledger, vpTopologyPUByOS(topo, 2)));
    ck_assert(vpLedgerPUFree(ledger, vpTopologyPUByOS(topo, 3)));
    /* pack keeps the whole core: the sibling its vCPU left is held idle */
    plan = resize(topo, ledger, "p", 1);
    pack = reservedOf(plan);
    ck_assert_str_eq(pack, "5");
}
END_TEST

/* A pack domain that pack's last tier put beside another trust group counts no more vCPUs
 * beside it than it has once shrunk, so that its plan still reads back from the ledger. */
START_TEST(test_shrink_keeps_beside_count_true)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) copy = NULL;
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(JsonNode) json = NULL;
    g_autoptr(GError) error = NULL;
    const vpPlan *plan;

    record(ledger, "s", VP_SMT_SPREAD, NULL, -1, (int[]){0, 2, 4, 6, END}, NULL);
    record(ledger, "p", VP_SMT_PACK, NULL, -1, (int[]){1, 3, END}, NULL);
    copy = vpPlanCopy(vpLedgerLookup(ledger, "p"));
    copy->beside_others = 2;
    ck_assert_msg(vpLedgerReplace(ledger, copy, &error), "%s", error ? error->message : "");
    plan = resize(topo, ledger, "p", 1);
    ck_assert_uint_eq(plan->beside_others, 1);
    json = vpPlanToJson(plan, topo);
    back = vpPlanFromJson(json, &error);
    ck_assert_msg(back, "%s", error ? error->message : "");
    ck_assert_uint_eq(back->beside_others, 1);
}
END_TEST

START_TEST(test_floating_emulator_follows)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = vpPlanNew("a", 1);
    g_autoptr(GError) error = NULL;
    g_autofree char *emulator = NULL;
    const vpPlan *grown;

    plan->policy.emulator = VP_EMULATOR_VCPUS;
    plan->vcpu_pu[0] = 0;
    hwloc_bitmap_only(plan->emulator, 0);
    plan->level = VP_LEVEL_L3;
    plan->level_index = 0;
    ck_assert(vpLedgerAdd(ledger, plan, &error));
    grown = resize(topo, ledger, "a", 2);
    emulator = vpCpuListFormat(grown->emulator);
    ck_assert_str_eq(emulator, "0,2");
}
END_TEST

START_TEST(test_no_room_left_unpinned)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:1 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;

    record(ledger, "a", VP_SMT_SPREAD, NULL, 0, (int[]){0, END}, NULL);
    record(ledger, "b", VP_SMT_SPREAD, NULL, 0, (int[]){1, END}, NULL);
    plan = resize(topo, ledger, "a", 2);
    ck_assert_int_eq(plan->vcpu_pu[1], -1);
    ck_assert(plan->degraded);
    ck_assert_msg(g_str_has_prefix(plan->degraded_reason, "vCPU 1 hot-plugged but left unpinned: "),
                  "%s", plan->degraded_reason);
}
END_TEST

/* Two nodes of 8 GB: node 0 holds CPUs 0-7, node 1 CPUs 8-15 (4 cores of 2 each). */
#define TWO_NODES "synthetic:pack:1 group:2 [numa(memory=8GB)] core:4 pu:2"

/* A domain placed on the whole host (no locality group to keep to) whose memory is on
 * node; what it asks for (req) decides where its new vCPUs may go. */
static const vpPlan *
growOn(const vpTopology *topo, vpLedger *ledger, const int *cpus, unsigned node,
       const vpRequest *req, unsigned n)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpPlan) grown = NULL;

    record(ledger, "a", VP_SMT_SPREAD, NULL, -1, cpus, NULL);
    {
        g_autoptr(vpPlan) plan = vpPlanCopy(vpLedgerLookup(ledger, "a"));

        vpPlanAddMemory(plan, node, 1ULL << 30);
        ck_assert(vpLedgerReplace(ledger, plan, NULL));
    }
    grown = vpPlanResize(topo, ledger, vpLedgerLookup(ledger, "a"), req, n, &error);
    ck_assert_msg(grown, "%s", error ? error->message : "");
    ck_assert_msg(vpLedgerReplace(ledger, grown, &error), "%s", error ? error->message : "");
    ck_assert_msg(vpLedgerCheck(ledger, &error), "%s", error ? error->message : "");
    return vpLedgerLookup(ledger, "a");
}

/* Memory does not move with a new vCPU: it goes to the node the domain's memory is on (here
 * after `virsh numatune --live` moved it), not beside the vCPU on node 0. */
START_TEST(test_hotplug_follows_memory)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_NODES, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan = growOn(topo, ledger, (int[]){0, END}, 1, NULL, 3);

    for (unsigned v = 1; v < 3; v++)
        ck_assert_int_ge(plan->vcpu_pu[v], 8);
    ck_assert(!plan->degraded);
}
END_TEST

/* No room where the memory is and no nodeset of its own: placed elsewhere, said. */
START_TEST(test_hotplug_off_memory_said)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_NODES, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const vpPlan *plan;

    record(ledger, "b", VP_SMT_SPREAD, NULL, -1, (int[]){9, 10, 11, 12, 13, 14, 15, END}, NULL);
    plan = growOn(topo, ledger, (int[]){8, END}, 1, NULL, 2);
    ck_assert_int_lt(plan->vcpu_pu[1], 8);
    ck_assert_int_ge(plan->vcpu_pu[1], 0);
    ck_assert(plan->degraded);
    ck_assert_msg(strstr(plan->degraded_reason,
                         "vCPU 1 placed outside node(s) 1 where the domain's memory is"),
                  "%s", plan->degraded_reason);
}
END_TEST

/* A strict nodeset is never left: with node 1 full, the new vCPU stays unpinned. */
START_TEST(test_hotplug_strict_nodeset_kept)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_NODES, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = vpRequestNew("a", 2);
    const vpPlan *plan;

    req->mem_mode = VP_MEM_STRICT;
    req->nodeset = hwloc_bitmap_alloc();
    hwloc_bitmap_set(req->nodeset, 1);
    record(ledger, "b", VP_SMT_SPREAD, NULL, -1, (int[]){9, 10, 11, 12, 13, 14, 15, END}, NULL);
    plan = growOn(topo, ledger, (int[]){8, END}, 1, req, 2);
    ck_assert_int_eq(plan->vcpu_pu[1], -1);
    ck_assert_msg(g_str_has_prefix(plan->degraded_reason, "vCPU 1 hot-plugged but left unpinned: "),
                  "%s", plan->degraded_reason);
    ck_assert_msg(strstr(plan->degraded_reason, "nodes 1"), "%s", plan->degraded_reason);
}
END_TEST

/* tests/topologies/cxl-2n1m.xml: DRAM nodes 0 and 1, CXL node 2 (no CPUs) near node 1. */
static vpTopology *
loadCxl(void)
{
    g_autofree char *file =
        g_build_filename(g_getenv("VP_TOPDIR"), "tests", "topologies", "cxl-2n1m.xml", NULL);
    return vpTestTopology(file, NULL);
}

/* Domain "a", 2 vCPUs, its memory bound strictly to the CXL node. */
static vpRequest *
strictOnCxl(void)
{
    vpRequest *req = vpRequestNew("a", 2);

    req->mem_mode = VP_MEM_STRICT;
    req->nodeset = hwloc_bitmap_alloc();
    hwloc_bitmap_set(req->nodeset, 2);
    return req;
}

/* Bound to a CPU-less node (CXL node 2 near node 1): a new vCPU joins the CPUs near that
 * memory, as the first did, and nothing is said. */
START_TEST(test_hotplug_cpuless_nodeset)
{
    g_autoptr(vpTopology) topo = loadCxl();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = strictOnCxl();
    const vpPlan *plan;

    plan = growOn(topo, ledger, (int[]){4, END}, 2, req, 2);
    ck_assert_int_ge(plan->vcpu_pu[1], 4);
    ck_assert(!plan->degraded);
}
END_TEST

/* With node 1's CPUs taken, that nodeset is still never left: node 0 is not near node 2. */
START_TEST(test_hotplug_cpuless_nodeset_kept)
{
    g_autoptr(vpTopology) topo = loadCxl();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = strictOnCxl();
    const vpPlan *plan;

    record(ledger, "b", VP_SMT_SPREAD, NULL, -1, (int[]){5, 6, 7, END}, NULL);
    plan = growOn(topo, ledger, (int[]){4, END}, 2, req, 2);
    ck_assert_int_eq(plan->vcpu_pu[1], -1);
    ck_assert_msg(g_str_has_prefix(plan->degraded_reason, "vCPU 1 hot-plugged but left unpinned: "),
                  "%s", plan->degraded_reason);
}
END_TEST

/* Guest cells: each new vCPU joins its own cell's node (cell 0 on node 0, cell 1 on 1). */
START_TEST(test_hotplug_joins_its_cell)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_NODES, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = vpRequestNew("a", 4);
    const vpPlan *plan;

    req->ncells = 2;
    req->cells = g_new0(vpCell, 2);
    for (unsigned c = 0; c < 2; c++) {
        req->cells[c].id = c;
        req->cells[c].vcpus = hwloc_bitmap_alloc();
        hwloc_bitmap_set(req->cells[c].vcpus, c);
        hwloc_bitmap_set(req->cells[c].vcpus, c + 2);
        req->cells[c].memory = 512ULL << 20;
    }
    plan = growOn(topo, ledger, (int[]){0, 8, END}, 0, req, 4);
    ck_assert_int_lt(plan->vcpu_pu[2], 8);
    ck_assert_int_ge(plan->vcpu_pu[2], 0);
    ck_assert_int_ge(plan->vcpu_pu[3], 8);
}
END_TEST

START_TEST(test_refusals)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_L3, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) pinned = vpPlanNew("p", 1);
    g_autoptr(GError) zero = NULL;
    g_autoptr(GError) own = NULL;

    record(ledger, "a", VP_SMT_SPREAD, NULL, 0, (int[]){0, END}, NULL);
    ck_assert_ptr_null(vpPlanResize(topo, ledger, vpLedgerLookup(ledger, "a"), NULL, 0, &zero));
    ck_assert_str_eq(zero->message, "domain 'a': cannot resize to 0 vCPUs");
    pinned->how = VP_HOW_PINNED;
    ck_assert_ptr_null(vpPlanResize(topo, ledger, pinned, NULL, 2, &own));
    ck_assert(g_error_matches(own, VP_ERROR, VP_ERROR_INVALID));
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("grow");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_spread_free_core_beside_the_others);
    tcase_add_test(tc, test_spread_prefers_free_core_elsewhere_to_a_sibling);
    tcase_add_test(tc, test_spread_own_sibling_before_strangers);
    tcase_add_test(tc, test_group_mates_sibling);
    tcase_add_test(tc, test_isolate_holds_the_sibling);
    tcase_add_test(tc, test_isolate_relaxed_when_no_whole_core);
    tcase_add_test(tc, test_pack_fills_its_idle_sibling_first);
    tcase_add_test(tc, test_shrink_frees);
    tcase_add_test(tc, test_shrink_keeps_beside_count_true);
    tcase_add_test(tc, test_floating_emulator_follows);
    tcase_add_test(tc, test_no_room_left_unpinned);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_hotplug_follows_memory);
    tcase_add_test(tc, test_hotplug_off_memory_said);
    tcase_add_test(tc, test_hotplug_strict_nodeset_kept);
    tcase_add_test(tc, test_hotplug_cpuless_nodeset);
    tcase_add_test(tc, test_hotplug_cpuless_nodeset_kept);
    tcase_add_test(tc, test_hotplug_joins_its_cell);
    suite_add_tcase(s, tc);
    return s;
}
