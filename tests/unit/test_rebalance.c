/*
 * The rebalancer on recorded series (tests/unit/data/pressure, see generate.py there) and
 * on small hand-made situations: a real hotspot moves within the persistence, a noisy but
 * balanced host does not move, an oscillating load does not ping-pong, and no move ever
 * breaks a domain's policy (checked after every applied move, and on random ledgers).
 */
#include "core/rebalance.h"

#include <check.h>
#include <gio/gio.h>
#include <string.h>

#define SEC 1000000000LL

/* --- fixtures --- */

/* packages x numa x l3 x cores x threads, Linux numbering as on Intel (sibling = n + cores). */
static vpTopology *
buildTopo(int packages, int numa, int l3, int cores, int threads)
{
    vpTopology *topo = vpTopologyNew();
    int total = packages * numa * l3 * cores;
    g_autoptr(GError) err = NULL;

    for (int t = 0; t < threads; t++) {
        for (int g = 0; g < total; g++) {
            int l = g / cores, n = l / l3, pkg = n / numa;

            vpTopologyAddPU(topo, t * total + g, pkg, n, l, -1, g, true);
        }
    }
    ck_assert_msg(vpTopologyFinalize(topo, NULL, NULL, &err), "%s", err ? err->message : "");
    return topo;
}

static int
puOf(const vpTopology *topo, unsigned os)
{
    int pu = vpTopologyPUByOS(topo, os);

    ck_assert_int_ge(pu, 0);
    return pu;
}

static int
coreOfOS(const vpTopology *topo, unsigned os)
{
    return vpTopologyPU(topo, puOf(topo, os))->core;
}

static int
groupOfOS(const vpTopology *topo, unsigned os, vpLevel level)
{
    return vpTopologyCore(topo, coreOfOS(topo, os))->group[level];
}

/* The smallest level whose one group holds every vCPU, as the placer records it. */
static void
setLevel(const vpTopology *topo, vpPlan *plan)
{
    for (int l = VP_LEVEL_L3; l < VP_LEVEL_HOST; l++) {
        int idx = groupOfOS(topo, plan->vcpu_pu[0], l);
        bool one = true;

        for (unsigned v = 1; v < plan->nvcpus; v++)
            one &= groupOfOS(topo, plan->vcpu_pu[v], l) == idx;
        if (one) {
            plan->level = l;
            plan->level_index = idx;
            return;
        }
    }
}

static vpPlan *
makePlan(const vpTopology *topo, const char *domain, const char *smt, const char *group,
         const int *cpus, unsigned n, const int *reserved, unsigned nres)
{
    vpPlan *plan = vpPlanNew(domain, n);
    g_autoptr(GError) err = NULL;

    ck_assert(vpPolicySetAttr(&plan->policy, "smt", smt, &err));
    if (group) {
        plan->group = g_strdup(group);
        plan->policy.group = g_strdup(group);
    }
    for (unsigned v = 0; v < n; v++) {
        plan->vcpu_pu[v] = cpus[v];
        hwloc_bitmap_set(plan->emulator, cpus[v]);
    }
    for (unsigned r = 0; r < nres; r++) {
        hwloc_bitmap_set(plan->reserved, reserved[r]);
        hwloc_bitmap_set(plan->emulator, reserved[r]);
    }
    setLevel(topo, plan);
    return plan;
}

static void
addPlan(vpLedger *ledger, vpPlan *plan)
{
    g_autoptr(GError) err = NULL;

    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    vpPlanFree(plan);
}

static GHashTable *
snapshot(const vpLedger *ledger)
{
    GHashTable *copy =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vpPlanFree);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        vpPlan *plan = vpPlanCopy(vpLedgerLookup(ledger, g_ptr_array_index(names, i)));

        g_hash_table_insert(copy, plan->domain, plan);
    }
    return copy;
}

/* --- the policy check run after every applied move --- */

static bool
trusted(const vpLedger *ledger, const vpPlan *plan, const char *other)
{
    const vpPlan *o = vpLedgerLookup(ledger, other);

    if (strcmp(other, plan->domain) == 0)
        return true;
    if (plan->group && o->group && strcmp(plan->group, o->group) == 0)
        return true;
    return plan->policy.smt == VP_SMT_SHARE && o->policy.smt == VP_SMT_SHARE;
}

static int
siblingIndex(const vpTopology *topo, unsigned os)
{
    const vpCore *core = vpTopologyCore(topo, coreOfOS(topo, os));
    int pu = puOf(topo, os);

    for (int i = 0; i < core->npus; i++) {
        if (core->pus[i] == pu)
            return i;
    }
    ck_abort();
    return -1;
}

static void
checkMoves(const vpLedger *ledger, GHashTable *before, GPtrArray *moves)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GError) err = NULL;
    GHashTableIter it;
    gpointer key, value;

    ck_assert_msg(vpLedgerCheck(ledger, &err), "%s", err ? err->message : "");
    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = g_ptr_array_index(moves, i);
        const vpPlan *b = g_hash_table_lookup(before, m->domain);
        const vpPlan *a = vpLedgerLookup(ledger, m->domain);
        const vpCore *core = vpTopologyCore(topo, coreOfOS(topo, m->to));

        ck_assert_ptr_nonnull(b);
        ck_assert_int_ne(b->how, VP_HOW_PINNED);
        ck_assert_int_ne(b->policy.rebalance, VP_REBALANCE_OFF);
        ck_assert_int_eq(b->vcpu_pu[m->vcpu], m->from);
        ck_assert_int_eq(a->vcpu_pu[m->vcpu], m->to);
        ck_assert_int_eq(groupOfOS(topo, m->from, VP_LEVEL_NUMA),
                         groupOfOS(topo, m->to, VP_LEVEL_NUMA));
        if (b->policy.locality == VP_LOCALITY_L3)
            ck_assert_int_eq(groupOfOS(topo, m->from, VP_LEVEL_L3),
                             groupOfOS(topo, m->to, VP_LEVEL_L3));
        ck_assert_msg(strstr(m->reason, "CPU") && strstr(m->reason, "%"),
                      "reason without figures: %s", m->reason);

        for (int k = 0; k < core->npus; k++) {
            vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

            if (!o.domain)
                continue;
            if (b->policy.smt == VP_SMT_ISOLATE || b->policy.smt == VP_SMT_PACK)
                ck_assert_msg(strcmp(o.domain, m->domain) == 0,
                              "%s (smt=%s) moved to CPU %u next to %s", m->domain,
                              vpSmtName(b->policy.smt), m->to, o.domain);
            else
                ck_assert_msg(trusted(ledger, a, o.domain),
                              "%s (smt=%s) moved to CPU %u next to %s", m->domain,
                              vpSmtName(b->policy.smt), m->to, o.domain);
        }
        if (b->policy.smt == VP_SMT_ISOLATE) {
            for (int k = 0; k < core->npus; k++) {
                vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

                ck_assert_str_eq(o.domain, m->domain);
                if (vpTopologyPU(topo, core->pus[k])->os != m->to)
                    ck_assert_int_ne(o.kind, VP_OWN_VCPU);
            }
            core = vpTopologyCore(topo, coreOfOS(topo, m->from));
            for (int k = 0; k < core->npus; k++) {
                vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

                ck_assert_msg(!o.domain || strcmp(o.domain, m->domain) != 0,
                              "%s kept CPU %u of the core it left", m->domain,
                              vpTopologyPU(topo, core->pus[k])->os);
            }
        }
        if (b->policy.smt == VP_SMT_PACK) {
            for (unsigned x = 0; x < b->nvcpus; x++) {
                for (unsigned y = x + 1; y < b->nvcpus; y++) {
                    bool was = coreOfOS(topo, b->vcpu_pu[x]) == coreOfOS(topo, b->vcpu_pu[y]);
                    bool is = coreOfOS(topo, a->vcpu_pu[x]) == coreOfOS(topo, a->vcpu_pu[y]);

                    ck_assert_msg(was == is, "pack %s: vCPUs %u and %u %s a core", m->domain, x, y,
                                  was ? "no longer share" : "now share");
                    if (is)
                        ck_assert_int_eq(
                            siblingIndex(topo, b->vcpu_pu[x]) < siblingIndex(topo, b->vcpu_pu[y]),
                            siblingIndex(topo, a->vcpu_pu[x]) < siblingIndex(topo, a->vcpu_pu[y]));
                }
            }
        }
    }
    /* nothing else changed */
    g_hash_table_iter_init(&it, before);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const vpPlan *b = value, *a = vpLedgerLookup(ledger, key);

        ck_assert_ptr_nonnull(a);
        for (unsigned v = 0; v < b->nvcpus; v++) {
            bool moved = false;

            for (guint i = 0; i < moves->len; i++) {
                const vpMove *m = g_ptr_array_index(moves, i);

                moved |= strcmp(m->domain, b->domain) == 0 && m->vcpu == v;
            }
            if (!moved)
                ck_assert_int_eq(a->vcpu_pu[v], b->vcpu_pu[v]);
        }
    }
}

/* Plan, apply, check, commit: one interval of the daemon's loop. */
static GPtrArray *
pass(vpRebalancer *rb, vpPressure *p, vpLedger *ledger, gint64 now, GPtrArray *notes)
{
    GPtrArray *moves = vpRebalancePlan(rb, p, ledger, now, notes);
    g_autoptr(GError) err = NULL;

    if (moves->len) {
        g_autoptr(GHashTable) before = snapshot(ledger);

        ck_assert_msg(vpRebalanceApply(ledger, moves, &err), "%s", err ? err->message : "");
        checkMoves(ledger, before, moves);
        vpRebalanceCommit(rb, p, vpLedgerTopology(ledger), moves, now);
    }
    return moves;
}

/* --- recorded series --- */

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

static char *
dataPath(const char *name)
{
    const char *top = g_getenv("VP_TOPDIR");
    g_autofree char *here = g_path_get_dirname(__FILE__);

    if (top)
        return g_build_filename(top, "tests", "unit", "data", "pressure", name, NULL);
    return g_build_filename(here, "data", "pressure", name, NULL);
}

static GDataInputStream *
openSeries(const char *name)
{
    g_autofree char *path = dataPath(name);
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GError) err = NULL;
    g_autoptr(GFileInputStream) raw = g_file_read(file, NULL, &err);
    g_autoptr(GZlibDecompressor) gz = NULL;
    g_autoptr(GInputStream) conv = NULL;

    ck_assert_msg(raw, "%s: %s", path, err ? err->message : "");
    gz = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    conv = g_converter_input_stream_new(G_INPUT_STREAM(raw), G_CONVERTER(gz));
    return g_data_input_stream_new(conv);
}

static JsonNode *
readLine(GDataInputStream *in, guint lineno)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *line = g_data_input_stream_read_line(in, NULL, NULL, &err);

    ck_assert_msg(!err, "line %u: %s", lineno, err ? err->message : "");
    if (!line)
        return NULL;
    return json_from_string(line, NULL);
}

static vpPlan *
planFromHeader(const vpTopology *topo, JsonObject *o)
{
    JsonArray *cpus = json_object_get_array_member(o, "vcpus");
    unsigned n = json_array_get_length(cpus), nres = 0;
    g_autofree int *v = g_new(int, n);
    int res[16];
    const char *group = json_object_get_string_member_with_default(o, "group", NULL);
    vpPlan *plan;

    for (unsigned i = 0; i < n; i++)
        v[i] = json_array_get_int_element(cpus, i);
    if (json_object_has_member(o, "reserved")) {
        JsonArray *r = json_object_get_array_member(o, "reserved");

        nres = json_array_get_length(r);
        for (unsigned i = 0; i < nres; i++)
            res[i] = json_array_get_int_element(r, i);
    }
    plan = makePlan(topo, json_object_get_string_member(o, "domain"),
                    json_object_get_string_member(o, "smt"), group, v, n, res, nres);
    if (g_strcmp0(json_object_get_string_member_with_default(o, "how", "placed"), "pinned") == 0)
        plan->how = VP_HOW_PINNED;
    return plan;
}

static Scenario *
scenarioLoad(const char *name)
{
    g_autoptr(GDataInputStream) in = openSeries(name);
    g_autoptr(JsonNode) head = readLine(in, 1);
    Scenario *sc = g_new0(Scenario, 1);
    JsonObject *h, *t;
    JsonArray *plans;
    JsonNode *node;
    guint lineno = 1;

    ck_assert_ptr_nonnull(head);
    h = json_node_get_object(head);
    t = json_object_get_object_member(h, "topology");
    sc->topo =
        buildTopo(json_object_get_int_member(t, "packages"), json_object_get_int_member(t, "numa"),
                  json_object_get_int_member(t, "l3"), json_object_get_int_member(t, "cores"),
                  json_object_get_int_member(t, "threads"));
    sc->ledger = vpLedgerNew(sc->topo);
    plans = json_object_get_array_member(h, "plans");
    for (guint i = 0; i < json_array_get_length(plans); i++)
        addPlan(sc->ledger, planFromHeader(sc->topo, json_array_get_object_element(plans, i)));
    sc->intervals = g_ptr_array_new_with_free_func((GDestroyNotify)vpPressureInputFree);
    while ((node = readLine(in, ++lineno))) {
        g_autoptr(GError) err = NULL;
        vpPressureInput *interval = vpPressureInputFromJson(node, &err);

        ck_assert_msg(interval, "%s line %u: %s", name, lineno, err ? err->message : "");
        g_ptr_array_add(sc->intervals, interval);
        json_node_unref(node);
    }
    return sc;
}

typedef struct {
    guint interval;
    vpMove move;
} Logged;

/* Replays a series through the daemon's loop; returns every move with its interval. */
static GArray *
replay(Scenario *sc, const vpPressureConfig *pcfg, const vpRebalanceConfig *rcfg)
{
    g_autoptr(vpPressure) p = vpPressureNew(sc->topo, pcfg);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(rcfg);
    GArray *log = g_array_new(FALSE, FALSE, sizeof(Logged));
    /* per vCPU: the PUs it left and when */
    g_autoptr(GHashTable) left = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < sc->intervals->len; i++) {
        gint64 now = (gint64)(i + 1) * SEC;
        g_autoptr(GPtrArray) planned = NULL;
        g_autoptr(GPtrArray) moves = NULL;

        vpPressureUpdate(p, sc->ledger, g_ptr_array_index(sc->intervals, i));
        /* a return to a PU the vCPU left within memory needs the PU idle since */
        planned = vpRebalancePlan(rb, p, sc->ledger, now, NULL);
        for (guint k = 0; k < planned->len; k++) {
            const vpMove *m = g_ptr_array_index(planned, k);
            g_autofree char *key = g_strdup_printf("%s/%u/%u", m->domain, m->vcpu, m->to);
            gpointer when;

            if (g_hash_table_lookup_extended(left, key, NULL, &when) &&
                now - (gint64)GPOINTER_TO_SIZE(when) * SEC < rcfg->memory_ns)
                ck_assert_uint_ge(vpPressurePU(p, puOf(sc->topo, m->to))->idle_streak,
                                  rcfg->return_quiet);
        }
        moves = pass(rb, p, sc->ledger, now, NULL);
        for (guint k = 0; k < moves->len; k++) {
            const vpMove *m = g_ptr_array_index(moves, k);
            Logged l = {i, *m};

            l.move.domain = g_strdup(m->domain);
            l.move.reason = g_strdup(m->reason);
            g_array_append_val(log, l);
            g_hash_table_insert(left, g_strdup_printf("%s/%u/%u", m->domain, m->vcpu, m->from),
                                GSIZE_TO_POINTER(i + 1));
            ck_assert_uint_eq(vpRebalancerMoves(rb, m->domain, m->vcpu) > 0, true);
        }
    }
    return log;
}

static void
logFree(GArray *log)
{
    for (guint i = 0; i < log->len; i++) {
        g_free(g_array_index(log, Logged, i).move.domain);
        g_free(g_array_index(log, Logged, i).move.reason);
    }
    g_array_free(log, TRUE);
}

static void
printLog(const char *what, GArray *log)
{
    g_print("%s: %u moves\n", what, log->len);
    for (guint i = 0; i < log->len; i++) {
        const Logged *l = &g_array_index(log, Logged, i);

        g_print("  t=%us %s vCPU %u: CPU %u -> %u: %s\n", l->interval + 1, l->move.domain,
                l->move.vcpu, l->move.from, l->move.to, l->move.reason);
    }
}

/* The host task lands on CPU 2 at t=30 s (interval index 30) and stays. */
#define HOTSPOT_ONSET 30

static void
hotspotWith(unsigned persistence)
{
    g_autoptr(Scenario) sc = scenarioLoad("hotspot.jsonl.gz");
    vpPressureConfig pcfg;
    vpRebalanceConfig rcfg;
    GArray *log;
    const Logged *first;

    vpPressureConfigInit(&pcfg);
    vpRebalanceConfigInit(&rcfg);
    pcfg.persistence = persistence;
    log = replay(sc, &pcfg, &rcfg);
    printLog(persistence == 5 ? "hotspot (persistence 5)" : "hotspot (persistence 3)", log);

    ck_assert_uint_ge(log->len, 1);
    first = &g_array_index(log, Logged, 0);
    ck_assert_str_eq(first->move.domain, "web");
    ck_assert_uint_eq(first->move.vcpu, 2);
    ck_assert_uint_eq(first->move.from, 2);
    /* L3 0 has no whole idle core; the first one in its NUMA node is core 6 */
    ck_assert_uint_eq(first->move.to, 6);
    ck_assert_ptr_nonnull(strstr(first->move.reason, "same NUMA node"));
    ck_assert_ptr_nonnull(strstr(first->move.reason, "idle whole core"));
    /* not before the hotspot has lasted the persistence, and not much after */
    ck_assert_uint_ge(first->interval, HOTSPOT_ONSET + persistence - 1);
    ck_assert_uint_le(first->interval, HOTSPOT_ONSET + persistence + 1);

    for (guint i = 0; i < log->len; i++) {
        const Logged *l = &g_array_index(log, Logged, i);

        ck_assert_str_eq(l->move.domain, "web");
        ck_assert_uint_eq(l->move.vcpu, 2);
        ck_assert_uint_ne(l->move.to, 2);
    }
    logFree(log);
}

START_TEST(test_hotspot_moved_within_persistence)
{
    hotspotWith(5);
    hotspotWith(3);
}
END_TEST

START_TEST(test_balanced_no_move)
{
    g_autoptr(Scenario) sc = scenarioLoad("balanced.jsonl.gz");
    vpPressureConfig pcfg;
    vpRebalanceConfig rcfg;
    GArray *log;

    vpPressureConfigInit(&pcfg);
    vpRebalanceConfigInit(&rcfg);
    ck_assert_uint_eq(sc->intervals->len, 600);
    log = replay(sc, &pcfg, &rcfg);
    printLog("balanced", log);
    ck_assert_uint_eq(log->len, 0);
    logFree(log);
}
END_TEST

START_TEST(test_oscillating_no_pingpong)
{
    g_autoptr(Scenario) sc = scenarioLoad("oscillating.jsonl.gz");
    g_autoptr(GHashTable) per = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    vpPressureConfig pcfg;
    vpRebalanceConfig rcfg;
    double minutes;
    GHashTableIter it;
    gpointer key, value;
    GArray *log;

    vpPressureConfigInit(&pcfg);
    vpRebalanceConfigInit(&rcfg);
    ck_assert_uint_eq(sc->intervals->len, 600);
    minutes = sc->intervals->len / 60.0;
    log = replay(sc, &pcfg, &rcfg);
    printLog("oscillating", log);
    /* the load does oscillate into hotspots: the rebalancer reacts, then calms down */
    ck_assert_uint_ge(log->len, 1);
    for (guint i = 0; i < log->len; i++) {
        const Logged *l = &g_array_index(log, Logged, i);
        char *k = g_strdup_printf("%s/%u", l->move.domain, l->move.vcpu);
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(per, k));

        g_hash_table_insert(per, k, GUINT_TO_POINTER(n + 1));
    }
    g_hash_table_iter_init(&it, per);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        g_print("  %s: %u moves in %.0f minutes\n", (char *)key, GPOINTER_TO_UINT(value), minutes);
        ck_assert_msg(GPOINTER_TO_UINT(value) / minutes < 1.0, "%s moved %u times in %.0f min",
                      (char *)key, GPOINTER_TO_UINT(value), minutes);
    }
    logFree(log);
}
END_TEST

/* --- hand-made situations --- */

typedef struct {
    const char *domain;
    int vcpu;
    double run, wait, wakeups;
} Load;

/* Feeds n identical intervals; busy[os] < 0 leaves a CPU unmeasured. */
static void
feed(vpPressure *p, const vpLedger *ledger, const Load *loads, int nloads, const double *busy,
     int ncpus, int n)
{
    for (int k = 0; k < n; k++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();

        for (int i = 0; i < nloads; i++) {
            vpPressureSample s = {
                .domain = (char *)loads[i].domain,
                .vcpu = loads[i].vcpu,
                .interval_ns = SEC,
                .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                .run_ns = loads[i].run * SEC,
                .wait_ns = loads[i].wait * SEC,
                .voluntary = loads[i].wakeups,
            };

            vpPressureInputAddVcpu(in, &s);
        }
        for (int c = 0; busy && c < ncpus; c++) {
            vpCpuSample cs = {c, SEC, busy[c] * SEC};

            if (busy[c] >= 0)
                vpPressureInputAddCpu(in, &cs);
        }
        vpPressureUpdate(p, ledger, in);
    }
}

/* 32 PUs: busy[] with the vCPU PUs at their run, the hot PU at 1, the rest near idle. */
static void
fillBusy(double *busy, int n, const vpLedger *ledger, const Load *loads, int nloads)
{
    for (int c = 0; c < n; c++)
        busy[c] = 0.01;
    for (int i = 0; i < nloads; i++) {
        const vpPlan *plan = vpLedgerLookup(ledger, loads[i].domain);

        busy[plan->vcpu_pu[loads[i].vcpu]] =
            loads[i].wait > 0.1 ? 1.0 : MIN(1.0, loads[i].run + 0.01);
    }
}

static GPtrArray *
notesNew(void)
{
    return g_ptr_array_new_with_free_func(g_free);
}

static bool
notesHave(GPtrArray *notes, const char *needle)
{
    for (guint i = 0; i < notes->len; i++) {
        if (strstr(g_ptr_array_index(notes, i), needle))
            return true;
    }
    return false;
}

static void
printNotes(GPtrArray *notes)
{
    for (guint i = 0; i < notes->len; i++)
        g_print("  note: %s\n", (char *)g_ptr_array_index(notes, i));
}

START_TEST(test_isolate_moves_whole_core)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 2, 2, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    const vpPlan *plan;
    const int cpus[] = {0, 1}, res[] = {16, 17};
    const int other[] = {2};
    const Load loads[] = {{"iso", 0, 0.5, 0.4, 300}, {"iso", 1, 0.6, 0.01, 300}};
    double busy[32];

    addPlan(ledger, makePlan(topo, "iso", "isolate", NULL, cpus, 2, res, 2));
    addPlan(ledger, makePlan(topo, "other", "spread", NULL, other, 1, NULL, 0));
    fillBusy(busy, 32, ledger, loads, 2);
    feed(p, ledger, loads, 2, busy, 32, 6);
    moves = pass(rb, p, ledger, 6 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    /* core 3 (CPUs 3, 19) is the first whole idle core of L3 0 */
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 3);
    plan = vpLedgerLookup(ledger, "iso");
    ck_assert(hwloc_bitmap_isset(plan->reserved, 19));
    ck_assert(!hwloc_bitmap_isset(plan->reserved, 16));
    ck_assert(hwloc_bitmap_isset(plan->reserved, 17));
    ck_assert(vpLedgerPUFree(ledger, puOf(topo, 0)));
    ck_assert(vpLedgerPUFree(ledger, puOf(topo, 16)));
    /* the emulator followed the vCPUs and their reserved siblings */
    ck_assert(hwloc_bitmap_isset(plan->emulator, 3));
    ck_assert(hwloc_bitmap_isset(plan->emulator, 19));
    ck_assert(!hwloc_bitmap_isset(plan->emulator, 0));
    ck_assert_ptr_nonnull(strstr(((vpMove *)g_ptr_array_index(moves, 0))->reason, "smt=isolate"));
}
END_TEST

START_TEST(test_pack_moves_core_together)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 2, 2, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    const vpPlan *plan;
    const int cpus[] = {0, 16, 1, 17};
    const Load loads[] = {{"pk", 0, 0.5, 0.01, 300},
                          {"pk", 1, 0.5, 0.45, 300},
                          {"pk", 2, 0.5, 0.01, 300},
                          {"pk", 3, 0.5, 0.01, 300}};
    double busy[32];

    addPlan(ledger, makePlan(topo, "pk", "pack", NULL, cpus, 4, NULL, 0));
    fillBusy(busy, 32, ledger, loads, 4);
    feed(p, ledger, loads, 4, busy, 32, 6);
    moves = pass(rb, p, ledger, 6 * SEC, NULL);
    /* vCPUs 0 and 1 (guest core 0) move together from core 0 to core 2, in order */
    ck_assert_uint_eq(moves->len, 2);
    plan = vpLedgerLookup(ledger, "pk");
    ck_assert_int_eq(plan->vcpu_pu[0], 2);
    ck_assert_int_eq(plan->vcpu_pu[1], 18);
    ck_assert_int_eq(plan->vcpu_pu[2], 1);
    ck_assert_int_eq(plan->vcpu_pu[3], 17);
    ck_assert_int_eq(plan->level, VP_LEVEL_L3);
}
END_TEST

START_TEST(test_spread_sibling_tiers)
{
    /* every core of the NUMA node holds someone: only siblings are left */
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int a[] = {0, 1}, b[] = {2}, c[] = {3};
    const Load loads[] = {{"a", 0, 0.5, 0.4, 300},
                          {"a", 1, 0.5, 0.01, 300},
                          {"b", 0, 0.5, 0.01, 300},
                          {"c", 0, 0.5, 0.01, 300}};
    double busy[8];

    addPlan(ledger, makePlan(topo, "a", "spread", NULL, a, 2, NULL, 0));
    addPlan(ledger, makePlan(topo, "b", "spread", "grp", b, 1, NULL, 0));
    addPlan(ledger, makePlan(topo, "c", "spread", NULL, c, 1, NULL, 0));
    fillBusy(busy, 8, ledger, loads, 4);
    feed(p, ledger, loads, 4, busy, 8, 6);
    moves = pass(rb, p, ledger, 6 * SEC, notes);
    printNotes(notes);
    /* CPU 4 is the hot PU's own sibling (host load next door), CPU 5 sits next to its own
     * vCPU 1: that one */
    ck_assert_uint_eq(moves->len, 1);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 5);
    ck_assert_ptr_nonnull(
        strstr(((vpMove *)g_ptr_array_index(moves, 0))->reason, "next to its own domain"));
}
END_TEST

START_TEST(test_spread_never_next_to_stranger)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 2, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int a[] = {0}, b[] = {1};
    const Load loads[] = {{"a", 0, 0.5, 0.4, 300}, {"b", 0, 0.5, 0.01, 300}};
    double busy[4];

    addPlan(ledger, makePlan(topo, "a", "spread", "g1", a, 1, NULL, 0));
    addPlan(ledger, makePlan(topo, "b", "spread", "g2", b, 1, NULL, 0));
    fillBusy(busy, 4, ledger, loads, 2);
    feed(p, ledger, loads, 2, busy, 4, 6);
    moves = pass(rb, p, ledger, 6 * SEC, notes);
    printNotes(notes);
    /* CPU 3 is free and idle but next to b of another trust group; CPU 2 is next to the
     * hot CPU's host load */
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(notesHave(notes, "no idle target"));

    /* same trust group: allowed */
    vpLedgerRemove(ledger, "b");
    addPlan(ledger, makePlan(topo, "b", "spread", "g1", b, 1, NULL, 0));
    g_ptr_array_unref(moves);
    moves = pass(rb, p, ledger, 7 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 3);
}
END_TEST

/* A vCPU that does not wait but shares its core with host load on the sibling. */
static GPtrArray *
corunCase(const char *smt, bool idle_core_left, GPtrArray *notes)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    const int a[] = {0}, b[] = {1}, c[] = {2}, d[] = {3};
    const Load loads[] = {{"a", 0, 0.6, 0.01, 300},
                          {"b", 0, 0.5, 0.01, 300},
                          {"c", 0, 0.5, 0.01, 300},
                          {"d", 0, 0.5, 0.01, 300}};
    double busy[8];
    int n = idle_core_left ? 3 : 4;

    addPlan(ledger, makePlan(topo, "a", smt, NULL, a, 1, NULL, 0));
    addPlan(ledger, makePlan(topo, "b", "spread", NULL, b, 1, NULL, 0));
    addPlan(ledger, makePlan(topo, "c", "share", NULL, c, 1, NULL, 0));
    if (!idle_core_left)
        addPlan(ledger, makePlan(topo, "d", "share", NULL, d, 1, NULL, 0));
    fillBusy(busy, 8, ledger, loads, n);
    busy[4] = 0.8; /* a host task on CPU 0's sibling */
    feed(p, ledger, loads, n, busy, 8, 6);
    ck_assert(vpPressureCoreContended(p, 0));
    ck_assert(!vpPressurePUHot(p, 0));
    return pass(rb, p, ledger, 6 * SEC, notes);
}

START_TEST(test_corun_moves_to_whole_core)
{
    g_autoptr(GPtrArray) notes = notesNew();
    g_autoptr(GPtrArray) moves = corunCase("spread", true, notes);

    ck_assert_uint_eq(moves->len, 1);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 3);
    ck_assert_ptr_nonnull(
        strstr(((vpMove *)g_ptr_array_index(moves, 0))->reason, "co-runs with foreign load"));
    g_ptr_array_unref(moves);

    /* share may sit next to share domains, but leaving a stranger for another one gains
     * nothing: no move */
    moves = corunCase("share", false, notes);
    printNotes(notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(notesHave(notes, "no idle target"));
}
END_TEST

/* Two L3s of 4 cores; domain "chat" fills 3 cores of L3 0 plus one more vCPU on the fourth;
 * an idle core exists only in L3 1. */
static void
coupledCase(double wakeups, bool expect_move)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 2, 4, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int chat[] = {0, 1, 2, 3}, rest[] = {4, 5, 6};
    Load loads[] = {{"chat", 0, 0.5, 0.4, wakeups},  {"chat", 1, 0.5, 0.01, wakeups},
                    {"chat", 2, 0.5, 0.01, wakeups}, {"chat", 3, 0.5, 0.01, wakeups},
                    {"rest", 0, 0.5, 0.01, 100},     {"rest", 1, 0.5, 0.01, 100},
                    {"rest", 2, 0.5, 0.01, 100}};
    double busy[8];

    addPlan(ledger, makePlan(topo, "chat", "spread", NULL, chat, 4, NULL, 0));
    addPlan(ledger, makePlan(topo, "rest", "spread", NULL, rest, 3, NULL, 0));
    fillBusy(busy, 8, ledger, loads, 7);
    feed(p, ledger, loads, 7, busy, 8, 6);
    moves = pass(rb, p, ledger, 6 * SEC, notes);
    printNotes(notes);
    if (expect_move) {
        ck_assert_uint_eq(moves->len, 1);
        ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 7);
    } else {
        ck_assert_uint_eq(moves->len, 0);
        ck_assert(notesHave(notes, "wake-coupled"));
    }
}

START_TEST(test_wake_coupled_stays_in_l3)
{
    coupledCase(5000, false);
    coupledCase(200, true);
}
END_TEST

START_TEST(test_cap_per_pass)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 8, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpRebalanceConfig rcfg;
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = NULL;
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int cpus[] = {0, 1, 2};
    const Load loads[] = {
        {"v", 0, 0.5, 0.3, 300}, {"v", 1, 0.5, 0.5, 300}, {"v", 2, 0.5, 0.4, 300}};
    double busy[8];

    vpRebalanceConfigInit(&rcfg);
    rcfg.max_moves = 2;
    rb = vpRebalancerNew(&rcfg);
    addPlan(ledger, makePlan(topo, "v", "spread", NULL, cpus, 3, NULL, 0));
    fillBusy(busy, 8, ledger, loads, 3);
    feed(p, ledger, loads, 3, busy, 8, 6);
    moves = pass(rb, p, ledger, 6 * SEC, notes);
    printNotes(notes);
    /* the most delayed first: vCPU 1, then vCPU 2; vCPU 0 waits for a later pass */
    ck_assert_uint_eq(moves->len, 2);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->vcpu, 1);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 1))->vcpu, 2);
    ck_assert(notesHave(notes, "vCPU 0 of 'v' waits for a later pass: 2 moves per pass"));
}
END_TEST

/* One vCPU that keeps waiting wherever it goes (open loop) on CPU 0 of 8 idle cores; CPU 0
 * turns idle once it has left. Returns the times (s) of its moves, checks their targets. */
static GArray *
chase(unsigned return_quiet, unsigned *returns)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 8, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpRebalanceConfig rcfg;
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int cpus[] = {0};
    const Load loads[] = {{"v", 0, 0.5, 0.4, 300}};
    GArray *times = g_array_new(FALSE, FALSE, sizeof(int));
    double busy[8];

    vpRebalanceConfigInit(&rcfg);
    rcfg.return_quiet = return_quiet;
    rb = vpRebalancerNew(&rcfg);
    addPlan(ledger, makePlan(topo, "v", "spread", NULL, cpus, 1, NULL, 0));
    *returns = 0;
    for (int t = 1; t <= 300; t++) {
        g_autoptr(GPtrArray) m = NULL;

        fillBusy(busy, 8, ledger, loads, 1);
        feed(p, ledger, loads, 1, busy, 8, 1);
        g_ptr_array_set_size(notes, 0);
        m = pass(rb, p, ledger, t * SEC, notes);
        for (guint k = 0; k < m->len; k++) {
            const vpMove *mv = g_ptr_array_index(m, k);

            g_array_append_val(times, t);
            *returns += mv->to == 0;
        }
        if (!m->len && vpPressurePUHot(p, puOf(topo, vpLedgerLookup(ledger, "v")->vcpu_pu[0])))
            ck_assert(notesHave(notes, "moved recently and stays"));
    }
    ck_assert_uint_eq(vpRebalancerMoves(rb, "v", 0), times->len);
    vpRebalancerForgetDomain(rb, "v");
    ck_assert_uint_eq(vpRebalancerMoves(rb, "v", 0), 0);
    return times;
}

START_TEST(test_residency_and_memory)
{
    unsigned returns;
    GArray *t = chase(1000, &returns);

    /* hot after 5 intervals; then 60 s, then 120 s (backoff), then 240 s */
    ck_assert_uint_eq(t->len, 3);
    ck_assert_int_eq(g_array_index(t, int, 0), 5);
    ck_assert_int_eq(g_array_index(t, int, 1), 65);
    ck_assert_int_eq(g_array_index(t, int, 2), 185);
    /* CPU 0 is idle and the lowest whole idle core, yet never taken back: memory */
    ck_assert_uint_eq(returns, 0);
    g_array_free(t, TRUE);

    /* once the PU it left has been idle for return_quiet intervals, it may go back */
    t = chase(30, &returns);
    ck_assert_uint_eq(t->len, 3);
    ck_assert_uint_ge(returns, 1);
    g_array_free(t, TRUE);
}
END_TEST

START_TEST(test_off_and_pinned_never_move)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 8, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int a[] = {0}, b[] = {1};
    const Load loads[] = {{"off", 0, 0.5, 0.4, 300}, {"own", 0, 0.5, 0.4, 300}};
    vpPlan *plan;
    double busy[8];

    plan = makePlan(topo, "off", "spread", NULL, a, 1, NULL, 0);
    plan->policy.rebalance = VP_REBALANCE_OFF;
    addPlan(ledger, plan);
    plan = makePlan(topo, "own", "share", NULL, b, 1, NULL, 0);
    plan->how = VP_HOW_PINNED;
    addPlan(ledger, plan);
    fillBusy(busy, 8, ledger, loads, 2);
    feed(p, ledger, loads, 2, busy, 8, 10);
    moves = pass(rb, p, ledger, 10 * SEC, notes);
    printNotes(notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(notesHave(notes, "rebalance=off"));
    ck_assert(notesHave(notes, "pins of its own"));
}
END_TEST

START_TEST(test_apply_rejects_stale_move)
{
    g_autoptr(vpTopology) topo = buildTopo(1, 1, 1, 4, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(GPtrArray) moves = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree);
    g_autoptr(GError) err = NULL;
    vpMove *m = g_new0(vpMove, 1);
    const int a[] = {0}, b[] = {1};

    addPlan(ledger, makePlan(topo, "a", "spread", NULL, a, 1, NULL, 0));
    addPlan(ledger, makePlan(topo, "b", "spread", NULL, b, 1, NULL, 0));
    m->domain = g_strdup("a");
    m->vcpu = 0;
    m->from = 2; /* not where it is */
    m->to = 3;
    m->reason = g_strdup("test");
    g_ptr_array_add(moves, m);
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "does not match the ledger"));
    g_clear_error(&err);

    /* onto a PU someone holds: the ledger refuses and nothing changes */
    m->from = 0;
    m->to = 1;
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_int_eq(vpLedgerLookup(ledger, "a")->vcpu_pu[0], 0);
    g_clear_error(&err);

    g_free(m->domain);
    m->domain = g_strdup("nobody");
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "'nobody'"));
}
END_TEST

/* The values vcpuplaced.conf sets (plugin/conf reads the file). */
START_TEST(test_config)
{
    vpRebalanceConfig cfg;
    g_autoptr(GError) err = NULL;

    vpRebalanceConfigInit(&cfg);
    ck_assert(vpRebalanceConfigValidate(&cfg, NULL));
    cfg.max_moves = 0;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "max_moves=0"));
    g_clear_error(&err);
    cfg.max_moves = 4;
    cfg.memory_ns = 10 * SEC;
    cfg.min_residency_ns = 20 * SEC;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "memory=10s"));
    g_clear_error(&err);
    cfg.memory_ns = 300 * SEC;
    cfg.coupled_wakeups = 0;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "coupled_wakeups=0"));
}
END_TEST

/* --- random ledgers: whatever the situation, a move keeps the policy --- */

static bool
coreHeldByOthers(const vpLedger *ledger, const vpTopology *topo, int c, const char *group,
                 bool strict)
{
    const vpCore *core = vpTopologyCore(topo, c);

    for (int i = 0; i < core->npus; i++) {
        vpOwner o = vpLedgerOwner(ledger, core->pus[i]);
        const char *g = vpLedgerGroupAt(ledger, core->pus[i]);

        if (o.domain && (strict || !group || !g || strcmp(g, group) != 0))
            return true;
    }
    return false;
}

/* A plausible ledger built without the placer: whole cores for isolate/pack, free PUs on
 * cores without strangers for spread, any free PU for share. */
static void
randomLedger(GRand *r, const vpTopology *topo, vpLedger *ledger)
{
    static const char *smts[] = {"isolate", "pack", "spread", "share"};
    static const char *groups[] = {NULL, "g1", "g2"};
    int ncores = vpTopologyNCores(topo);
    int ndom = g_rand_int_range(r, 2, 9);

    for (int d = 0; d < ndom; d++) {
        g_autofree char *name = g_strdup_printf("vm%d", d);
        const char *smt = smts[g_rand_int_range(r, 0, 4)];
        const char *group = groups[g_rand_int_range(r, 0, 3)];
        unsigned want = g_rand_int_range(r, 1, 5);
        int cpus[16], res[16];
        unsigned n = 0, nres = 0;
        int start = g_rand_int_range(r, 0, ncores);
        vpPlan *plan;

        for (int k = 0; k < ncores && n < want; k++) {
            int c = (start + k) % ncores;
            const vpCore *core = vpTopologyCore(topo, c);
            bool whole = !coreHeldByOthers(ledger, topo, c, NULL, true);

            for (unsigned i = 0; i < n; i++)
                whole &= coreOfOS(topo, cpus[i]) != c;
            if (!strcmp(smt, "isolate") || !strcmp(smt, "pack")) {
                if (!whole)
                    continue;
                for (int i = 0; i < core->npus; i++) {
                    unsigned os = vpTopologyPU(topo, core->pus[i])->os;

                    if ((!strcmp(smt, "pack") || i == 0) && n < want)
                        cpus[n++] = os;
                    else
                        res[nres++] = os;
                }
            } else {
                if (!strcmp(smt, "spread") && coreHeldByOthers(ledger, topo, c, group, false))
                    continue;
                for (int i = 0; i < core->npus && n < want; i++) {
                    unsigned os = vpTopologyPU(topo, core->pus[i])->os;
                    bool used = !vpLedgerPUFree(ledger, core->pus[i]);

                    for (unsigned j = 0; j < n; j++)
                        used |= cpus[j] == (int)os;
                    if (!used) {
                        cpus[n++] = os;
                        if (!strcmp(smt, "spread"))
                            break;
                    }
                }
            }
        }
        if (n == 0)
            continue;
        plan = makePlan(topo, name, smt, group, cpus, n, res, nres);
        /* as the placer would: locality=l3 only for a domain within one L3 */
        if (plan->level == VP_LEVEL_L3 && g_rand_int_range(r, 0, 3) == 0)
            plan->policy.locality = VP_LOCALITY_L3;
        if (g_rand_int_range(r, 0, 10) == 0)
            plan->policy.rebalance = VP_REBALANCE_OFF;
        if (g_rand_int_range(r, 0, 10) == 0)
            plan->how = VP_HOW_PINNED;
        addPlan(ledger, plan);
    }
}

START_TEST(test_random_ledgers_keep_policy)
{
    static const int shapes[][5] = {
        {1, 2, 2, 4, 2}, {2, 1, 2, 3, 2}, {1, 1, 2, 4, 1}, {1, 2, 1, 4, 4}, {1, 1, 1, 3, 2},
    };
    unsigned total = 0;

    for (int seed = 1; seed <= 300; seed++) {
        g_autoptr(GRand) r = g_rand_new_with_seed(seed);
        const int *s = shapes[seed % G_N_ELEMENTS(shapes)];
        g_autoptr(vpTopology) topo = buildTopo(s[0], s[1], s[2], s[3], s[4]);
        g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
        g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
        vpRebalanceConfig rcfg;
        g_autoptr(vpRebalancer) rb = NULL;
        g_autoptr(GPtrArray) names = NULL;
        int npus = vpTopologyNPUs(topo);
        g_autofree double *busy = g_new(double, npus);
        g_autoptr(GArray) loads = g_array_new(FALSE, FALSE, sizeof(Load));

        vpRebalanceConfigInit(&rcfg);
        rcfg.max_moves = 100;
        rb = vpRebalancerNew(&rcfg);
        randomLedger(r, topo, ledger);
        names = vpLedgerDomains(ledger);
        for (int c = 0; c < npus; c++)
            busy[c] = g_rand_boolean(r) ? 0.01 : 0.8;
        for (guint i = 0; i < names->len; i++) {
            const vpPlan *plan = vpLedgerLookup(ledger, g_ptr_array_index(names, i));
            double wake = g_rand_boolean(r) ? 3000 : 200;

            for (unsigned v = 0; v < plan->nvcpus; v++) {
                bool victim = g_rand_int_range(r, 0, 3) == 0;
                Load l = {g_intern_string(plan->domain), v, g_rand_double_range(r, 0.2, 0.9),
                          victim ? g_rand_double_range(r, 0.2, 0.6) : 0.01, wake};

                g_array_append_val(loads, l);
                busy[plan->vcpu_pu[v]] = victim ? 1.0 : l.run;
            }
        }
        for (int round = 0; round < 3; round++) {
            g_autoptr(GPtrArray) moves = NULL;

            feed(p, ledger, (Load *)loads->data, loads->len, busy, npus, 6);
            moves = pass(rb, p, ledger, (round + 1) * 100 * SEC, NULL);
            total += moves->len;
        }
    }
    g_print("random ledgers: %u moves checked\n", total);
    ck_assert_uint_gt(total, 100);
}
END_TEST

static Suite *
rebalanceSuite(void)
{
    Suite *s = suite_create("rebalance");
    TCase *replayCase = tcase_create("replay");
    TCase *cases = tcase_create("cases");

    tcase_set_timeout(replayCase, 120);
    tcase_add_test(replayCase, test_hotspot_moved_within_persistence);
    tcase_add_test(replayCase, test_balanced_no_move);
    tcase_add_test(replayCase, test_oscillating_no_pingpong);
    suite_add_tcase(s, replayCase);

    tcase_set_timeout(cases, 120);
    tcase_add_test(cases, test_isolate_moves_whole_core);
    tcase_add_test(cases, test_pack_moves_core_together);
    tcase_add_test(cases, test_spread_sibling_tiers);
    tcase_add_test(cases, test_spread_never_next_to_stranger);
    tcase_add_test(cases, test_wake_coupled_stays_in_l3);
    tcase_add_test(cases, test_corun_moves_to_whole_core);
    tcase_add_test(cases, test_cap_per_pass);
    tcase_add_test(cases, test_residency_and_memory);
    tcase_add_test(cases, test_off_and_pinned_never_move);
    tcase_add_test(cases, test_apply_rejects_stale_move);
    tcase_add_test(cases, test_config);
    tcase_add_test(cases, test_random_ledgers_keep_policy);
    suite_add_tcase(s, cases);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(rebalanceSuite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
