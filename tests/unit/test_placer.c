/*
 * Placer behaviour an operator would notice: refusals that say what is missing, degraded
 * plans that say what was relaxed, trust groups, determinism, and long random churn on
 * several machines with every plan checked against the properties of tests/common/props.h.
 */
#include "core/place/placer.h"
#include "props.h"
#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vpRequest *
request(const char *name, unsigned vcpus, vpSmt smt, const char *group)
{
    vpRequest *req = vpRequestNew(name, vcpus);

    req->policy.smt = smt;
    g_free(req->policy.group);
    req->policy.group = g_strdup(group);
    return req;
}

static vpPlan *
placeAdd(const vpTopology *topo, vpLedger *ledger, vpRequest *req)
{
    g_autoptr(GError) error = NULL;
    vpPlan *plan = vpPlace(topo, ledger, req, &error);

    ck_assert_msg(plan, "%s: %s", req->name, error ? error->message : "");
    ck_assert_msg(vpCheckPlan(topo, ledger, req, plan, &error), "%s: %s", req->name,
                  error ? error->message : "");
    ck_assert_msg(vpLedgerAdd(ledger, plan, &error), "%s: %s", req->name,
                  error ? error->message : "");
    return plan;
}

START_TEST(test_isolate_refusal_names_figures)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:2 numa:1 l3:2 core:4 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = request("big", 10, VP_SMT_ISOLATE, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(vpPlan) plan = NULL;

    req->policy.locality = VP_LOCALITY_NUMA;
    plan = vpPlace(topo, ledger, req, &error);
    ck_assert(!plan);
    ck_assert(g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED));
    ck_assert_str_eq(error->message, "domain 'big': 10 vCPUs with smt=isolate need 10 free whole "
                                     "cores within one NUMA node; the best NUMA node has 8");
}
END_TEST

START_TEST(test_degrade_says_what)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:4 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = request("vm", 6, VP_SMT_ISOLATE, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(vpPlan) plan = NULL;

    req->policy.unmet = VP_UNMET_DEGRADE;
    plan = vpPlace(topo, ledger, req, &error);
    ck_assert_msg(plan, "%s", error ? error->message : "");
    ck_assert(plan->degraded);
    ck_assert(g_str_has_prefix(plan->degraded_reason, "smt=isolate relaxed to smt=spread: "));
    ck_assert(strstr(plan->degraded_reason, "the host has 4"));
}
END_TEST

START_TEST(test_trust_group_shares_first)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:2 core:2 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) b = request("b", 2, VP_SMT_SPREAD, "t2");
    g_autoptr(vpRequest) a = request("a", 2, VP_SMT_SPREAD, "t1");
    g_autoptr(vpRequest) c = request("c", 2, VP_SMT_SPREAD, "t1");
    g_autoptr(vpPlan) pa = NULL, pb = NULL, pc = NULL;

    a->policy.coresched = VP_CORESCHED_GROUP;
    c->policy.coresched = VP_CORESCHED_GROUP;
    pb = placeAdd(topo, ledger, b); /* cores 0,1: first in topology order */
    pa = placeAdd(topo, ledger, a); /* cores 2,3: every core now holds someone */
    pc = placeAdd(topo, ledger, c); /* must take a's siblings (one cookie), not b's */
    for (unsigned i = 0; i < pc->nvcpus; i++) {
        int core = vpTopologyPU(topo, vpTopologyPUByOS(topo, pc->vcpu_pu[i]))->core;
        const vpCore *k = vpTopologyCore(topo, core);
        bool next_to_a = false;

        for (int p = 0; p < k->npus; p++)
            next_to_a |= g_strcmp0(vpLedgerOwner(ledger, k->pus[p]).domain, "a") == 0;
        ck_assert_msg(next_to_a, "c's vCPU %u on CPU %d is not beside its group", i,
                      pc->vcpu_pu[i]);
    }
}
END_TEST

START_TEST(test_deterministic)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:2 numa:1 l3:2 core:4 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) pre = request("pre", 3, VP_SMT_PACK, NULL);
    g_autoptr(vpRequest) req = request("vm", 5, VP_SMT_SPREAD, NULL);
    g_autoptr(vpPlan) p0 = placeAdd(topo, ledger, pre);
    g_autoptr(vpPlan) p1 = vpPlace(topo, ledger, req, NULL);
    g_autoptr(vpPlan) p2 = vpPlace(topo, ledger, req, NULL);
    g_autoptr(JsonNode) j1 = vpPlanToJson(p1, topo);
    g_autoptr(JsonNode) j2 = vpPlanToJson(p2, topo);

    ck_assert(p0);
    ck_assert(json_node_equal(j1, j2));
}
END_TEST

START_TEST(test_pinned_respected)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:4 pu:2", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) req = request("pinned", 2, VP_SMT_ISOLATE, NULL);
    g_autoptr(vpPlan) plan = NULL;

    req->pins[0] = hwloc_bitmap_alloc();
    req->pins[1] = hwloc_bitmap_alloc();
    hwloc_bitmap_set(req->pins[0], 7);
    hwloc_bitmap_set(req->pins[1], 3);
    req->has_pins = true;
    plan = vpPlace(topo, ledger, req, NULL);
    ck_assert(plan);
    ck_assert_int_eq(plan->how, VP_HOW_PINNED);
    ck_assert_int_eq(plan->vcpu_pu[0], 7);
    ck_assert_int_eq(plan->vcpu_pu[1], 3);
}
END_TEST

/* Two 1-vCPU share guests on a host that hands out one CPU: the second time-shares it only
 * when both said unmet=degrade, says so, and the ledger keeps both holders through
 * removals. */
START_TEST(test_share_overcommit)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 core:2 pu:1", "0");
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) a = request("a", 1, VP_SMT_SHARE, NULL);
    g_autoptr(vpRequest) b = request("b", 1, VP_SMT_SHARE, NULL);
    g_autoptr(vpRequest) c = request("c", 1, VP_SMT_SPREAD, NULL);
    g_autoptr(vpPlan) pa = placeAdd(topo, ledger, a);
    g_autoptr(vpPlan) pb = NULL;
    g_autoptr(vpPlan) pc = NULL;

    ck_assert(!vpPlace(topo, ledger, b, &error));
    ck_assert(g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED));
    g_clear_error(&error);

    /* a said unmet=refuse: it never gets a time-sharing neighbour */
    b->policy.unmet = VP_UNMET_DEGRADE;
    ck_assert(!vpPlace(topo, ledger, b, &error));
    g_clear_error(&error);

    ck_assert(vpLedgerRemove(ledger, "a"));
    a->policy.unmet = VP_UNMET_DEGRADE;
    g_clear_pointer(&pa, vpPlanFree);
    pa = placeAdd(topo, ledger, a);
    pb = placeAdd(topo, ledger, b);
    ck_assert(pb->overcommit && pb->degraded);
    ck_assert_int_eq(pb->vcpu_pu[0], 0);
    ck_assert_str_eq(pb->degraded_reason, "smt=share overcommitted: CPUs 0 are time-shared with "
                                          "other smt=share domains (no free PU left)");
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 0), 2);
    ck_assert(vpLedgerCheck(ledger, NULL));
    {
        /* a ledger file lists plans by name, not placement order: reloading with the
         * overcommitted plan first must work too */
        g_autoptr(JsonNode) saved = vpLedgerToJson(ledger);
        JsonArray *doms = json_object_get_array_member(json_node_get_object(saved), "domains");
        JsonNode *first = json_node_copy(json_array_get_element(doms, 0));
        g_autoptr(vpLedger) back = NULL;

        json_array_remove_element(doms, 0);
        json_array_add_element(doms, first);
        ck_assert_str_eq(
            json_object_get_string_member(json_array_get_object_element(doms, 0), "domain"), "b");
        back = vpLedgerFromJson(topo, saved, &error);

        ck_assert_msg(back, "%s", error ? error->message : "");
        ck_assert_uint_eq(vpLedgerNOwners(back, 0), 2);
    }

    /* spread never time-shares, even when degraded */
    c->policy.unmet = VP_UNMET_DEGRADE;
    ck_assert(!(pc = vpPlace(topo, ledger, c, &error)));
    g_clear_error(&error);

    ck_assert(vpLedgerRemove(ledger, "a"));
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 0), 1);
    ck_assert_str_eq(vpLedgerOwner(ledger, 0).domain, "b");
    ck_assert(vpLedgerCheck(ledger, NULL));
}
END_TEST

/* Random churn: starts and stops of mixed sizes, policies and groups; every plan passes the
 * properties, and after everything stops the ledger is empty again. */
static void
churn(const char *src, unsigned seed, int events)
{
    g_autoptr(vpTopology) topo = vpTestTopology(src, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
    g_autoptr(GPtrArray) live = g_ptr_array_new_with_free_func(g_free);
    static const unsigned sizes[] = {1, 1, 1, 2, 2, 4, 4, 8, 16};
    static const char *const groups[] = {NULL, NULL, "g1", "g2"};
    unsigned placed = 0, refused = 0;

    for (int e = 0; e < events; e++) {
        if (live->len && (g_rand_int_range(rand, 0, 100) < 40 || live->len > 40)) {
            guint k = g_rand_int_range(rand, 0, live->len);

            ck_assert(vpLedgerRemove(ledger, g_ptr_array_index(live, k)));
            g_ptr_array_remove_index_fast(live, k);
        } else {
            g_autofree char *name = g_strdup_printf("vm%d", e);
            g_autoptr(vpRequest) req =
                request(name, sizes[g_rand_int_range(rand, 0, G_N_ELEMENTS(sizes))],
                        g_rand_int_range(rand, 0, VP_SMT_LAST),
                        groups[g_rand_int_range(rand, 0, G_N_ELEMENTS(groups))]);
            g_autoptr(GError) error = NULL;
            g_autoptr(vpPlan) plan = NULL;

            if (req->policy.smt == VP_SMT_PACK && vpTopologyMaxSMT(topo) > 1 && req->vcpus % 2 == 0)
                req->threads = 2;
            req->policy.unmet = g_rand_boolean(rand) ? VP_UNMET_DEGRADE : VP_UNMET_REFUSE;
            plan = vpPlace(topo, ledger, req, &error);
            if (!plan) {
                ck_assert_msg(g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED), "%s",
                              error->message);
                refused++;
                continue;
            }
            ck_assert_msg(vpCheckPlan(topo, ledger, req, plan, &error), "%s event %d: %s", src, e,
                          error->message);
            ck_assert_msg(vpLedgerAdd(ledger, plan, &error), "%s", error ? error->message : "");
            g_ptr_array_add(live, g_strdup(name));
            placed++;
        }
        ck_assert(vpLedgerCheck(ledger, NULL));
    }
    for (guint i = 0; i < live->len; i++)
        ck_assert(vpLedgerRemove(ledger, g_ptr_array_index(live, i)));
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++)
        ck_assert_msg(vpLedgerPUFree(ledger, pu), "PU %d leaked", pu);
    ck_assert_int_gt(placed, 0);
    printf("churn %s: %u placed, %u refused\n", src, placed, refused);
}

START_TEST(test_churn_synthetic)
{
    churn("synthetic:pack:2 numa:2 l3:2 core:6 pu:2", 1, 2000);
    churn("synthetic:pack:2 core:6 pu:8", 2, 1000);
    churn("synthetic:pack:1 l3:4 core:8 pu:1", 3, 1000);
}
END_TEST

START_TEST(test_churn_real)
{
    static const char *const files[] = {"AMD-17h-Zen-2xEpyc-7451.xml",
                                        "20em64t-hybrid-1p6c2t+2ca4co1t.xml", "256ppc-8n8s4t.xml",
                                        "offline-cpu0-node0.xml"};
    const char *dir = g_getenv("VP_SHARED_TOPOLOGIES");

    for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = dir ? g_build_filename(dir, files[i], NULL) : NULL;

        if (!path || !g_file_test(path, G_FILE_TEST_EXISTS)) {
            printf("SKIP: %s not found (../shared/topologies absent)\n", files[i]);
            continue;
        }
        churn(path, 10 + i, 1500);
    }
}
END_TEST

/* Memory bound to a CPU-less node (hand-written CXL export: node 2, near node 1) is held on
 * it in the ledger, runs on node 1's CPUs, and is refused once node 2 is full whatever
 * node 1 holds. */
static vpRequest *
boundRequest(const char *name, unsigned vcpus, guint64 memory, unsigned node)
{
    vpRequest *req = request(name, vcpus, VP_SMT_SPREAD, NULL);

    req->memory = memory;
    req->mem_mode = VP_MEM_STRICT;
    req->nodeset = hwloc_bitmap_alloc();
    hwloc_bitmap_set(req->nodeset, node);
    return req;
}

START_TEST(test_cpuless_node_memory)
{
    g_autofree char *file =
        g_build_filename(g_getenv("VP_TOPDIR"), "tests", "topologies", "cxl-2n1m.xml", NULL);
    g_autoptr(vpTopology) topo = vpTestTopology(file, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpRequest) a = boundRequest("a", 2, 3ULL << 30, 2);
    g_autoptr(vpRequest) b = boundRequest("b", 1, 1ULL << 30, 2);
    g_autoptr(vpRequest) c = boundRequest("c", 1, 1ULL << 30, 1);
    g_autoptr(vpPlan) pa = placeAdd(topo, ledger, a);
    g_autoptr(vpPlan) pc = NULL;
    g_autoptr(vpPlan) pb = NULL;
    g_autoptr(GError) error = NULL;

    for (unsigned i = 0; i < pa->nvcpus; i++)
        ck_assert_int_ge(pa->vcpu_pu[i], 4);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 0), 3ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 0), 0);
    ck_assert_ptr_null(vpPlace(topo, ledger, b, &error));
    ck_assert_msg(strstr(error->message, "on node 2; node 2 has 512 MiB free"), "%s",
                  error->message);
    pc = placeAdd(topo, ledger, c);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 0), 1ULL << 30);
    ck_assert(vpLedgerRemove(ledger, "a"));
    pb = placeAdd(topo, ledger, b);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 0), 1ULL << 30);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("placer");
    TCase *tc = tcase_create("placer");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_isolate_refusal_names_figures);
    tcase_add_test(tc, test_degrade_says_what);
    tcase_add_test(tc, test_trust_group_shares_first);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_pinned_respected);
    tcase_add_test(tc, test_share_overcommit);
    tcase_add_test(tc, test_cpuless_node_memory);
    tcase_add_test(tc, test_churn_synthetic);
    tcase_add_test(tc, test_churn_real);
    suite_add_tcase(s, tc);
    return s;
}
