/*
 * Topology model and hwloc loader: siblings come from the machine description, never
 * from CPU numbers; irregular machines (offline CPUs, hybrid cores, disallowed CPUs, SMT4
 * and SMT8, no SMT) load into the model the placer expects.
 */
#include "core/model/topology.h"
#include "host/hwtopo.h"
#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
sharedFile(const char *name)
{
    const char *dir = g_getenv("VP_SHARED_TOPOLOGIES");
    char *path;

    if (!dir)
        return NULL;
    path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS))
        return path;
    g_free(path);
    return NULL;
}

static int
siblingOf(const vpTopology *topo, unsigned os)
{
    const vpCore *core = vpTopologyCore(topo, vpTopologyPU(topo, vpTopologyPUByOS(topo, os))->core);

    for (int i = 0; i < core->npus; i++) {
        if (vpTopologyPU(topo, core->pus[i])->os != os)
            return vpTopologyPU(topo, core->pus[i])->os;
    }
    return -1;
}

START_TEST(test_builder_siblings_not_numbers)
{
    g_autoptr(vpTopology) topo = vpTopologyNew();
    g_autoptr(GError) error = NULL;

    /* Intel-style numbering: the sibling of CPU n is n + 4 */
    for (unsigned c = 0; c < 4; c++) {
        vpTopologyAddPU(topo, c, 0, 0, 0, -1, c, true);
        vpTopologyAddPU(topo, c + 4, 0, 0, 0, -1, c, true);
    }
    ck_assert(vpTopologyFinalize(topo, NULL, NULL, &error));
    ck_assert_int_eq(vpTopologyNCores(topo), 4);
    ck_assert_int_eq(vpTopologyMaxSMT(topo), 2);
    ck_assert_int_eq(siblingOf(topo, 1), 5);
    ck_assert_int_eq(siblingOf(topo, 6), 2);
    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_L3), 1);
}
END_TEST

START_TEST(test_builder_rejects_duplicates_and_bad_sets)
{
    g_autoptr(vpTopology) topo = vpTopologyNew();
    g_autoptr(vpTopology) topo2 = vpTopologyNew();
    g_autoptr(vpBitmap) hk = hwloc_bitmap_alloc();
    g_autoptr(GError) error = NULL;

    vpTopologyAddPU(topo, 3, 0, 0, 0, -1, 0, true);
    vpTopologyAddPU(topo, 3, 0, 0, 0, -1, 1, true);
    ck_assert(!vpTopologyFinalize(topo, NULL, NULL, &error));
    ck_assert_str_eq(error->message, "CPU 3 appears twice in the topology");
    g_clear_error(&error);

    vpTopologyAddPU(topo2, 0, 0, 0, 0, -1, 0, true);
    hwloc_bitmap_set(hk, 7);
    ck_assert(!vpTopologyFinalize(topo2, NULL, hk, &error));
    ck_assert_str_eq(error->message,
                     "housekeeping_cpus names CPUs 7 that this machine does not have");
}
END_TEST

START_TEST(test_usable_sets)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpBitmap) host = vpCpuListParse("host", "0-11", &error);
    g_autoptr(vpBitmap) hk = vpCpuListParse("hk", "0-1", &error);
    g_autoptr(vpTopology) topo =
        vpHwtopoLoad("synthetic:pack:1 l3:2 core:4 pu:2", host, hk, &error);
    g_autofree char *usable = NULL;

    ck_assert(topo);
    usable = vpCpuListFormat(vpTopologyUsableSet(topo));
    ck_assert_str_eq(usable, "2-11");
    ck_assert(!vpTopologyPU(topo, vpTopologyPUByOS(topo, 0))->usable);
    ck_assert(!vpTopologyPU(topo, vpTopologyPUByOS(topo, 12))->usable);
    ck_assert_int_eq(vpTopologyCoreUsable(topo, 0), 0);
    ck_assert_int_eq(vpTopologyGroup(topo, VP_LEVEL_L3, 1)->npus, 4);
}
END_TEST

START_TEST(test_cpulist_parse)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpBitmap) set = vpCpuListParse("host_cpus", "0-3,8,10-11", &error);
    g_autofree char *back = NULL;
    /* ",-19" and "0-1999999999" once reached hwloc: CPU 4294967277 and a 250 MB bitmap. */
    static const char *const bad[] = {"0-",   "a",        "-3",         "1,,",
                                      "3-1x", "99999999", "0-1999,-19", "0-1999999999",
                                      "3-1",  "1-2-3",    "+1",         " 1"};

    ck_assert(set);
    back = vpCpuListFormat(set);
    ck_assert_str_eq(back, "0-3,8,10-11");
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(vpBitmap) b = vpCpuListParse("host_cpus", bad[i], &error);

        ck_assert_msg(!b, "'%s' accepted", bad[i]);
        ck_assert(g_str_has_prefix(error->message, "host_cpus='"));
        g_clear_error(&error);
    }
}
END_TEST

START_TEST(test_synthetic_smt8_and_nosmt)
{
    g_autoptr(vpTopology) p8 = vpTestTopology("synthetic:pack:2 core:6 pu:8", NULL);
    g_autoptr(vpTopology) p1 = vpTestTopology("synthetic:pack:1 l3:2 core:4 pu:1", NULL);

    ck_assert_int_eq(vpTopologyMaxSMT(p8), 8);
    ck_assert_int_eq(vpTopologyNCores(p8), 12);
    ck_assert_int_eq(siblingOf(p8, 9), 8);
    ck_assert_int_eq(vpTopologyMaxSMT(p1), 1);
    ck_assert_int_eq(siblingOf(p1, 3), -1);
}
END_TEST

START_TEST(test_bad_sources)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *tmp = g_build_filename(g_get_tmp_dir(), "vp-bad-topo.xml", NULL);

    ck_assert(!vpHwtopoLoad("/nonexistent/topo.xml", NULL, NULL, &error));
    ck_assert(strstr(error->message, "/nonexistent/topo.xml"));
    g_clear_error(&error);
    ck_assert(!vpHwtopoLoad("synthetic:bogus:7", NULL, NULL, &error));
    ck_assert(strstr(error->message, "synthetic:bogus:7"));
    g_clear_error(&error);
    ck_assert(g_file_set_contents(tmp, "<topology><object", -1, NULL));
    ck_assert(!vpHwtopoLoad(tmp, NULL, NULL, &error));
    ck_assert(strstr(error->message, "cannot be loaded by hwloc"));
    g_unlink(tmp);
}
END_TEST

/* hwloc's synthetic build is quadratic in the objects under one parent: this one gave no
 * answer within 60 s, and the CPU cap was checked only after it. Both refused at once. */
START_TEST(test_huge_synthetic)
{
    static const struct {
        const char *source, *error;
    } cases[] = {
        {"synthetic:pack:1 numa:1 core:8192 pu:2",
         "'core:8192': more than 1024 objects under one parent"},
        {"synthetic:pack:1024 core:1024 pu:1024",
         "more than 16384 PUs, past the largest CPU number handled (16383)"},
        {"synthetic:4 1000 1000", "more than 16384 PUs"},
        {"synthetic:pack:64 core:128 pu:4", "more than 16384 PUs"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        gint64 start = g_get_monotonic_time();
        g_autoptr(vpTopology) topo = vpHwtopoLoad(cases[i].source, NULL, NULL, &error);
        ck_assert_msg(!topo, "%s loaded", cases[i].source);
        ck_assert_msg(strstr(error->message, cases[i].error) &&
                          strstr(error->message, cases[i].source),
                      "%s", error->message);
        ck_assert_int_lt(g_get_monotonic_time() - start, G_USEC_PER_SEC);
    }
}
END_TEST

/* Hostile exports: a PU numbered 4294967295 (max_os + 1 wrapped to 0 and the table was
 * written past its end) and an infinite complete_cpuset (walking it never ended). */
static const struct {
    const char *file;
    const char *error;
} hostile[] = {
    {"pu-os-max.xml", "PU os_index='4294967295' is not a number below 16384"},
    {"numa-os-max.xml", "NUMANode os_index='4294967295' is not a number below 16384"},
    {"local-memory-negative.xml", "local_memory='-1' is not a number of bytes below 2^56"},
    {"pu-outside-parent.xml", "the export lists 2 PUs, hwloc kept 1"},
    {"infinite-cpuset.xml", "complete_cpuset 0-1,64- reaches past the largest CPU number"},
};

START_TEST(test_hostile_sources)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path =
        g_build_filename(g_getenv("VP_TOPDIR"), "tests/unit/data/topology", hostile[_i].file, NULL);
    g_autoptr(vpTopology) topo = vpHwtopoLoad(path, NULL, NULL, &error);

    ck_assert_msg(!topo, "%s loaded", path);
    ck_assert_msg(strstr(error->message, hostile[_i].error), "%s", error->message);
}
END_TEST

START_TEST(test_host)
{
    g_autoptr(vpTopology) topo = vpTestTopology("host", NULL);

    ck_assert_int_ge(vpTopologyNPUs(topo), 1);
    ck_assert_int_ge(vpTopologyNCores(topo), 1);
}
END_TEST

/* Real machines from ../shared/topologies; each skips (with a message) when absent. */
typedef struct {
    const char *file;
    int pus, cores, smt, numa, l3, offline;
    unsigned cpu, sibling; /* a sibling pair as the machine numbers it */
} vpRealCase;

static const vpRealCase real[] = {
    {"32intel64-2p8co2t+8ve.xml", 32, 16, 2, 2, 2, 0, 3, 19},
    {"AMD-17h-Zen-2xEpyc-7451.xml", 96, 48, 2, 8, 16, 0, 5, 53},
    {"AMD-19h-Zen3-2xEpyc-7763.xml", 128, 128, 1, 2, 16, 0, 0, 0},
    {"256ppc-8n8s4t.xml", 256, 64, 4, 8, 64, 0, 5, 6},
    {"128arm-2pa2n8cluster4co.xml", 128, 128, 1, 4, 4, 0, 0, 0},
    {"offline-cpu0-node0.xml", 17, 17, 1, 2, 2, 7, 0, 0},
    {"20em64t-hybrid-1p6c2t+2ca4co1t.xml", 20, 14, 2, 1, 1, 0, 10, 11},
    {"synthetic-power-2p12c8t.xml", 192, 24, 8, 2, 2, 0, 9, 15},
};

START_TEST(test_real)
{
    const vpRealCase *c = &real[_i];
    g_autofree char *path = sharedFile(c->file);
    g_autoptr(vpTopology) topo = NULL;

    if (!path) {
        printf("SKIP: %s not found (../shared/topologies absent)\n", c->file);
        return;
    }
    topo = vpTestTopology(path, NULL);
    ck_assert_int_eq(vpTopologyNPUs(topo), c->pus);
    ck_assert_int_eq(vpTopologyNCores(topo), c->cores);
    ck_assert_int_eq(vpTopologyMaxSMT(topo), c->smt);
    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_NUMA), c->numa);
    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_L3), c->l3);
    ck_assert_int_eq(hwloc_bitmap_weight(vpTopologyOffline(topo)), c->offline);
    if (c->cpu != c->sibling) {
        const vpPU *a = vpTopologyPU(topo, vpTopologyPUByOS(topo, c->cpu));
        const vpPU *b = vpTopologyPU(topo, vpTopologyPUByOS(topo, c->sibling));

        ck_assert_int_eq(a->core, b->core);
    }
}
END_TEST

START_TEST(test_hybrid_core_sizes)
{
    g_autofree char *path = sharedFile("20em64t-hybrid-1p6c2t+2ca4co1t.xml");
    g_autoptr(vpTopology) topo = NULL;
    int two = 0, one = 0;

    if (!path) {
        printf("SKIP: hybrid topology not found\n");
        return;
    }
    topo = vpTestTopology(path, NULL);
    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        two += vpTopologyCore(topo, c)->npus == 2;
        one += vpTopologyCore(topo, c)->npus == 1;
    }
    ck_assert_int_eq(two, 6);
    ck_assert_int_eq(one, 8);
}
END_TEST

/* hwloc's synthetic memory attribute gives each node its memory; without it and without
 * local_memory a node's memory is unknown (0), and the operator's value fills it in. */
START_TEST(test_node_memory_synthetic)
{
    g_autoptr(vpTopology) topo =
        vpTestTopology("synthetic:pack:2 numa:2(memory=64GB) core:2 pu:2", NULL);
    g_autoptr(vpTopology) bare = vpTestTopology("synthetic:pack:1 numa:2 core:2 pu:1", NULL);

    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 4);
    for (int n = 0; n < 4; n++) {
        ck_assert_uint_eq(vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os, n);
        ck_assert_uint_eq(vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->memory, 64000000000ULL);
    }
    vpTopologySetUnknownMemory(bare, 1ULL << 30);
    for (int n = 0; n < 2; n++)
        ck_assert(vpTopologyGroup(bare, VP_LEVEL_NUMA, n)->memory > 0);
}
END_TEST

/* POWER numbers its nodes 0,1,4,5,8,...: the model carries the OS number, not hwloc's
 * logical index, and the memory and huge page pools of the export. */
START_TEST(test_node_os_numbers)
{
    g_autofree char *ppc = sharedFile("256ppc-8n8s4t.xml");
    g_autofree char *side = sharedFile("memorysidecaches.xml");
    g_autofree char *epyc = sharedFile("AMD-17h-Zen-2xEpyc-7451.xml");
    g_autoptr(vpTopology) topo = NULL;
    static const unsigned want[] = {0, 1, 4, 5, 8, 9, 12, 13};
    const vpGroup *g;

    if (!ppc || !side || !epyc) {
        printf("SKIP: ../shared/topologies absent; node numbers not checked\n");
        return;
    }
    topo = vpTestTopology(ppc, NULL);
    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 8);
    for (int n = 0; n < 8; n++) {
        g = vpTopologyGroup(topo, VP_LEVEL_NUMA, n);
        ck_assert_uint_eq(g->os, want[n]);
        ck_assert(g->memory > 0);
        ck_assert_int_eq(vpTopologyNodeByOS(topo, want[n]), n);
    }
    ck_assert_int_eq(vpTopologyNodeByOS(topo, 2), -1);
    g_clear_pointer(&topo, vpTopologyFree);

    topo = vpTestTopology(side, NULL);
    g = vpTopologyGroup(topo, VP_LEVEL_NUMA, vpTopologyNodeByOS(topo, 2));
    ck_assert_uint_eq(g->npools, 2);
    ck_assert_uint_eq(g->pools[0].size, 2ULL << 20);
    ck_assert_uint_eq(g->pools[1].size, 1ULL << 30);
    g_clear_pointer(&topo, vpTopologyFree);

    topo = vpTestTopology(epyc, NULL);
    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 8);
    for (int n = 0; n < 8; n++)
        ck_assert_uint_eq(vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->memory, 0);
}
END_TEST

/* A CXL expander (node 2, hand-written export): a node with memory and pools, no CPUs, near
 * the CPU node of the package hwloc attaches it to; nodesets naming it run on that node. */
START_TEST(test_cpuless_node)
{
    g_autofree char *file =
        g_build_filename(g_getenv("VP_TOPDIR"), "tests", "topologies", "cxl-2n1m.xml", NULL);
    g_autoptr(vpTopology) topo = vpTestTopology(file, NULL);
    g_autoptr(vpBitmap) named = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) cpus = NULL;
    g_autofree char *nodes = NULL;
    const vpGroup *g;

    ck_assert_int_eq(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 2);
    ck_assert_int_eq(vpTopologyNMemNodes(topo), 1);
    ck_assert_int_eq(vpTopologyNodeByOS(topo, 2), -1);
    ck_assert_ptr_null(vpTopologyMemNodeByOS(topo, 1));
    g = vpTopologyMemNodeByOS(topo, 2);
    ck_assert_ptr_eq(g, vpTopologyMemNode(topo, 0));
    ck_assert_int_eq(g->ncores, 0);
    ck_assert_int_eq(g->npus, 0);
    ck_assert_uint_eq(g->memory, 4ULL << 30);
    ck_assert_uint_eq(g->npools, 1);
    ck_assert_uint_eq(g->pools[0].size, 2ULL << 20);
    ck_assert_uint_eq(g->pools[0].count, 512);
    nodes = vpCpuListFormat(g->near);
    ck_assert_str_eq(nodes, "1");
    g_free(nodes);
    nodes = vpCpuListFormat(vpTopologyNodeSet(topo));
    ck_assert_str_eq(nodes, "0-2");
    g_free(nodes);
    ck_assert_ptr_null(vpTopologyGroup(topo, VP_LEVEL_NUMA, 0)->near);

    hwloc_bitmap_set(named, 2);
    cpus = vpTopologyCpuNodesOf(topo, named);
    nodes = vpCpuListFormat(cpus);
    ck_assert_str_eq(nodes, "1");
    g_free(nodes);
    g_clear_pointer(&cpus, hwloc_bitmap_free);
    hwloc_bitmap_set(named, 0);
    cpus = vpTopologyCpuNodesOf(topo, named);
    nodes = vpCpuListFormat(cpus);
    ck_assert_str_eq(nodes, "0-1");
}
END_TEST

/* Through the builder: a described node no PU names has no CPUs; without local CPUs it is
 * near every CPU node (no locality), with them near the nodes that hold them. */
START_TEST(test_cpuless_builder)
{
    g_autoptr(vpTopology) topo = vpTopologyNew();
    g_autoptr(vpBitmap) local = hwloc_bitmap_alloc();
    g_autofree char *far = NULL, *near = NULL;
    g_autoptr(GError) error = NULL;

    for (unsigned cpu = 0; cpu < 4; cpu++)
        vpTopologyAddPU(topo, cpu, 0, cpu / 2, -1, -1, cpu, true);
    vpTopologySetNode(topo, 0, 0, 1ULL << 30, NULL, 0);
    vpTopologySetNode(topo, 1, 1, 1ULL << 30, NULL, 0);
    vpTopologySetNode(topo, 7, 9, 2ULL << 30, NULL, 0);
    vpTopologySetNode(topo, 8, 5, 3ULL << 30, NULL, 0);
    hwloc_bitmap_set(local, 3);
    vpTopologySetNodeCpus(topo, 8, local);
    ck_assert_msg(vpTopologyFinalize(topo, NULL, NULL, &error), "%s", error ? error->message : "");
    ck_assert_int_eq(vpTopologyNMemNodes(topo), 2);
    ck_assert_uint_eq(vpTopologyMemNode(topo, 0)->os, 5);
    ck_assert_uint_eq(vpTopologyMemNode(topo, 1)->os, 9);
    near = vpCpuListFormat(vpTopologyMemNodeByOS(topo, 5)->near);
    far = vpCpuListFormat(vpTopologyMemNodeByOS(topo, 9)->near);
    ck_assert_str_eq(near, "1");
    ck_assert_str_eq(far, "0-1");
    ck_assert_uint_eq(vpTopologyMemNodeByOS(topo, 9)->memory, 2ULL << 30);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("model");

    tcase_add_test(tc, test_builder_siblings_not_numbers);
    tcase_add_test(tc, test_builder_rejects_duplicates_and_bad_sets);
    tcase_add_test(tc, test_usable_sets);
    tcase_add_test(tc, test_cpulist_parse);
    tcase_add_test(tc, test_synthetic_smt8_and_nosmt);
    tcase_add_test(tc, test_bad_sources);
    tcase_add_test(tc, test_huge_synthetic);
    tcase_add_test(tc, test_host);
    tcase_add_loop_test(tc, test_hostile_sources, 0, G_N_ELEMENTS(hostile));
    tcase_add_loop_test(tc, test_real, 0, G_N_ELEMENTS(real));
    tcase_add_test(tc, test_hybrid_core_sizes);
    tcase_add_test(tc, test_node_memory_synthetic);
    tcase_add_test(tc, test_node_os_numbers);
    tcase_add_test(tc, test_cpuless_node);
    tcase_add_test(tc, test_cpuless_builder);
    suite_add_tcase(s, tc);
    return s;
}
