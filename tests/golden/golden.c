/*
 * Golden placements, in the manner of libvirt's qemuxml2argv tests: each directory under
 * cases/ holds case.ini (topology, host sets, node-memory for exports without it, max-moves:
 * the compaction budget, 2 unless given), an optional prefill.jsonl trace that fills the
 * ledger first (placer alone), domain.xml, and expected.json (the plan with its moves, the
 * refusal text, or the message for input vcpuplace does not place: bad domain XML,
 * non-QEMU types). The plan must equal the reviewed file, and its moves and then the plan
 * (on the ledger after the moves) pass the properties of tests/common/props.h.
 *
 *   golden synthetic     cases whose topology the project writes itself
 *   golden shared        cases on ../shared/topologies (exit 77 = skipped when absent)
 *   golden traces        the simulate traces in traces/ (NAME.jsonl + NAME.ini naming the
 *                        topology), replayed start by start with every plan's properties
 *                        and the ledger's invariant checked after each event
 *   VP_REGENERATE=1      rewrite expected.json from the current placer, to review as a diff
 */
#include "cli/trace.h"
#include "core/place/compact.h"
#include "core/place/placer.h"
#include "host/hwtopo.h"
#include "core/model/request.h"
#include "libvirt/domxml.h"
#include "goldencheck.h"
#include "props.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

static GPtrArray *cases;
static const char *casedir;
static const char *shared;

static char *
topologySource(GKeyFile *kf, GError **error)
{
    g_autofree char *file = g_key_file_get_string(kf, "case", "topology-file", NULL);

    g_autofree char *own = g_key_file_get_string(kf, "case", "topology-own", NULL);

    if (file)
        return g_build_filename(shared, file, NULL);
    /* the project's own hand-written exports, tests/topologies */
    if (own)
        return g_build_filename(g_getenv("VP_TOPDIR"), "tests", "topologies", own, NULL);
    return g_key_file_get_string(kf, "case", "topology", error);
}

static vpTopology *
loadTopology(GKeyFile *kf, GError **error)
{
    g_autofree char *src = topologySource(kf, error);
    g_autofree char *host = g_key_file_get_string(kf, "case", "host-cpus", NULL);
    g_autofree char *hk = g_key_file_get_string(kf, "case", "housekeeping", NULL);
    g_autofree char *mem = g_key_file_get_string(kf, "case", "node-memory", NULL);
    g_autoptr(vpBitmap) hostset = NULL;
    g_autoptr(vpBitmap) hkset = NULL;
    vpTopology *topo;
    guint64 bytes = 0;

    if (!src)
        return NULL;
    if (host && !(hostset = vpCpuListParse("host-cpus", host, error)))
        return NULL;
    if (hk && !(hkset = vpCpuListParse("housekeeping", hk, error)))
        return NULL;
    if (mem && !vpMemorySizeParse("node-memory", mem, &bytes, error))
        return NULL;
    if ((topo = vpHwtopoLoad(src, hostset, hkset, error)) && mem)
        vpTopologySetUnknownMemory(topo, bytes);
    return topo;
}

static void
prefill(const vpTopology *topo, vpLedger *ledger, const char *path)
{
    g_autofree char *data = NULL;
    g_auto(GStrv) lines = NULL;
    vpPolicy defaults;

    if (!g_file_get_contents(path, &data, NULL, NULL))
        return;
    vpPolicyInitDefaults(&defaults);
    lines = g_strsplit(data, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(vpPlan) plan = NULL;
        vpTraceEvent ev;

        if (!*g_strstrip(lines[i]))
            continue;
        ck_assert_msg(vpTraceParseLine(lines[i], &defaults, &ev, &error), "%s:%d: %s", path, i + 1,
                      error->message);
        if (ev.op == VP_TRACE_STOP) {
            ck_assert(vpLedgerRemove(ledger, ev.name));
        } else {
            plan = vpPlace(topo, ledger, ev.req, &error);
            ck_assert_msg(plan, "%s:%d: %s", path, i + 1, error->message);
            ck_assert_msg(vpCheckPlan(topo, ledger, ev.req, plan, &error), "%s:%d: %s", path, i + 1,
                          error->message);
            ck_assert_msg(vpLedgerAdd(ledger, plan, &error), "%s:%d: %s", path, i + 1,
                          error->message);
        }
        vpTraceEventClear(&ev);
    }
    vpPolicyClear(&defaults);
}

/* The properties of a plan with moves: the moves against the ledger before them, then the
 * plan against the ledger after them (which this leaves applied). */
static gboolean
checkElastic(const vpTopology *topo, vpLedger *ledger, const vpRequest *req, const vpPlan *plan,
             unsigned max_moves, GError **error)
{
    return vpCheckMoves(topo, ledger, plan, max_moves, error) &&
           vpCompactApply(ledger, plan, error) && vpCheckPlan(topo, ledger, req, plan, error);
}

static JsonNode *
refusalJson(const GError *error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED) ? "refused"
                                                                                       : "invalid");
    json_builder_add_string_value(b, error->message);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

START_TEST(test_case)
{
    const char *name = g_ptr_array_index(cases, _i);
    g_autofree char *dir = g_build_filename(casedir, name, NULL);
    g_autofree char *ini = g_build_filename(dir, "case.ini", NULL);
    g_autofree char *xml = g_build_filename(dir, "domain.xml", NULL);
    g_autofree char *pre = g_build_filename(dir, "prefill.jsonl", NULL);
    g_autofree char *exp = g_build_filename(dir, "expected.json", NULL);
    g_autofree char *topoxml = g_build_filename(dir, "topology.xml", NULL);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpPlan) plan = NULL;
    g_autoptr(JsonNode) out = NULL;
    vpPolicy defaults;
    vpCompactConfig cfg;

    ck_assert_msg(g_key_file_load_from_file(kf, ini, G_KEY_FILE_NONE, &error), "%s: %s", ini,
                  error ? error->message : "");
    vpCompactConfigInit(&cfg);
    if (g_key_file_has_key(kf, "case", "max-moves", NULL))
        cfg.max_moves = g_key_file_get_integer(kf, "case", "max-moves", NULL);
    /* a machine the project writes itself, when synthetic syntax cannot say it (huge page
     * pools) */
    if (g_file_test(topoxml, G_FILE_TEST_EXISTS))
        g_key_file_set_string(kf, "case", "topology", topoxml);
    topo = loadTopology(kf, &error);
    ck_assert_msg(topo, "%s: %s", name, error ? error->message : "no topology");
    ledger = vpLedgerNew(topo);
    prefill(topo, ledger, pre);

    vpPolicyInitDefaults(&defaults);
    req = vpDomXMLParseFile(xml, &defaults, &error);
    vpPolicyClear(&defaults);

    plan = req ? vpPlaceCompact(topo, ledger, req, &cfg, &error) : NULL;
    if (plan) {
        ck_assert_msg(checkElastic(topo, ledger, req, plan, cfg.max_moves, &error), "%s: %s", name,
                      error->message);
        out = vpPlanToJson(plan, topo);
    } else {
        ck_assert_msg(g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED) ||
                          g_error_matches(error, VP_ERROR, VP_ERROR_INVALID),
                      "%s: %s", name, error->message);
        if (g_str_has_prefix(error->message, xml)) {
            g_autofree char *rest = g_strdup(error->message + strlen(xml));

            g_free(error->message);
            error->message = g_strconcat("domain.xml", rest, NULL);
        }
        out = refusalJson(error);
        g_clear_error(&error);
    }
    vpGoldenCheck(name, exp, out);
}
END_TEST

static char *tracedir;

START_TEST(test_trace)
{
    const char *name = g_ptr_array_index(cases, _i);
    g_autofree char *path = g_build_filename(tracedir, name, NULL);
    g_autofree char *base = g_strndup(path, strlen(path) - strlen(".jsonl"));
    g_autofree char *ini = g_strconcat(base, ".ini", NULL);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autofree char *data = NULL;
    g_auto(GStrv) lines = NULL;
    g_autofree char *src = NULL;
    unsigned placed = 0, refused = 0, moves = 0;
    vpPolicy defaults;
    vpCompactConfig cfg;

    ck_assert_msg(g_key_file_load_from_file(kf, ini, G_KEY_FILE_NONE, &error), "%s: %s", ini,
                  error ? error->message : "");
    src = g_key_file_get_string(kf, "trace", "topology", &error);
    ck_assert_msg(src, "%s: %s", ini, error ? error->message : "");
    topo = vpHwtopoLoad(src, NULL, NULL, &error);
    ck_assert_msg(topo, "%s: %s", src, error ? error->message : "");
    ledger = vpLedgerNew(topo);
    ck_assert(g_file_get_contents(path, &data, NULL, NULL));
    lines = g_strsplit(data, "\n", -1);
    vpPolicyInitDefaults(&defaults);
    vpCompactConfigInit(&cfg);
    for (int i = 0; lines[i]; i++) {
        g_autoptr(vpPlan) plan = NULL;
        vpTraceEvent ev;

        if (!*g_strstrip(lines[i]))
            continue;
        ck_assert_msg(vpTraceParseLine(lines[i], &defaults, &ev, &error), "%s:%d: %s", name, i + 1,
                      error->message);
        if (ev.op == VP_TRACE_STOP) {
            vpLedgerRemove(ledger, ev.name);
        } else if ((plan = vpPlaceCompact(topo, ledger, ev.req, &cfg, &error))) {
            ck_assert_msg(checkElastic(topo, ledger, ev.req, plan, cfg.max_moves, &error),
                          "%s:%d: %s", name, i + 1, error->message);
            moves += plan->nmoves;
            ck_assert_msg(vpLedgerAdd(ledger, plan, &error), "%s:%d: %s", name, i + 1,
                          error->message);
            placed++;
        } else {
            ck_assert_msg(g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED), "%s:%d: %s", name,
                          i + 1, error->message);
            g_clear_error(&error);
            refused++;
        }
        ck_assert_msg(vpLedgerCheck(ledger, &error), "%s:%d: %s", name, i + 1,
                      error ? error->message : "");
        vpTraceEventClear(&ev);
    }
    vpPolicyClear(&defaults);
    ck_assert_uint_gt(placed, 0);
    printf("%s: %u placed, %u refused, %u moves, every plan and move checked\n", name, placed,
           refused, moves);
}
END_TEST

static gboolean
isTrace(const char *name)
{
    return g_str_has_suffix(name, ".jsonl");
}

static int
runTraces(const char *topdir)
{
    tracedir = g_build_filename(topdir, "tests", "golden", "traces", NULL);
    cases = vpGoldenCases(tracedir, isTrace);
    return vpGoldenRun("golden-traces", test_trace, cases, 120);
}

static bool
usesShared(const char *dir)
{
    g_autofree char *ini = g_build_filename(casedir, dir, "case.ini", NULL);
    g_autoptr(GKeyFile) kf = g_key_file_new();

    return g_key_file_load_from_file(kf, ini, G_KEY_FILE_NONE, NULL) &&
           g_key_file_has_key(kf, "case", "topology-file", NULL);
}

/* Cases on ../shared/topologies or on the project's own, as this run wants. */
static bool want_shared;

static gboolean
wanted(const char *name)
{
    return usesShared(name) == want_shared;
}

int
main(int argc, char **argv)
{
    const char *topdir = g_getenv("VP_TOPDIR");

    g_assert(topdir);
    if (argc > 1 && strcmp(argv[1], "traces") == 0)
        return runTraces(topdir);
    want_shared = argc > 1 && strcmp(argv[1], "shared") == 0;
    casedir = g_build_filename(topdir, "tests", "golden", "cases", NULL);
    shared = g_getenv("VP_SHARED_TOPOLOGIES");
    if (want_shared && (!shared || !g_file_test(shared, G_FILE_TEST_IS_DIR))) {
        printf("SKIP: %s is absent; golden cases on real machines' topologies not run\n",
               shared ? shared : "VP_SHARED_TOPOLOGIES");
        return SKIP;
    }
    cases = vpGoldenCases(casedir, wanted);
    return vpGoldenRun(want_shared ? "golden-shared" : "golden-synthetic", test_case, cases, 60);
}
