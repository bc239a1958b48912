/*
 * Plans: the JSON form golden files and the ledger rely on (key order, derived topology
 * coordinates, round trip), the reader's refusal of anything it would not have written,
 * and the human-readable form.
 */
#include "core/model/plan.h"
#include "checkmain.h"

#include <check.h>
#include <string.h>

/* 2 packages (= NUMA nodes) x 2 L3 x 2 cores x 2 threads; Intel numbering: the sibling of
 * CPU n is n+8. CPU 16 exists but is offline. */
static vpTopology *
testTopology(void)
{
    vpTopology *topo = vpTopologyNew();
    g_autoptr(GError) err = NULL;

    for (int p = 0; p < 2; p++)
        for (int l = 0; l < 2; l++)
            for (int c = 0; c < 2; c++)
                for (int t = 0; t < 2; t++) {
                    int core = p * 4 + l * 2 + c;

                    vpTopologyAddPU(topo, core + 8 * t, p, p, p * 2 + l, -1, core, true);
                }
    vpTopologyAddOffline(topo, 16);
    ck_assert_msg(vpTopologyFinalize(topo, NULL, NULL, &err), "%s", err ? err->message : "");
    return topo;
}

static vpPlan *
testPlan(void)
{
    vpPlan *plan = vpPlanNew("web", 3);

    plan->policy.group = g_strdup("blue");
    plan->policy.smt = VP_SMT_PACK;
    plan->policy.emulator = VP_EMULATOR_DEDICATED;
    plan->vcpu_pu[0] = 1;
    plan->vcpu_pu[1] = 9;
    plan->vcpu_pu[2] = 6;
    hwloc_bitmap_set(plan->reserved, 14);
    hwloc_bitmap_set(plan->reserved, 2);
    hwloc_bitmap_set(plan->emulator, 2);
    plan->level = VP_LEVEL_L3;
    plan->level_index = 0;
    plan->guest_sockets = 1;
    plan->guest_cores = 1;
    plan->guest_threads = 3;
    plan->topology_mismatch = true;
    plan->degraded = true;
    plan->degraded_reason = g_strdup("locality=l3 relaxed to locality=auto");
    return plan;
}

static const char expected_json[] =
    "{\"domain\":\"web\",\"group\":\"blue\","
    "\"policy\":{\"smt\":\"pack\",\"coresched\":\"vm\",\"locality\":\"auto\","
    "\"emulator\":\"dedicated\",\"rebalance\":\"auto\",\"unmet\":\"refuse\"},"
    "\"how\":\"placed\","
    "\"vcpus\":["
    "{\"vcpu\":0,\"cpu\":1,\"core\":1,\"l3\":0,\"numa\":0,\"package\":0},"
    "{\"vcpu\":1,\"cpu\":9,\"core\":1,\"l3\":0,\"numa\":0,\"package\":0},"
    "{\"vcpu\":2,\"cpu\":6,\"core\":6,\"l3\":3,\"numa\":1,\"package\":1}],"
    "\"emulator\":\"2\",\"reserved\":\"2,14\",\"level\":\"l3\",\"level_index\":0,"
    "\"guest_topology\":{\"sockets\":1,\"cores\":1,\"threads\":3},"
    "\"topology_mismatch\":true,\"degraded\":true,"
    "\"degraded_reason\":\"locality=l3 relaxed to locality=auto\"}";

static char *
toText(const vpPlan *plan, const vpTopology *topo)
{
    g_autoptr(JsonNode) node = vpPlanToJson(plan, topo);

    return json_to_string(node, FALSE);
}

static vpPlan *
fromText(const char *text, GError **error)
{
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    ck_assert_msg(node, "test JSON does not parse: %s", text);
    return vpPlanFromJson(node, error);
}

/* Memory in pages of several sizes (guest cells with their own <page nodeset>) survives a
 * save and load, each holding with its size; one node named twice for one size is refused. */
START_TEST(test_memory_page_sizes)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpPlan) twice = NULL;
    g_autoptr(vpPlan) one = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    g_auto(GStrv) parts = NULL;
    const char *entry;

    plan->page_size = 2ULL << 20;
    vpPlanAddMemory(plan, 0, 1ULL << 30);
    vpPlanAddPages(plan, 0, 1ULL << 30, 4ULL << 30);
    vpPlanAddPages(plan, 1, 0, 512ULL << 20);
    text = toText(plan, topo);
    back = fromText(text, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_uint_eq(back->nmem, 3);
    ck_assert_uint_eq(vpPlanMemoryOnPages(back, 0, 2ULL << 20), 1ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOnPages(back, 0, 1ULL << 30), 4ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOnPages(back, 1, 0), 512ULL << 20);
    ck_assert_uint_eq(vpPlanMemoryOn(back, 0), 5ULL << 30);
    one = testPlan();
    vpPlanAddPages(one, 0, 2ULL << 20, 1);
    g_free(text);
    text = toText(one, topo);
    entry = "{\"numa\":0,\"bytes\":1,\"page_size\":2097152}";
    ck_assert_msg(strstr(text, entry), "%s", text);
    parts = g_strsplit(text, entry, 2);
    g_free(text);
    text = g_strconcat(parts[0], entry, ",", entry, parts[1], NULL);
    twice = fromText(text, &err);
    ck_assert_ptr_null(twice);
    ck_assert_msg(strstr(err->message, "memory names node 0 twice for pages of 2097152 bytes"),
                  "%s", err->message);
}
END_TEST

START_TEST(test_new)
{
    g_autoptr(vpPlan) plan = vpPlanNew("a", 4);

    ck_assert_str_eq(plan->domain, "a");
    ck_assert_uint_eq(plan->nvcpus, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(plan->vcpu_pu[i], -1);
    ck_assert(hwloc_bitmap_iszero(plan->emulator));
    ck_assert(hwloc_bitmap_iszero(plan->reserved));
    ck_assert_int_eq(plan->how, VP_HOW_PLACED);
    ck_assert_int_eq(plan->level, VP_LEVEL_HOST);
    ck_assert_int_eq(plan->level_index, -1);
    ck_assert(!plan->degraded);
    ck_assert_str_eq(vpHowName(VP_HOW_PLACED), "placed");
    ck_assert_str_eq(vpHowName(VP_HOW_PINNED), "pinned");
    ck_assert_str_eq(vpHowName(VP_HOW_ADOPTED), "adopted");
}
END_TEST

START_TEST(test_held)
{
    g_autoptr(vpPlan) plan = testPlan();
    g_autoptr(vpBitmap) held = NULL;
    g_autofree char *text = NULL;

    plan->vcpu_pu[2] = -1;
    held = vpPlanHeld(plan);
    text = vpCpuListFormat(held);
    /* vCPU PUs 1 and 9, reserved 14 and the dedicated emulator PU 2; not the unpinned
     * vCPU. */
    ck_assert_str_eq(text, "1-2,9,14");
}
END_TEST

START_TEST(test_json_exact)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autofree char *text = toText(plan, topo);

    ck_assert_str_eq(text, expected_json);
}
END_TEST

START_TEST(test_json_minimal)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = vpPlanNew("solo", 1);
    g_autofree char *text = NULL;

    plan->how = VP_HOW_PINNED;
    text = toText(plan, topo);
    /* No guest_topology outside pack; an unpinned vCPU has no coordinates: null, as "none"
     * is in every document (vcpuplace-json(7)). */
    ck_assert_ptr_null(strstr(text, "guest_topology"));
    ck_assert_ptr_nonnull(
        strstr(text, "\"vcpus\":[{\"vcpu\":0,\"cpu\":null,\"core\":null,\"l3\":null,\"numa\":null,"
                     "\"package\":null}]"));
    ck_assert_ptr_nonnull(strstr(text, "\"group\":null"));
    ck_assert_ptr_nonnull(strstr(text, "\"emulator\":\"\",\"reserved\":\"\""));
    ck_assert_ptr_nonnull(strstr(text, "\"how\":\"pinned\""));
    ck_assert_ptr_nonnull(strstr(text, "\"degraded_reason\":null"));
}
END_TEST

/* Ledgers written before format 1 said "pu" for a CPU, "node" for a guest cell's node and
 * -1 for none: they read back as the same plan, written in today's spelling. */
START_TEST(test_legacy_spelling)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(GString) old = g_string_new(expected_json);
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpPlan) none = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *again = NULL;
    g_autofree char *text = NULL;

    g_string_replace(old, "\"cpu\":", "\"pu\":", 0);
    back = fromText(old->str, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    again = toText(back, topo);
    ck_assert_str_eq(again, expected_json);

    none = fromText("{\"domain\":\"solo\",\"group\":null,\"policy\":{\"smt\":\"spread\","
                    "\"coresched\":\"vm\",\"locality\":\"auto\",\"emulator\":\"housekeeping\","
                    "\"rebalance\":\"auto\",\"unmet\":\"refuse\"},\"how\":\"pinned\","
                    "\"vcpus\":[{\"vcpu\":0,\"pu\":-1,\"core\":-1,\"l3\":-1,\"numa\":-1,"
                    "\"package\":-1}],\"emulator\":\"\",\"reserved\":\"\",\"level\":\"host\","
                    "\"level_index\":-1,\"topology_mismatch\":false,\"degraded\":false,"
                    "\"degraded_reason\":null}",
                    &err);
    ck_assert_msg(none, "%s", err ? err->message : "");
    ck_assert_int_eq(none->vcpu_pu[0], -1);
    ck_assert_int_eq(none->level_index, -1);
    text = toText(none, topo);
    ck_assert_msg(strstr(text, "{\"vcpu\":0,\"cpu\":null,\"core\":null,") &&
                      strstr(text, "\"level_index\":null"),
                  "%s", text);
}
END_TEST

START_TEST(test_round_trip)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpPlan) copy = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *again = NULL;
    g_autofree char *copied = NULL;

    back = fromText(expected_json, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_str_eq(back->domain, "web");
    ck_assert_str_eq(back->policy.group, "blue");
    ck_assert_str_eq(back->policy.group, "blue");
    ck_assert_int_eq(back->policy.smt, VP_SMT_PACK);
    ck_assert_int_eq(back->policy.emulator, VP_EMULATOR_DEDICATED);
    ck_assert_uint_eq(back->nvcpus, 3);
    ck_assert_int_eq(back->vcpu_pu[1], 9);
    ck_assert(hwloc_bitmap_isset(back->reserved, 14));
    ck_assert_int_eq(back->level, VP_LEVEL_L3);
    ck_assert_uint_eq(back->guest_threads, 3);
    ck_assert(back->topology_mismatch);
    again = toText(back, topo);
    ck_assert_str_eq(again, expected_json);

    copy = vpPlanCopy(plan);
    vpPlanFree(g_steal_pointer(&plan));
    copied = toText(copy, topo);
    ck_assert_str_eq(copied, expected_json);
}
END_TEST

/* A pack plan placed beside other cookies says how many vCPUs are, in JSON (read back
 * as written) and in its text; plans without it write nothing. */
START_TEST(test_beside_others)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpPlan) copy = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    g_autofree char *again = NULL;
    g_autofree char *shown = NULL;

    plan->beside_others = 2;
    text = toText(plan, topo);
    ck_assert_ptr_nonnull(
        strstr(text, "\"topology_mismatch\":true,\"beside_others\":2,\"degraded\""));
    back = fromText(text, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_uint_eq(back->beside_others, 2);
    again = toText(back, topo);
    ck_assert_str_eq(again, text);
    copy = vpPlanCopy(plan);
    ck_assert_uint_eq(copy->beside_others, 2);
    shown = vpPlanFormat(plan, topo);
    ck_assert_ptr_nonnull(strstr(shown, "  beside other cookies: 2 vCPUs share a core with "
                                        "another cookie (no whole core was left)\n"));
}
END_TEST

/* Each case edits the valid JSON and expects a message naming the field and value. */
static const struct {
    const char *from;
    const char *to;
    const char *message;
} bad[] = {
    {"\"smt\":\"pack\"", "\"smt\":\"foo\"",
     "plan of domain 'web': policy.smt='foo' is not one of isolate, pack, spread, share"},
    {"\"unmet\":\"refuse\"", "\"unmet\":\"refuse\",\"colour\":\"red\"",
     "plan of domain 'web': unknown key 'colour' in policy"},
    {"\"how\":\"placed\",", "\"how\":\"placed\",\"extra\":1,",
     "plan of domain 'web': unknown key 'extra' in plan"},
    {"\"how\":\"placed\",", "", "plan of domain 'web': how is missing"},
    {"\"how\":\"placed\"", "\"how\":\"guessed\"",
     "plan of domain 'web': how='guessed' is not one of placed, pinned, adopted"},
    {"{\"vcpu\":1,", "{\"vcpu\":5,", "plan of domain 'web': vcpus[1].vcpu=5, expected 1"},
    {"\"cpu\":9", "\"cpu\":-2",
     "plan of domain 'web': vcpus[1].cpu=-2, expected an integer in -1..65535"},
    {"\"cpu\":9", "\"cpu\":\"9\"",
     "plan of domain 'web': vcpus[1].cpu=\"9\", expected an integer in -1..65535"},
    {"\"cpu\":9", "\"cpu\":9.5",
     "plan of domain 'web': vcpus[1].cpu=9.5, expected an integer in -1..65535"},
    {"\"cpu\":9", "\"cpu\":70000",
     "plan of domain 'web': vcpus[1].cpu=70000, expected an integer in -1..65535"},
    {"\"cpu\":9", "\"cpu\":9,\"pu\":9", "plan of domain 'web': unknown key 'pu' in vcpus[1]"},
    {"\"domain\":\"web\",", "\"domain\":\"web\",\"format\":2,",
     "plan of domain 'web': format=2, expected 1"},
    {"\"core\":6,", "", "plan of domain 'web': vcpus[2].core is missing"},
    {"\"group\":\"blue\"", "\"group\":\"a b\"",
     "plan of domain 'web': group='a b' is not 1 to 64 characters of A-Z a-z 0-9 . _ -"},
    {"\"group\":\"blue\"", "\"group\":7", "plan of domain 'web': group=7 is not a string or null"},
    {"\"reserved\":\"2,14\"", "\"reserved\":\"2-\"",
     "plan of domain 'web': reserved='2-' is not a CPU list (e.g. 0-3,8)"},
    {"\"emulator\":\"2\"", "\"emulator\":\"70000\"",
     "plan of domain 'web': emulator='70000' is not a CPU list (e.g. 0-3,8)"},
    {"\"level\":\"l3\"", "\"level\":\"rack\"",
     "plan of domain 'web': level='rack' is not one of core, cluster, l3, numa, package, host"},
    {"\"level_index\":0", "\"level_index\":-7",
     "plan of domain 'web': level_index=-7, expected an integer in -1..2147483647"},
    {"\"threads\":3", "\"threads\":0",
     "plan of domain 'web': guest_topology.threads=0, expected an integer in 1..4096"},
    {"\"topology_mismatch\":true", "\"topology_mismatch\":\"yes\"",
     "plan of domain 'web': topology_mismatch=\"yes\" is not true or false"},
    {"\"degraded_reason\":\"locality=l3 relaxed to locality=auto\"", "\"degraded_reason\":null",
     "plan of domain 'web': degraded is true but degraded_reason is null"},
    {"\"topology_mismatch\":true", "\"topology_mismatch\":true,\"beside_others\":4",
     "plan of domain 'web': beside_others=4, expected an integer in 1..3"},
    {"\"topology_mismatch\":true", "\"topology_mismatch\":true,\"beside_others\":0",
     "plan of domain 'web': beside_others=0, expected an integer in 1..3"},
    {"\"smt\":\"pack\"", "\"smt\":\"spread\"",
     "plan of domain 'web': beside_others=2 but smt='spread' (only pack counts it)"},
    {"\"domain\":\"web\"", "\"domain\":\"\"", "domain is empty"},
    {"\"domain\":\"web\",", "", "domain is missing"},
};

START_TEST(test_bad_field)
{
    /* the cases about beside_others start from a plan that has it */
    g_auto(GStrv) with = g_strsplit(expected_json, "\"topology_mismatch\":true", 2);
    g_autofree char *base =
        strstr(bad[_i].message, "pack counts it")
            ? g_strjoin("\"topology_mismatch\":true,\"beside_others\":2", with[0], with[1], NULL)
            : g_strdup(expected_json);
    g_auto(GStrv) parts = g_strsplit(base, bad[_i].from, 2);
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpPlan) plan = NULL;

    ck_assert_msg(parts[1], "case %d: '%s' not in the JSON", _i, bad[_i].from);
    text = g_strjoin(bad[_i].to, parts[0], parts[1], NULL);
    plan = fromText(text, &err);
    ck_assert_ptr_null(plan);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, bad[_i].message);
}
END_TEST

START_TEST(test_bad_shape)
{
    static const char *const texts[] = {
        "[]",
        "\"plan\"",
        "{\"domain\":\"x\",\"group\":null,\"policy\":{},\"vcpus\":[]}",
    };
    static const char *const messages[] = {
        "plan is not a JSON object",
        "plan is not a JSON object",
        "plan of domain 'x': policy.smt is missing",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpPlan) plan = fromText(texts[i], &err);

        ck_assert_ptr_null(plan);
        ck_assert_str_eq(err->message, messages[i]);
    }
}
END_TEST

START_TEST(test_empty_vcpus)
{
    g_auto(GStrv) parts = g_strsplit(expected_json, "\"vcpus\":[", 2);
    g_auto(GStrv) rest = g_strsplit(parts[1], "],\"emulator\"", 2);
    g_autofree char *text = g_strconcat(parts[0], "\"vcpus\":[],\"emulator\"", rest[1], NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpPlan) plan = fromText(text, &err);

    ck_assert_ptr_null(plan);
    ck_assert_str_eq(err->message, "plan of domain 'web': vcpus has 0 entries, expected 1..4096");
}
END_TEST

START_TEST(test_format)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autofree char *text = NULL;

    plan->vcpu_pu[2] = -1;
    text = vpPlanFormat(plan, topo);
    ck_assert_ptr_nonnull(strstr(text, "domain web (group blue): placed, degraded\n"));
    ck_assert_ptr_nonnull(strstr(text, "smt=pack coresched=vm locality=auto emulator=dedicated"));
    ck_assert_ptr_nonnull(strstr(text, "  within: l3 0\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "vcpu 1   -> cpu 9    core 1    l3 0   numa 0   package 0\n"));
    ck_assert_ptr_nonnull(strstr(text, "vcpu 2   -> not pinned\n"));
    ck_assert_ptr_nonnull(strstr(text, "  emulator: 2\n"));
    ck_assert_ptr_nonnull(strstr(text, "  reserved idle: 2,14\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "guest topology: sockets=1 cores=1 threads=3 (the declared topology"));
    ck_assert_ptr_nonnull(strstr(text, "  degraded: locality=l3 relaxed to locality=auto\n"));
}
END_TEST

/* Moves: written only when there are any, read back exactly, refused when malformed, shown
 * in the text form; memory nodes are the nodes of the vCPUs' CPUs. */
START_TEST(test_moves)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = testPlan();
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpPlan) copy = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpBitmap) nodes = vpPlanMemoryNodes(plan, topo);
    g_autofree char *text = NULL;
    g_autofree char *again = NULL;
    g_autofree char *shown = NULL;
    static const char moves[] = ",\"moves\":[{\"domain\":\"db\",\"vcpu\":1,\"from\":3,"
                                "\"to\":11,\"reason\":\"makes room\"}]}";

    ck_assert_int_eq(hwloc_bitmap_weight(nodes), 2);
    ck_assert(hwloc_bitmap_isset(nodes, 0) && hwloc_bitmap_isset(nodes, 1));
    vpPlanAddMove(plan, "db", 1, 3, 11, "makes room");
    text = toText(plan, topo);
    ck_assert_str_eq(text + strlen(expected_json) - 1, moves);
    back = fromText(text, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_uint_eq(back->nmoves, 1);
    ck_assert_str_eq(back->moves[0].domain, "db");
    ck_assert_uint_eq(back->moves[0].to, 11);
    again = toText(back, topo);
    ck_assert_str_eq(again, text);
    copy = vpPlanCopy(back);
    ck_assert_str_eq(copy->moves[0].reason, "makes room");
    shown = vpPlanFormat(copy, topo);
    ck_assert_ptr_nonnull(strstr(shown, "  moves first:\n    domain db vcpu 1: cpu 3 -> cpu 11 "
                                        "(makes room)\n"));

    static const struct {
        const char *from, *to, *message;
    } cases[] = {
        {"\"to\":11", "\"to\":3",
         "plan of domain 'web': moves[0].from=3 equals to: a move must change the CPU"},
        {"\"to\":11", "\"to\":-1",
         "plan of domain 'web': moves[0].to=-1, expected an integer in 0..65535"},
        {",\"reason\":\"makes room\"", "", "plan of domain 'web': moves[0].reason is missing"},
        {"\"domain\":\"db\"", "\"domain\":\"\"", "plan of domain 'web': moves[0].domain is empty"},
        {"\"vcpu\":1,\"from\"", "\"cpu\":1,\"from\"",
         "plan of domain 'web': unknown key 'cpu' in moves[0]"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(GStrv) parts = g_strsplit(text, cases[i].from, 2);
        g_autofree char *bad_text = g_strjoin(cases[i].to, parts[0], parts[1], NULL);
        g_autoptr(GError) e = NULL;
        g_autoptr(vpPlan) p = fromText(bad_text, &e);

        ck_assert_msg(!p, "case %zu accepted", i);
        ck_assert_str_eq(e->message, cases[i].message);
    }
}
END_TEST

/* locality=numa:N: guest cells derived from the placement, in JSON and text, read back for
 * their shape, and absent when the vCPUs do not sit as N blocks on N nodes. */
START_TEST(test_guest_cells)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = vpPlanNew("db", 4);
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpGuestCells) cells = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    g_autofree char *again = NULL;
    g_autofree char *shown = NULL;
    static const char json[] = "\"guest_cells\":[{\"cell\":0,\"vcpus\":\"0-1\",\"numa\":0},"
                               "{\"cell\":1,\"vcpus\":\"2-3\",\"numa\":1}]";
    static const struct {
        const char *from, *to, *message;
    } cases[] = {
        {"\"vcpus\":\"2-3\"", "\"vcpus\":\"1-3\"",
         "plan of domain 'db': guest_cells[1].vcpus='1-3', expected '2-3'"},
        {"\"cell\":1", "\"cell\":0", "plan of domain 'db': guest_cells[1].cell=0, expected 1"},
        {",\"numa\":1}]", "}]", "plan of domain 'db': guest_cells[1].numa is missing"},
        {"\"locality\":\"numa:2\"", "\"locality\":\"numa:4\"",
         "plan of domain 'db': guest_cells=[{\"cell\":0,\"vcpus\":\"0-1\",\"numa\":0},{\"cel... "
         "does not match locality='numa:4' over 4 vCPUs"},
        {"\"locality\":\"numa:2\"", "\"locality\":\"auto\"",
         "plan of domain 'db': guest_cells=[{\"cell\":0,\"vcpus\":\"0-1\",\"numa\":0},{\"cel... "
         "does not match locality='auto' over 4 vCPUs"},
    };

    plan->policy.locality = VP_LOCALITY_SPLIT + 2;
    plan->vcpu_pu[0] = 0;
    plan->vcpu_pu[1] = 8;
    plan->vcpu_pu[2] = 4;
    plan->vcpu_pu[3] = 5;
    cells = vpPlanGuestCells(plan, topo);
    ck_assert_ptr_nonnull(cells);
    ck_assert_uint_eq(cells->ncells, 2);
    ck_assert_uint_eq(cells->cells[1].node, 1);
    ck_assert_int_eq(hwloc_bitmap_first(cells->cells[1].vcpus), 2);
    ck_assert_int_eq(hwloc_bitmap_weight(cells->cells[1].vcpus), 2);
    text = toText(plan, topo);
    ck_assert_msg(strstr(text, json), "%s", text);
    back = fromText(text, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_uint_eq(vpLocalitySplit(back->policy.locality), 2);
    again = toText(back, topo);
    ck_assert_str_eq(again, text);
    {
        g_autoptr(GString) legacy = g_string_new(text);
        g_autoptr(vpPlan) old = NULL;

        g_string_replace(legacy, ",\"numa\":0}", ",\"node\":0}", 0);
        g_string_replace(legacy, ",\"numa\":1}", ",\"node\":1}", 0);
        ck_assert_ptr_nonnull(strstr(legacy->str, "\"node\":1}"));
        old = fromText(legacy->str, &err);
        ck_assert_msg(old, "%s", err ? err->message : "");
    }
    shown = vpPlanFormat(back, topo);
    ck_assert_ptr_nonnull(strstr(shown, "  guest cell 1: vcpus 2-3 on host node 1 (<cell id='1' "
                                        "cpus='2-3' .../>, <memnode cellid='1' mode='strict' "
                                        "nodeset='1'/>)\n"));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(GStrv) parts = g_strsplit(text, cases[i].from, 2);
        g_autofree char *bad_text = g_strjoin(cases[i].to, parts[0], parts[1], NULL);
        g_autoptr(GError) e = NULL;
        g_autoptr(vpPlan) p = fromText(bad_text, &e);

        ck_assert_msg(!p, "case %zu accepted", i);
        ck_assert_str_eq(e->message, cases[i].message);
    }

    /* block 0 spans both nodes: no cells, nothing written */
    plan->vcpu_pu[1] = 6;
    plan->vcpu_pu[2] = 1;
    g_clear_pointer(&cells, vpGuestCellsFree);
    ck_assert_ptr_null(vpPlanGuestCells(plan, topo));
    g_free(text);
    text = toText(plan, topo);
    ck_assert_ptr_null(strstr(text, "guest_cells"));
    /* both blocks on one node */
    plan->vcpu_pu[1] = 1;
    plan->vcpu_pu[2] = 2;
    plan->vcpu_pu[3] = 3;
    ck_assert_ptr_null(vpPlanGuestCells(plan, topo));
}
END_TEST

/* numa:2 over 3 vCPUs: unequal cells (2 and 1), written, read back, and a first cell that
 * leaves the second none refused. */
START_TEST(test_guest_cells_unequal)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpPlan) plan = vpPlanNew("odd", 3);
    g_autoptr(vpPlan) back = NULL;
    g_autoptr(vpGuestCells) cells = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    g_autofree char *broken = NULL;

    plan->policy.locality = VP_LOCALITY_SPLIT + 2;
    plan->vcpu_pu[0] = 0;
    plan->vcpu_pu[1] = 1;
    plan->vcpu_pu[2] = 4;
    cells = vpPlanGuestCells(plan, topo);
    ck_assert_ptr_nonnull(cells);
    ck_assert_uint_eq(cells->ncells, 2);
    ck_assert_int_eq(hwloc_bitmap_weight(cells->cells[0].vcpus), 2);
    ck_assert_int_eq(hwloc_bitmap_first(cells->cells[1].vcpus), 2);
    ck_assert_uint_eq(cells->cells[1].node, 1);
    text = toText(plan, topo);
    ck_assert_msg(strstr(text, "{\"cell\":1,\"vcpus\":\"2\",\"numa\":1}"), "%s", text);
    back = fromText(text, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    {
        g_auto(GStrv) parts = g_strsplit(text, "\"vcpus\":\"0-1\"", 2);

        broken = g_strjoin("\"vcpus\":\"0-2\"", parts[0], parts[1], NULL);
    }
    ck_assert_ptr_null(fromText(broken, &err));
    ck_assert_str_eq(err->message,
                     "plan of domain 'odd': guest_cells[0].vcpus='0-2', expected '0'");
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");

    tcase_add_test(tc, test_new);
    tcase_add_test(tc, test_held);
    tcase_add_test(tc, test_json_exact);
    tcase_add_test(tc, test_json_minimal);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_beside_others);
    tcase_add_test(tc, test_legacy_spelling);
    tcase_add_loop_test(tc, test_bad_field, 0, G_N_ELEMENTS(bad));
    tcase_add_test(tc, test_bad_shape);
    tcase_add_test(tc, test_empty_vcpus);
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_moves);
    tcase_add_test(tc, test_guest_cells);
    tcase_add_test(tc, test_guest_cells_unequal);
    tcase_add_test(tc, test_memory_page_sizes);
    suite_add_tcase(s, tc);
    return s;
}
