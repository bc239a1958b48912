/*
 * Golden rebalancing, the rebalancer's counterpart of golden.c: each directory under
 * rebalance/ holds case.ini and expected.json, and its counter intervals: [case] series
 * names a recorded series of tests/unit/data/pressure (gzip), else intervals.jsonl beside
 * case.ini. Either starts with a header line, {"topology":{"packages","numa","l3","cores",
 * "threads"},"plans":[{"domain","smt","vcpus"[,"group","coresched","reserved","how","rebalance",
 * "cpuset"]}]},
 * then one interval per line (vpPressureInputFromJson); gen_rebalance_cases.py writes the
 * hand-made ones. Every interval goes through the daemon's
 * loop (pressure update, plan, apply, the policy check of tests/common/rebalfix.h,
 * commit), and a vCPU never returns to a PU it left within memory unless that PU was idle
 * for return_quiet intervals. expected.json holds every move with the second it came in;
 * with [case] notes=true also every note, with ledger=true the ledger after the last
 * interval.
 *
 *   [pressure] persistence=N      [rebalance] max_moves=N return_quiet=N
 *   VP_REGENERATE=1               rewrite expected.json from the current rebalancer
 */
#include "core/balance/rebalance.h"
#include "goldencheck.h"
#include "rebalfix.h"

#include <check.h>
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC VP_FIX_SEC

static GPtrArray *cases;
static const char *topdir;
static char *casedir;

typedef struct {
    vpTopology *topo;
    vpLedger *ledger;
    GPtrArray *intervals; /* vpPressureInput */
} Scenario;

static void
scenarioFree(Scenario *sc)
{
    vpLedgerFree(sc->ledger);
    vpTopologyFree(sc->topo);
    g_ptr_array_free(sc->intervals, TRUE);
    g_free(sc);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Scenario, scenarioFree)

static GDataInputStream *
openSeries(const char *path)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GError) err = NULL;
    g_autoptr(GFileInputStream) raw = g_file_read(file, NULL, &err);
    g_autoptr(GZlibDecompressor) gz = NULL;

    ck_assert_msg(raw, "%s: %s", path, err ? err->message : "");
    if (!g_str_has_suffix(path, ".gz"))
        return g_data_input_stream_new(G_INPUT_STREAM(raw));
    gz = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    g_autoptr(GInputStream) conv =
        g_converter_input_stream_new(G_INPUT_STREAM(raw), G_CONVERTER(gz));
    return g_data_input_stream_new(conv);
}

static JsonNode *
readLine(GDataInputStream *in, const char *path, guint lineno)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *line = g_data_input_stream_read_line(in, NULL, NULL, &err);
    JsonNode *node;

    ck_assert_msg(!err, "%s:%u: %s", path, lineno, err ? err->message : "");
    if (!line)
        return NULL;
    node = json_from_string(line, &err);
    ck_assert_msg(node, "%s:%u: %s", path, lineno, err ? err->message : "empty line");
    return node;
}

static vpPlan *
planFromHeader(const vpTopology *topo, JsonObject *o)
{
    JsonArray *cpus = json_object_get_array_member(o, "vcpus");
    unsigned n = json_array_get_length(cpus), nres = 0;
    g_autofree int *v = g_new(int, n);
    int res[16];
    const char *group = json_object_get_string_member_with_default(o, "group", NULL);
    const char *how = json_object_get_string_member_with_default(o, "how", "placed");
    const char *rebalance = json_object_get_string_member_with_default(o, "rebalance", "auto");
    const char *coresched = json_object_get_string_member_with_default(o, "coresched", "vm");
    g_autoptr(GError) err = NULL;
    vpPlan *plan;

    for (unsigned i = 0; i < n; i++)
        v[i] = json_array_get_int_element(cpus, i);
    if (json_object_has_member(o, "reserved")) {
        JsonArray *r = json_object_get_array_member(o, "reserved");

        nres = json_array_get_length(r);
        ck_assert_uint_le(nres, G_N_ELEMENTS(res));
        for (unsigned i = 0; i < nres; i++)
            res[i] = json_array_get_int_element(r, i);
    }
    plan = vpFixPlan(topo, json_object_get_string_member(o, "domain"),
                     json_object_get_string_member(o, "smt"), group, v, n, res, nres);
    if (strcmp(how, "pinned") == 0)
        plan->how = VP_HOW_PINNED;
    if (json_object_has_member(o, "cpuset")) {
        plan->cpuset = vpCpuListParse("cpuset", json_object_get_string_member(o, "cpuset"), &err);
        ck_assert_msg(plan->cpuset, "%s", err ? err->message : "");
    }
    ck_assert_msg(vpPolicySetAttr(&plan->policy, "rebalance", rebalance, &err), "%s",
                  err ? err->message : "");
    ck_assert_msg(vpPolicySetAttr(&plan->policy, "coresched", coresched, &err), "%s",
                  err ? err->message : "");
    return plan;
}

static Scenario *
scenarioLoad(const char *path)
{
    g_autoptr(GDataInputStream) in = openSeries(path);
    g_autoptr(JsonNode) head = readLine(in, path, 1);
    Scenario *sc = g_new0(Scenario, 1);
    JsonObject *h, *t;
    JsonArray *plans;
    JsonNode *node;
    guint lineno = 1;

    ck_assert_msg(head && JSON_NODE_HOLDS_OBJECT(head), "%s: no header line", path);
    h = json_node_get_object(head);
    t = json_object_get_object_member(h, "topology");
    sc->topo = vpFixTopology(
        json_object_get_int_member(t, "packages"), json_object_get_int_member(t, "numa"),
        json_object_get_int_member(t, "l3"), json_object_get_int_member(t, "cores"),
        json_object_get_int_member(t, "threads"));
    sc->ledger = vpLedgerNew(sc->topo);
    plans = json_object_get_array_member(h, "plans");
    for (guint i = 0; i < json_array_get_length(plans); i++)
        vpFixAddPlan(sc->ledger, planFromHeader(sc->topo, json_array_get_object_element(plans, i)));
    sc->intervals = g_ptr_array_new_with_free_func((GDestroyNotify)vpPressureInputFree);
    while ((node = readLine(in, path, ++lineno))) {
        g_autoptr(GError) err = NULL;
        vpPressureInput *interval = vpPressureInputFromJson(node, &err);

        ck_assert_msg(interval, "%s:%u: %s", path, lineno, err ? err->message : "");
        g_ptr_array_add(sc->intervals, interval);
        json_node_unref(node);
    }
    return sc;
}

/* The few settings a case may change; anything else in case.ini is a typo. */
static void
loadConfig(GKeyFile *kf, const char *ini, vpPressureConfig *pcfg, vpRebalanceConfig *rcfg,
           gboolean *notes, gboolean *ledger)
{
    static const char *const known[] = {"case/series",
                                        "case/notes",
                                        "case/ledger",
                                        "pressure/persistence",
                                        "rebalance/max_moves",
                                        "rebalance/return_quiet",
                                        NULL};
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    g_autoptr(GError) err = NULL;

    for (gsize g = 0; groups[g]; g++) {
        g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[g], NULL, NULL);

        for (gsize k = 0; keys && keys[k]; k++) {
            g_autofree char *name = g_strdup_printf("%s/%s", groups[g], keys[k]);

            ck_assert_msg(g_strv_contains(known, name), "%s: unknown key '%s' in [%s]", ini,
                          keys[k], groups[g]);
        }
    }
    vpPressureConfigInit(pcfg);
    vpRebalanceConfigInit(rcfg);
    if (g_key_file_has_key(kf, "pressure", "persistence", NULL))
        pcfg->persistence = g_key_file_get_uint64(kf, "pressure", "persistence", NULL);
    if (g_key_file_has_key(kf, "rebalance", "max_moves", NULL))
        rcfg->max_moves = g_key_file_get_uint64(kf, "rebalance", "max_moves", NULL);
    if (g_key_file_has_key(kf, "rebalance", "return_quiet", NULL))
        rcfg->return_quiet = g_key_file_get_uint64(kf, "rebalance", "return_quiet", NULL);
    ck_assert_msg(vpPressureConfigValidate(pcfg, &err), "%s: %s", ini, err ? err->message : "");
    ck_assert_msg(vpRebalanceConfigValidate(rcfg, &err), "%s: %s", ini, err ? err->message : "");
    *notes = g_key_file_get_boolean(kf, "case", "notes", NULL);
    *ledger = g_key_file_get_boolean(kf, "case", "ledger", NULL);
}

static void
addMove(JsonBuilder *b, guint t, const vpMove *m)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "t");
    json_builder_add_int_value(b, t);
    json_builder_set_member_name(b, "domain");
    json_builder_add_string_value(b, m->domain);
    json_builder_set_member_name(b, "vcpu");
    json_builder_add_int_value(b, m->vcpu);
    json_builder_set_member_name(b, "from");
    json_builder_add_int_value(b, m->from);
    json_builder_set_member_name(b, "to");
    json_builder_add_int_value(b, m->to);
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, m->reason);
    json_builder_end_object(b);
}

/* Replays the intervals through the daemon's loop; fills "moves" and "notes". */
static void
replay(Scenario *sc, const vpPressureConfig *pcfg, const vpRebalanceConfig *rcfg,
       JsonBuilder *moves, JsonBuilder *notes)
{
    g_autoptr(vpPressure) p = vpPressureNew(sc->topo, pcfg);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(rcfg);
    /* per vCPU and PU it left: the second it left */
    g_autoptr(GHashTable) left = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < sc->intervals->len; i++) {
        guint t = i + 1;
        gint64 now = (gint64)t * SEC;
        g_autoptr(GPtrArray) planned = NULL;
        g_autoptr(GPtrArray) done = NULL;
        g_autoptr(GPtrArray) said = g_ptr_array_new_with_free_func(g_free);

        vpPressureUpdate(p, sc->ledger, g_ptr_array_index(sc->intervals, i));
        planned = vpRebalancePlan(rb, p, sc->ledger, now, NULL);
        for (guint k = 0; k < planned->len; k++) {
            const vpMove *m = g_ptr_array_index(planned, k);
            g_autofree char *key = g_strdup_printf("%s/%u/%u", m->domain, m->vcpu, m->to);
            gpointer when;

            if (g_hash_table_lookup_extended(left, key, NULL, &when) &&
                now - (gint64)GPOINTER_TO_SIZE(when) * SEC < rcfg->memory_ns)
                ck_assert_uint_ge(vpPressurePU(p, vpFixPU(sc->topo, m->to))->idle_streak,
                                  rcfg->return_quiet);
        }
        done = vpFixPass(rb, p, sc->ledger, now, said);
        for (guint k = 0; k < done->len; k++) {
            const vpMove *m = g_ptr_array_index(done, k);

            addMove(moves, t, m);
            g_hash_table_insert(left, g_strdup_printf("%s/%u/%u", m->domain, m->vcpu, m->from),
                                GSIZE_TO_POINTER(t));
            ck_assert_uint_gt(vpRebalancerMoves(rb, m->domain, m->vcpu), 0);
        }
        for (guint k = 0; notes && k < said->len; k++) {
            json_builder_begin_object(notes);
            json_builder_set_member_name(notes, "t");
            json_builder_add_int_value(notes, t);
            json_builder_set_member_name(notes, "note");
            json_builder_add_string_value(notes, g_ptr_array_index(said, k));
            json_builder_end_object(notes);
        }
    }
}

START_TEST(test_case)
{
    const char *name = g_ptr_array_index(cases, _i);
    g_autofree char *dir = g_build_filename(casedir, name, NULL);
    g_autofree char *ini = g_build_filename(dir, "case.ini", NULL);
    g_autofree char *exp = g_build_filename(dir, "expected.json", NULL);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *series = NULL;
    g_autofree char *path = NULL;
    g_autoptr(Scenario) sc = NULL;
    g_autoptr(JsonBuilder) moves = json_builder_new();
    g_autoptr(JsonBuilder) notes = NULL;
    g_autoptr(JsonBuilder) out = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    vpPressureConfig pcfg;
    vpRebalanceConfig rcfg;
    gboolean with_notes, with_ledger;

    ck_assert_msg(g_key_file_load_from_file(kf, ini, G_KEY_FILE_NONE, &error), "%s: %s", ini,
                  error ? error->message : "");
    loadConfig(kf, ini, &pcfg, &rcfg, &with_notes, &with_ledger);
    series = g_key_file_get_string(kf, "case", "series", NULL);
    path = series ? g_build_filename(topdir, "tests", "unit", "data", "pressure", series, NULL)
                  : g_build_filename(dir, "intervals.jsonl", NULL);
    sc = scenarioLoad(path);
    if (with_notes)
        notes = json_builder_new();

    json_builder_begin_array(moves);
    if (notes)
        json_builder_begin_array(notes);
    replay(sc, &pcfg, &rcfg, moves, notes);
    json_builder_end_array(moves);

    json_builder_begin_object(out);
    json_builder_set_member_name(out, "intervals");
    json_builder_add_int_value(out, sc->intervals->len);
    json_builder_set_member_name(out, "moves");
    json_builder_add_value(out, json_builder_get_root(moves));
    if (notes) {
        json_builder_end_array(notes);
        json_builder_set_member_name(out, "notes");
        json_builder_add_value(out, json_builder_get_root(notes));
    }
    if (with_ledger) {
        json_builder_set_member_name(out, "ledger");
        json_builder_add_value(out, vpLedgerToJson(sc->ledger));
    }
    json_builder_end_object(out);
    root = json_builder_get_root(out);
    vpGoldenCheck(name, exp, root);
}
END_TEST

int
main(void)
{
    topdir = g_getenv("VP_TOPDIR");
    g_assert(topdir);
    casedir = g_build_filename(topdir, "tests", "golden", "rebalance", NULL);
    cases = vpGoldenCases(casedir, NULL);
    return vpGoldenRun("golden-rebalance", test_case, cases, 120);
}
