/*
 * The ledger: one owner per PU whatever the order of adds, replaces and removes; a plan
 * that collides, names a CPU the topology lacks or gives a PU twice changes nothing; the
 * file round-trips, is written 0600 and atomically (a save that fails midway leaves the
 * old file), and a corrupt, truncated or foreign file is an error naming it.
 */
#include "core/model/ledger.h"
#include "host/ledgerfile.h"
#include "checkmain.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* 2 packages x 2 L3 x 2 cores x 2 threads, the sibling of CPU n is n+8; CPU 16 offline. */
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
    vpTopologySetSource(topo, "test-16");
    ck_assert_msg(vpTopologyFinalize(topo, NULL, NULL, &err), "%s", err ? err->message : "");
    return topo;
}

/* A plan with vCPUs on cpus (-1 ends the list), and reserved / emulator CPU lists. */
static vpPlan *
makePlan(const char *name, const char *group, const int *cpus, const char *reserved,
         const char *emulator)
{
    unsigned n = 0;
    vpPlan *plan;

    while (cpus[n] >= 0)
        n++;
    plan = vpPlanNew(name, n);
    for (unsigned i = 0; i < n; i++)
        plan->vcpu_pu[i] = cpus[i];
    plan->policy.group = g_strdup(group);
    if (reserved)
        hwloc_bitmap_list_sscanf(plan->reserved, reserved);
    if (emulator)
        hwloc_bitmap_list_sscanf(plan->emulator, emulator);
    return plan;
}

static char *
replaceAll(const char *text, const char *from, const char *to)
{
    g_auto(GStrv) parts = g_strsplit(text, from, -1);

    ck_assert_msg(parts[0] && parts[1], "'%s' not in the test text", from);
    return g_strjoinv(to, parts);
}

static int
pu(const vpTopology *topo, unsigned os)
{
    int idx = vpTopologyPUByOS(topo, os);

    ck_assert_int_ge(idx, 0);
    return idx;
}

START_TEST(test_add_owners)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = makePlan("web", "blue", (int[]){0, 1, -1}, "8,9", NULL);
    g_autoptr(GError) err = NULL;
    vpOwner o;

    ck_assert_ptr_eq(vpLedgerTopology(ledger), topo);
    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    ck_assert(vpLedgerCheck(ledger, NULL));
    ck_assert_uint_eq(vpLedgerNDomains(ledger), 1);

    o = vpLedgerOwner(ledger, pu(topo, 1));
    ck_assert_str_eq(o.domain, "web");
    ck_assert_int_eq(o.kind, VP_OWN_VCPU);
    ck_assert_int_eq(o.vcpu, 1);
    o = vpLedgerOwner(ledger, pu(topo, 8));
    ck_assert_int_eq(o.kind, VP_OWN_RESERVED);
    ck_assert_int_eq(o.vcpu, -1);
    ck_assert_str_eq(
        vpLedgerLookup(ledger, vpLedgerOwner(ledger, pu(topo, 9)).domain)->policy.group, "blue");
    ck_assert(!vpLedgerPUFree(ledger, pu(topo, 9)));
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 2)));
    o = vpLedgerOwner(ledger, pu(topo, 2));
    ck_assert_ptr_null(o.domain);
    ck_assert_int_eq(o.kind, VP_OWN_NONE);
    /* Out-of-range indexes are free and ownerless, not a crash. */
    ck_assert_ptr_null(vpLedgerOwner(ledger, 999).domain);
    ck_assert(!vpLedgerPUFree(ledger, -1));

    /* The ledger keeps its own copy. */
    plan->vcpu_pu[0] = 5;
    ck_assert_int_eq(vpLedgerLookup(ledger, "web")->vcpu_pu[0], 0);
    ck_assert_ptr_null(vpLedgerLookup(ledger, "nope"));
    ck_assert_str_eq(vpOwnKindName(VP_OWN_EMULATOR), "emulator");
}
END_TEST

START_TEST(test_emulator_kind)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    /* Dedicated: the emulator's set is inside reserved. */
    g_autoptr(vpPlan) dedicated = makePlan("a", NULL, (int[]){0, -1}, "8,3", "3");
    /* Floating over the domain's PUs: reserved siblings stay reserved. */
    g_autoptr(vpPlan) floating = makePlan("b", NULL, (int[]){1, -1}, "9", "1,9");

    ck_assert(vpLedgerAdd(ledger, dedicated, NULL));
    ck_assert(vpLedgerAdd(ledger, floating, NULL));
    ck_assert_int_eq(vpLedgerOwner(ledger, pu(topo, 3)).kind, VP_OWN_EMULATOR);
    ck_assert_int_eq(vpLedgerOwner(ledger, pu(topo, 8)).kind, VP_OWN_RESERVED);
    ck_assert_int_eq(vpLedgerOwner(ledger, pu(topo, 9)).kind, VP_OWN_RESERVED);
    ck_assert(vpLedgerCheck(ledger, NULL));
}
END_TEST

START_TEST(test_conflict_changes_nothing)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("a", NULL, (int[]){0, 1, -1}, "8", NULL);
    g_autoptr(vpPlan) b = makePlan("b", NULL, (int[]){2, 3, -1}, "8", NULL);
    g_autoptr(GError) err = NULL;

    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert(!vpLedgerAdd(ledger, b, &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_REFUSED));
    ck_assert_str_eq(err->message,
                     "domain 'b': CPU 8 for a reserved sibling is held by domain 'a' for a "
                     "reserved sibling");
    /* b's vCPUs, checked before the collision was found, were not recorded. */
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 2)));
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 3)));
    ck_assert_ptr_null(vpLedgerLookup(ledger, "b"));
    ck_assert(vpLedgerCheck(ledger, NULL));
    g_clear_error(&err);

    ck_assert(!vpLedgerAdd(ledger, a, &err));
    ck_assert_str_eq(err->message, "domain 'a' is already in the ledger");
}
END_TEST

START_TEST(test_bad_plans)
{
    static const struct {
        int cpus[3];
        const char *reserved;
        const char *message;
    } cases[] = {
        {{0, 99, -1}, NULL, "domain 'x': vCPU 1 is on CPU 99, which the topology (test-16) lacks"},
        {{0, 16, -1},
         NULL,
         "domain 'x': vCPU 1 is on CPU 16, which the topology (test-16) has offline"},
        {{0, -1},
         "40",
         "domain 'x': a reserved sibling is on CPU 40, which the topology (test-16) lacks"},
        {{4, 4, -1}, NULL, "domain 'x': CPU 4 is given twice, to vCPU 0 and to vCPU 1"},
        {{4, -1}, "4", "domain 'x': CPU 4 is given twice, to vCPU 0 and to a reserved sibling"},
    };
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(vpPlan) plan = makePlan("x", NULL, cases[i].cpus, cases[i].reserved, NULL);
        g_autoptr(GError) err = NULL;

        ck_assert(!vpLedgerAdd(ledger, plan, &err));
        ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
        ck_assert_str_eq(err->message, cases[i].message);
        ck_assert_uint_eq(vpLedgerNDomains(ledger), 0);
        for (int p = 0; p < vpTopologyNPUs(topo); p++)
            ck_assert(vpLedgerPUFree(ledger, p));
    }
}
END_TEST

START_TEST(test_remove_and_replace)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("a", NULL, (int[]){0, 1, -1}, NULL, NULL);
    g_autoptr(vpPlan) b = makePlan("b", "g", (int[]){2, -1}, NULL, NULL);
    g_autoptr(vpPlan) a_moved = makePlan("a", NULL, (int[]){1, 4, -1}, NULL, NULL);
    g_autoptr(vpPlan) a_onto_b = makePlan("a", NULL, (int[]){2, 5, -1}, NULL, NULL);
    g_autoptr(vpPlan) c = makePlan("c", NULL, (int[]){7, -1}, NULL, NULL);
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(GError) err = NULL;

    ck_assert(vpLedgerAdd(ledger, b, NULL));
    ck_assert(vpLedgerAdd(ledger, a, NULL));

    /* A move may reuse the domain's own PUs (vCPU 1 stays on CPU 1, vCPU 0 leaves 0). */
    ck_assert_msg(vpLedgerReplace(ledger, a_moved, &err), "%s", err ? err->message : "");
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 0)));
    ck_assert_int_eq(vpLedgerOwner(ledger, pu(topo, 4)).vcpu, 1);
    ck_assert_int_eq(vpLedgerOwner(ledger, pu(topo, 1)).vcpu, 0);

    /* A replace that collides leaves the old plan in force. */
    ck_assert(!vpLedgerReplace(ledger, a_onto_b, &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_REFUSED));
    ck_assert_int_eq(vpLedgerLookup(ledger, "a")->vcpu_pu[1], 4);
    ck_assert_str_eq(vpLedgerOwner(ledger, pu(topo, 4)).domain, "a");
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 5)));
    ck_assert_str_eq(vpLedgerOwner(ledger, pu(topo, 2)).domain, "b");
    ck_assert(vpLedgerCheck(ledger, NULL));

    /* Replacing a domain the ledger does not hold records it. */
    ck_assert(vpLedgerReplace(ledger, c, NULL));
    names = vpLedgerDomains(ledger);
    ck_assert_uint_eq(names->len, 3);
    ck_assert_str_eq(names->pdata[0], "a");
    ck_assert_str_eq(names->pdata[1], "b");
    ck_assert_str_eq(names->pdata[2], "c");

    ck_assert(vpLedgerRemove(ledger, "a"));
    ck_assert(!vpLedgerRemove(ledger, "a"));
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 1)));
    ck_assert(vpLedgerPUFree(ledger, pu(topo, 4)));
    ck_assert_uint_eq(vpLedgerNDomains(ledger), 2);
    ck_assert(vpLedgerCheck(ledger, NULL));
    /* The freed PUs can be taken again. */
    ck_assert(vpLedgerAdd(ledger, a, NULL));
}
END_TEST

static vpLedger *
threeDomains(const vpTopology *topo)
{
    vpLedger *ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("zeta", NULL, (int[]){0, 1, -1}, "8,9", NULL);
    g_autoptr(vpPlan) b = makePlan("alpha", "blue", (int[]){4, 12, -1}, "5", "5");
    g_autoptr(vpPlan) c = makePlan("mid", NULL, (int[]){2, -1, -1}, NULL, NULL);

    b->degraded = true;
    b->degraded_reason = g_strdup("emulator=dedicated relaxed");
    c->how = VP_HOW_PINNED;
    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert(vpLedgerAdd(ledger, b, NULL));
    ck_assert(vpLedgerAdd(ledger, c, NULL));
    return ledger;
}

static char *
ledgerText(const vpLedger *ledger)
{
    g_autoptr(JsonNode) node = vpLedgerToJson(ledger);

    return json_to_string(node, FALSE);
}

/* The file's text, without a file: what the adapter writes reads back the same. */
/* A save's copy of the plans gives the text of the ledger it was taken from, whatever
 * the ledger does after the copy. */
START_TEST(test_plans_copy_text)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *want = vpLedgerToText(ledger);
    g_autoptr(GPtrArray) plans = vpLedgerPlansCopy(ledger);
    g_autofree char *got = NULL;

    ck_assert_uint_eq(plans->len, 3);
    ck_assert(vpLedgerRemove(ledger, ((const vpPlan *)plans->pdata[0])->domain));
    got = vpLedgerPlansToText(topo, plans);
    ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(test_text_round_trip)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *text = vpLedgerToText(ledger);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) back = vpLedgerFromText(topo, text, strlen(text), "mem", &err);
    g_autofree char *want = ledgerText(ledger);
    g_autofree char *got = NULL;

    ck_assert(g_str_has_suffix(text, "}\n"));
    ck_assert_msg(back, "%s", err ? err->message : "");
    got = ledgerText(back);
    ck_assert_str_eq(got, want);

    g_clear_error(&err);
    ck_assert_ptr_null(vpLedgerFromText(topo, text, strlen(text) / 2, "mem", &err));
    ck_assert_ptr_nonnull(strstr(err->message, "ledger mem is corrupt"));
}
END_TEST

START_TEST(test_json_round_trip)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *text = ledgerText(ledger);
    g_autoptr(JsonNode) node = json_from_string(text, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) back = vpLedgerFromJson(topo, node, &err);
    g_autofree char *again = NULL;
    const char *alpha, *mid, *zeta;

    ck_assert_msg(back, "%s", err ? err->message : "");
    again = ledgerText(back);
    ck_assert_str_eq(again, text);
    ck_assert(g_str_has_prefix(text, "{\"format\":1,\"domains\":[{\"domain\":\"alpha\""));
    /* Domains sorted by name, whatever the order they were added in. */
    alpha = strstr(text, "\"domain\":\"alpha\"");
    mid = strstr(text, "\"domain\":\"mid\"");
    zeta = strstr(text, "\"domain\":\"zeta\"");
    ck_assert(alpha && mid && zeta && alpha < mid && mid < zeta);
    ck_assert_int_eq(vpLedgerOwner(back, pu(topo, 5)).kind, VP_OWN_EMULATOR);
    ck_assert(vpLedgerCheck(back, NULL));
}
END_TEST

/* A copy holds the same and is independent: what changes in one leaves the other. */
START_TEST(test_copy)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) copy = vpLedgerCopy(ledger, topo, &err);
    g_autofree char *text = ledgerText(ledger);
    g_autofree char *same = NULL;
    g_autofree char *still = NULL;

    ck_assert_msg(copy, "%s", err ? err->message : "");
    same = ledgerText(copy);
    ck_assert_str_eq(same, text);
    ck_assert(vpLedgerRemove(copy, "alpha"));
    ck_assert_ptr_nonnull(vpLedgerLookup(ledger, "alpha"));
    still = ledgerText(ledger);
    ck_assert_str_eq(still, text);
    ck_assert(vpLedgerCheck(copy, NULL) && vpLedgerCheck(ledger, NULL));
}
END_TEST

/* A ledger file as vcpuplaced wrote it before format 1 ("version", "pu", -1 for none): an
 * upgrade loads it whole and the next save writes today's spelling. */
START_TEST(test_json_legacy)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *text = ledgerText(ledger);
    g_autoptr(GString) old = g_string_new(text);
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) back = NULL;
    g_autofree char *again = NULL;

    ck_assert_uint_eq(g_string_replace(old, "{\"format\":1,", "{\"version\":1,", 1), 1);
    ck_assert_uint_gt(g_string_replace(old, "\"cpu\":", "\"pu\":", 0), 0);
    g_string_replace(old, "\"level_index\":null", "\"level_index\":-1", 0);
    node = json_from_string(old->str, NULL);
    back = vpLedgerFromJson(topo, node, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    again = ledgerText(back);
    ck_assert_str_eq(again, text);
}
END_TEST

static const struct {
    const char *text;
    const char *message;
} bad_ledgers[] = {
    {"{\"format\":2,\"domains\":[]}", "format=2 is not supported (this build reads format 1)"},
    {"{\"version\":2,\"domains\":[]}", "version=2 is not supported (this build reads format 1)"},
    {"{\"domains\":[]}", "format=missing is not supported (this build reads format 1)"},
    {"{\"format\":1,\"version\":1,\"domains\":[]}", "unknown key 'version' in ledger"},
    {"{\"version\":1}", "domains is missing or not an array"},
    {"{\"version\":1,\"domains\":{}}", "domains is missing or not an array"},
    {"{\"version\":1,\"domains\":[],\"x\":0}", "unknown key 'x' in ledger"},
    {"[1]", "ledger is not a JSON object"},
    {"{\"version\":1,\"domains\":[7]}", "domains[0]: plan is not a JSON object"},
};

START_TEST(test_json_bad)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(JsonNode) node = json_from_string(bad_ledgers[_i].text, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) ledger = vpLedgerFromJson(topo, node, &err);

    ck_assert_ptr_null(ledger);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, bad_ledgers[_i].message);
}
END_TEST

/* A ledger written for a bigger machine, or with two domains on one PU, is refused whole:
 * a silently dropped domain would let the placer hand its PUs out again. */
START_TEST(test_json_foreign_or_double_booked)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpLedger) other = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("a", NULL, (int[]){3, -1}, NULL, NULL);
    g_autoptr(vpPlan) b = makePlan("b", NULL, (int[]){3, -1}, NULL, NULL);
    g_autofree char *ta = NULL;
    g_autofree char *tb = NULL;
    g_autofree char *both = NULL;
    g_autofree char *foreign = NULL;
    g_autoptr(JsonNode) n1 = NULL;
    g_autoptr(JsonNode) n2 = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) loaded = NULL;

    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert(vpLedgerAdd(other, b, NULL));
    ta = ledgerText(ledger);
    tb = ledgerText(other);
    /* Splice b's plan into a's ledger. */
    both = g_strdup_printf("%.*s,%s", (int)(strlen(ta) - 2), ta, strstr(tb, "{\"domain\""));
    n1 = json_from_string(both, NULL);
    ck_assert_ptr_nonnull(n1);
    loaded = vpLedgerFromJson(topo, n1, &err);
    ck_assert_ptr_null(loaded);
    ck_assert_str_eq(err->message, "domains[1]: domain 'b': CPU 3 for vCPU 0 is held by domain "
                                   "'a' for vCPU 0");
    g_clear_error(&err);

    foreign = replaceAll(ta, "\"cpu\":3", "\"cpu\":200");
    n2 = json_from_string(foreign, NULL);
    loaded = vpLedgerFromJson(topo, n2, &err);
    ck_assert_ptr_null(loaded);
    ck_assert_str_eq(err->message, "domains[0]: domain 'a': vCPU 0 is on CPU 200, which the "
                                   "topology (test-16) lacks");
}
END_TEST

/* The live XML's memory corrects the ledger's: an adopted plan (no memory) gains it on its
 * vCPUs' nodes, a live strict nodeset moves it, an agreeing ledger is left alone, and cells
 * on pages of several sizes keep each holding's size while the total scales. */
/* The generation moves with every kind of change and only with a change, and a new ledger
 * (a copy, a reload's) never shows another's number: the capacity gauges' cache relies on it. */
START_TEST(test_generation)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("a", NULL, (int[]){0, 1, -1}, NULL, NULL);
    g_autoptr(vpPlan) a_moved = makePlan("a", NULL, (int[]){1, 4, -1}, NULL, NULL);
    g_autoptr(vpPlan) b = makePlan("b", NULL, (int[]){2, -1}, NULL, NULL);
    g_autoptr(vpPlan) on_b = makePlan("c", NULL, (int[]){2, -1}, NULL, NULL);
    g_autoptr(vpPlan) a_onto_b = makePlan("a", NULL, (int[]){2, 5, -1}, NULL, NULL);
    g_autoptr(vpRequest) live = vpRequestNew("a", 2);
    g_autoptr(vpLedger) copy = NULL;
    g_autofree char *reconciled = NULL, *again = NULL;
    guint64 seen[8];
    unsigned n = 0;

    seen[n++] = vpLedgerGeneration(ledger);
    ck_assert(vpLedgerAdd(ledger, a, NULL));
    seen[n++] = vpLedgerGeneration(ledger);
    ck_assert(vpLedgerAdd(ledger, b, NULL));
    seen[n++] = vpLedgerGeneration(ledger);
    ck_assert(vpLedgerReplace(ledger, a_moved, NULL));
    seen[n++] = vpLedgerGeneration(ledger);
    live->memory = 2ULL << 30;
    reconciled = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_ptr_nonnull(reconciled);
    seen[n++] = vpLedgerGeneration(ledger);
    ck_assert(vpLedgerRemove(ledger, "b"));
    seen[n++] = vpLedgerGeneration(ledger);
    copy = vpLedgerCopy(ledger, topo, NULL);
    ck_assert_ptr_nonnull(copy);
    seen[n++] = vpLedgerGeneration(copy);
    ck_assert_uint_eq(vpLedgerGeneration(ledger), seen[n - 2]);
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < i; j++)
            ck_assert_msg(seen[i] != seen[j], "change %u shows the number of change %u", i, j);

    /* What changes nothing keeps the number: reads, refusals, a reconcile that agrees. */
    ck_assert(vpLedgerAdd(ledger, b, NULL));
    guint64 now = vpLedgerGeneration(ledger);
    ck_assert(!vpLedgerAdd(ledger, on_b, NULL));
    ck_assert(!vpLedgerAdd(ledger, b, NULL));
    ck_assert(!vpLedgerReplace(ledger, a_onto_b, NULL));
    ck_assert(!vpLedgerRemove(ledger, "nobody"));
    again = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_ptr_null(again);
    ck_assert_ptr_nonnull(vpLedgerLookup(ledger, "a"));
    ck_assert(vpLedgerCheck(ledger, NULL));
    ck_assert_uint_eq(vpLedgerGeneration(ledger), now);
}
END_TEST

START_TEST(test_reconcile_memory)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = makePlan("a", NULL, (int[]){0, 4, -1}, NULL, NULL);
    g_autoptr(vpRequest) live = vpRequestNew("a", 2);
    g_autoptr(GError) err = NULL;
    g_autofree char *first = NULL, *again = NULL, *moved = NULL, *scaled = NULL;
    const vpPlan *now;

    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    live->memory = 2ULL << 30;
    first = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_str_eq(first, "nothing -> node 0: 1 GiB, node 1: 1 GiB");
    again = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_ptr_null(again);

    live->mem_mode = VP_MEM_STRICT;
    live->nodeset = hwloc_bitmap_alloc();
    hwloc_bitmap_set(live->nodeset, 1);
    moved = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_str_eq(moved, "node 0: 1 GiB, node 1: 1 GiB -> node 1: 2 GiB");
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 0), 0);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 0), 2ULL << 30);

    g_clear_pointer(&live->nodeset, hwloc_bitmap_free);
    live->mem_mode = VP_MEM_NONE;
    {
        g_autoptr(vpPlan) cells = vpPlanCopy(vpLedgerLookup(ledger, "a"));

        g_clear_pointer(&cells->mem, g_free);
        cells->nmem = 0;
        cells->page_size = 2ULL << 20;
        vpPlanAddPages(cells, 0, 2ULL << 20, 1ULL << 30);
        vpPlanAddPages(cells, 1, 1ULL << 30, 1ULL << 30);
        ck_assert(vpLedgerReplace(ledger, cells, NULL));
    }
    live->hugepage_size = 2ULL << 20;
    live->ncells = 2;
    live->cells = g_new0(vpCell, 2);
    for (unsigned c = 0; c < 2; c++) {
        live->cells[c].id = c;
        live->cells[c].vcpus = hwloc_bitmap_alloc();
        hwloc_bitmap_set(live->cells[c].vcpus, c);
    }
    live->cells[1].page_size = 1ULL << 30;
    live->memory = 4ULL << 30;
    scaled = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_ptr_nonnull(scaled);
    now = vpLedgerLookup(ledger, "a");
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 0, 2ULL << 20), 2ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 1, 1ULL << 30), 2ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 1ULL << 30), 2ULL << 30);
    ck_assert_ptr_null(vpLedgerReconcileMemory(ledger, "nobody", live));
}
END_TEST

/* What a node holds is kept as plans come and go, per page size: adds, a refused add, a
 * replace, a failed replace and removes leave the sums the plans give, and a ledger with
 * nothing left holds nothing anywhere. */
START_TEST(test_node_memory_kept)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) a = makePlan("a", NULL, (int[]){0, -1}, NULL, NULL);
    g_autoptr(vpPlan) b = makePlan("b", NULL, (int[]){1, -1}, NULL, NULL);
    g_autoptr(vpPlan) clash = makePlan("c", NULL, (int[]){1, -1}, NULL, NULL);
    g_autoptr(vpPlan) grown = NULL;
    g_autoptr(vpPlan) bad = NULL;
    g_autoptr(GError) err = NULL;

    vpPlanAddPages(a, 0, 0, 3ULL << 30);
    vpPlanAddPages(a, 1, 2ULL << 20, 1ULL << 30);
    vpPlanAddPages(b, 0, 0, 2ULL << 30);
    vpPlanAddPages(clash, 0, 0, 5ULL << 30);
    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert(vpLedgerAdd(ledger, b, NULL));
    ck_assert(!vpLedgerAdd(ledger, clash, NULL));
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 0), 5ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 2ULL << 20), 1ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 0), 0);

    grown = vpPlanCopy(a);
    vpPlanAddPages(grown, 0, 0, 1ULL << 30);
    ck_assert(vpLedgerReplace(ledger, grown, NULL));
    bad = makePlan("a", NULL, (int[]){1, -1}, NULL, NULL);
    vpPlanAddPages(bad, 1, 0, 7ULL << 30);
    ck_assert(!vpLedgerReplace(ledger, bad, NULL));
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 0), 6ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 0), 0);
    ck_assert_msg(vpLedgerCheck(ledger, &err), "%s", err ? err->message : "");

    ck_assert(vpLedgerRemove(ledger, "a"));
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 0), 2ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 2ULL << 20), 0);
    ck_assert(vpLedgerRemove(ledger, "b"));
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 0), 0);
    ck_assert_msg(vpLedgerCheck(ledger, &err), "%s", err ? err->message : "");
}
END_TEST

/* A live nodeset change (restrictive mode, `virsh numatune --live`) moves base pages, which
 * the kernel migrates with cpuset.mems, but not huge pages: those stay on their node, and
 * the text says so rather than claim they moved. A nodeset naming no node of this host
 * leaves the base pages where they are. */
START_TEST(test_reconcile_huge_pages_stay)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = makePlan("a", NULL, (int[]){0, -1}, NULL, NULL);
    g_autoptr(vpRequest) live = vpRequestNew("a", 1);
    g_autoptr(GError) err = NULL;
    g_autofree char *moved = NULL, *nowhere = NULL;
    const vpPlan *now;

    vpPlanAddPages(plan, 0, 0, 1ULL << 30);
    vpPlanAddPages(plan, 0, 2ULL << 20, 1ULL << 30);
    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    live->memory = 2ULL << 30;
    live->mem_mode = VP_MEM_RESTRICTIVE;
    live->nodeset = hwloc_bitmap_alloc();
    hwloc_bitmap_set(live->nodeset, 1);
    moved = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_str_eq(moved, "node 0: 1 GiB, node 0: 1 GiB in 2 MiB pages -> node 0: 1 GiB in 2 "
                            "MiB pages, node 1: 1 GiB; huge pages outside the live nodeset stay "
                            "(node 0: 1 GiB in 2 MiB pages): libvirt does not move them live");
    now = vpLedgerLookup(ledger, "a");
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 1, 0), 1ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 0, 0), 0);
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 0, 2ULL << 20), 1ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 0, 2ULL << 20), 1ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 1, 2ULL << 20), 0);

    hwloc_bitmap_only(live->nodeset, 7);
    nowhere = vpLedgerReconcileMemory(ledger, "a", live);
    ck_assert_ptr_nonnull(strstr(nowhere, "stay (node 0: 1 GiB in 2 MiB pages)"));
    now = vpLedgerLookup(ledger, "a");
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 1, 0), 1ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOnPages(now, 0, 2ULL << 20), 1ULL << 30);
    ck_assert_uint_eq(now->nmem, 2);
}
END_TEST

static char *tmpdir;

static void
makeTmpdir(void)
{
    tmpdir = g_dir_make_tmp("vp-ledger-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmpdir);
}

static void
removeTmpdir(void)
{
    g_autoptr(GDir) dir = g_dir_open(tmpdir, 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *path = g_build_filename(tmpdir, name, NULL);

        g_remove(path);
    }
    g_rmdir(tmpdir);
    g_clear_pointer(&tmpdir, g_free);
}

static guint
entriesIn(const char *dirname)
{
    g_autoptr(GDir) dir = g_dir_open(dirname, 0, NULL);
    guint n = 0;

    while (dir && g_dir_read_name(dir))
        n++;
    return n;
}

START_TEST(test_save_load)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) back = NULL;
    g_autofree char *want = ledgerText(ledger);
    g_autofree char *got = NULL;
    g_autofree char *contents = NULL;
    GStatBuf st;
    mode_t old_umask = umask(0);

    /* Even with a permissive umask the file is the daemon's alone. */
    ck_assert_msg(vpLedgerFileSave(ledger, path, &err), "%s", err ? err->message : "");
    umask(old_umask);
    ck_assert_int_eq(g_stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_uint_eq(entriesIn(tmpdir), 1);
    ck_assert(g_file_get_contents(path, &contents, NULL, NULL));
    ck_assert(g_str_has_suffix(contents, "}\n"));

    back = vpLedgerFileLoad(topo, path, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    got = ledgerText(back);
    ck_assert_str_eq(got, want);

    /* Saving again replaces the file in place. */
    ck_assert(vpLedgerRemove(ledger, "mid"));
    ck_assert(vpLedgerFileSave(ledger, path, NULL));
    vpLedgerFree(g_steal_pointer(&back));
    back = vpLedgerFileLoad(topo, path, NULL);
    ck_assert_uint_eq(vpLedgerNDomains(back), 2);
    ck_assert_uint_eq(entriesIn(tmpdir), 1);
}
END_TEST

START_TEST(test_load_missing_is_empty)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *path = g_build_filename(tmpdir, "absent.json", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) ledger = vpLedgerFileLoad(topo, path, &err);

    ck_assert_msg(ledger, "%s", err ? err->message : "");
    ck_assert_uint_eq(vpLedgerNDomains(ledger), 0);
}
END_TEST

/* Every way a file can be damaged; the load must fail, name the file, and not crash. */
START_TEST(test_load_damaged)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = threeDomains(topo);
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autofree char *good = NULL;
    gsize len;

    ck_assert(vpLedgerFileSave(ledger, path, NULL));
    ck_assert(g_file_get_contents(path, &good, &len, NULL));

    /* Cut at every 7th byte: each prefix is a truncated file. */
    for (gsize cut = 0; cut < len - 2; cut += 7) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpLedger) loaded = NULL;

        ck_assert(g_file_set_contents(path, good, cut, NULL));
        loaded = vpLedgerFileLoad(topo, path, &err);
        ck_assert_msg(!loaded, "a ledger cut at byte %zu of %zu loaded", cut, len);
        ck_assert_msg(strstr(err->message, path), "%s", err->message);
        ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    }

    {
        static const char *const junk[] = {"\177ELF\x02\x01\x01", "null",
                                           "{\"version\":1,\"domains\":[]}}", "\xff\xfe{"};

        for (size_t i = 0; i < G_N_ELEMENTS(junk); i++) {
            g_autoptr(GError) err = NULL;
            g_autoptr(vpLedger) loaded = NULL;

            ck_assert(g_file_set_contents(path, junk[i], -1, NULL));
            loaded = vpLedgerFileLoad(topo, path, &err);
            ck_assert_msg(!loaded, "junk %zu loaded", i);
            ck_assert_msg(strstr(err->message, path), "%s", err->message);
        }
    }
}
END_TEST

START_TEST(test_load_empty_file)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autofree char *want = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) loaded = NULL;

    ck_assert(g_file_set_contents(path, "", 0, NULL));
    loaded = vpLedgerFileLoad(topo, path, &err);
    ck_assert_ptr_null(loaded);
    want = g_strdup_printf(
        "ledger %s is empty (truncated?); remove it to start from an empty ledger", path);
    ck_assert_str_eq(err->message, want);
}
END_TEST

START_TEST(test_load_foreign_pus)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autoptr(vpLedger) big = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = makePlan("old", NULL, (int[]){6, -1}, NULL, NULL);
    g_autofree char *text = NULL;
    g_autofree char *edited = NULL;
    g_autofree char *want = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) loaded = NULL;

    ck_assert(vpLedgerAdd(big, plan, NULL));
    text = ledgerText(big);
    edited = replaceAll(text, "\"cpu\":6", "\"cpu\":64");
    ck_assert(g_file_set_contents(path, edited, -1, NULL));
    loaded = vpLedgerFileLoad(topo, path, &err);
    ck_assert_ptr_null(loaded);
    want = g_strdup_printf("ledger %s: domains[0]: domain 'old': vCPU 0 is on CPU 64, which the "
                           "topology (test-16) lacks",
                           path);
    ck_assert_str_eq(err->message, want);
}
END_TEST

START_TEST(test_load_unreadable)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLedger) loaded = vpLedgerFileLoad(topo, tmpdir, &err);

    /* A directory where the file should be. */
    ck_assert_ptr_null(loaded);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_SYSTEM));
    ck_assert_ptr_nonnull(strstr(err->message, tmpdir));
}
END_TEST

/* A PU beyond 64 bits is refused, not wrapped: 2^64 + 6 once read as CPU 6. */
START_TEST(test_load_huge_pu)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPlan) plan = makePlan("old", NULL, (int[]){6, -1}, NULL, NULL);
    g_autoptr(GError) err = NULL;

    ck_assert(vpLedgerAdd(ledger, plan, NULL));
    g_autofree char *text = ledgerText(ledger);
    g_autofree char *edited = replaceAll(text, "\"cpu\":6", "\"cpu\":18446744073709551622");
    ck_assert(g_file_set_contents(path, edited, -1, NULL));
    g_autoptr(vpLedger) loaded = vpLedgerFileLoad(topo, path, &err);
    ck_assert_msg(!loaded, "a PU of 2^64 + 6 loaded");
    ck_assert_msg(strstr(err->message, "integer 18446744073709551622 is outside 64 bits"), "%s",
                  err->message);
}
END_TEST

/* A ledger nested 100,000 deep once overflowed json-glib's stack at every start. */
START_TEST(test_load_deep)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autofree char *deep = g_strnfill(100000, '[');
    g_autoptr(GError) err = NULL;

    ck_assert(g_file_set_contents(path, deep, -1, NULL));
    g_autoptr(vpLedger) loaded = vpLedgerFileLoad(topo, path, &err);
    ck_assert_ptr_null(loaded);
    ck_assert_msg(strstr(err->message, "nested deeper than"), "%s", err->message);
}
END_TEST

/* Only a regular file is a ledger: /dev/zero once grew without end (its st_size is 0) and
 * a FIFO blocked the start for ever. */
START_TEST(test_load_not_regular)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autofree char *fifo = g_build_filename(tmpdir, "fifo", NULL);
    const char *const paths[] = {"/dev/zero", fifo};

    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    for (gsize i = 0; i < G_N_ELEMENTS(paths); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpLedger) loaded = vpLedgerFileLoad(topo, paths[i], &err);
        ck_assert_msg(!loaded, "%s loaded as a ledger", paths[i]);
        g_autofree char *want = g_strdup_printf("ledger %s is not a regular file", paths[i]);
        ck_assert_str_eq(err->message, want);
    }
}
END_TEST

/* A save that fails halfway (here: the file size limit stops the write) must leave the
 * previous ledger byte for byte, and no temporary file behind. */
START_TEST(test_save_failure_keeps_old)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) small = vpLedgerNew(topo);
    g_autoptr(vpLedger) large = threeDomains(topo);
    g_autofree char *path = g_build_filename(tmpdir, "ledger.json", NULL);
    g_autofree char *before = NULL;
    g_autofree char *after = NULL;
    gsize before_len;
    pid_t child;
    int status;

    ck_assert(vpLedgerFileSave(small, path, NULL));
    ck_assert(g_file_get_contents(path, &before, &before_len, NULL));
    ck_assert_uint_lt(before_len, 256);

    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        struct rlimit lim = {256, 256};
        g_autoptr(GError) err = NULL;

        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
            _exit(3);
        if (vpLedgerFileSave(large, path, &err))
            _exit(1);
        _exit(strstr(err->message, path) && err->code == VP_ERROR_SYSTEM ? 0 : 2);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child: 1 = the save passed the size limit, 2 = bad error, 3 = setrlimit");

    ck_assert(g_file_get_contents(path, &after, NULL, NULL));
    ck_assert_str_eq(after, before);
    ck_assert_uint_eq(entriesIn(tmpdir), 1);
}
END_TEST

START_TEST(test_save_bad_directory)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autofree char *path = g_build_filename(tmpdir, "no-such-dir", "ledger.json", NULL);
    g_autoptr(GError) err = NULL;

    ck_assert(!vpLedgerFileSave(ledger, path, &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_SYSTEM));
    ck_assert_ptr_nonnull(strstr(err->message, path));
}
END_TEST

/* A shared plan of n vCPUs over `shared`, vCPU k floating over sets[k % nsets]. */
static vpPlan *
sharedPlan(const char *name, unsigned n, const char *shared, const char *const *sets,
           unsigned nsets, const char *ratio)
{
    vpPlan *plan = vpPlanNew(name, n);

    ck_assert(vpPolicySetAttr(&plan->policy, "cpus", "shared", NULL));
    ck_assert(vpPolicySetAttr(&plan->policy, "ratio", ratio, NULL));
    vpPlanMakeShared(plan);
    hwloc_bitmap_list_sscanf(plan->shared, shared);
    for (unsigned k = 0; k < n; k++)
        hwloc_bitmap_list_sscanf(plan->vcpu_set[k], sets[k % nsets]);
    return plan;
}

/* Shared plans hold a core together, each for its fraction: 4 vCPUs floating over 2 CPUs put
 * 2 on each; the c-rule's vCPU on one sibling puts 1 there; past the ratio is refused with
 * the figures and changes nothing; a dedicated plan never takes a shared CPU, nor a shared
 * plan a dedicated one; removing gives the fraction back. */
START_TEST(test_shared_fractions)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const char *const both[] = {"0,8"};
    const char *const crule[] = {"0", "8"};
    const char *const one[] = {"0"};
    g_autoptr(vpPlan) a = sharedPlan("a", 4, "0,8", both, 1, "4");
    g_autoptr(vpPlan) b = sharedPlan("b", 3, "0,8", crule, 2, "4");
    g_autoptr(vpPlan) c = sharedPlan("c", 2, "0,8", one, 1, "4");
    g_autoptr(vpPlan) strict = sharedPlan("s", 1, "0,8", one, 1, "2.5");
    const int pins[] = {0, -1};
    const int other[] = {1, -1};
    g_autoptr(vpPlan) dedicated = makePlan("d", NULL, pins, NULL, NULL);
    g_autoptr(vpPlan) free_core = makePlan("e", NULL, other, NULL, NULL);
    g_autoptr(vpPlan) onto = sharedPlan("f", 1, "1,9", (const char *const[]){"1,9"}, 1, "4");
    g_autoptr(GError) err = NULL;
    guint64 gen;

    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert_double_eq_tol(vpLedgerSharedLoad(ledger, vpTopologyPUByOS(topo, 0)), 2.0, 1e-9);
    ck_assert_double_eq_tol(vpLedgerSharedLoad(ledger, vpTopologyPUByOS(topo, 8)), 2.0, 1e-9);
    ck_assert(vpLedgerAdd(ledger, b, NULL));
    ck_assert_double_eq_tol(vpLedgerSharedLoad(ledger, vpTopologyPUByOS(topo, 0)), 4.0, 1e-9);
    ck_assert_double_eq_tol(vpLedgerSharedLoad(ledger, vpTopologyPUByOS(topo, 8)), 3.0, 1e-9);
    ck_assert_uint_eq(vpLedgerNOwners(ledger, vpTopologyPUByOS(topo, 0)), 2);
    ck_assert_int_eq(vpLedgerOwner(ledger, vpTopologyPUByOS(topo, 8)).kind, VP_OWN_SHARED);
    ck_assert(vpLedgerCheck(ledger, NULL));

    gen = vpLedgerGeneration(ledger);
    ck_assert(!vpLedgerAdd(ledger, c, &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_REFUSED));
    ck_assert_str_eq(err->message, "domain 'c': CPU 0 would carry 6.00 vCPUs, past the ratio 4 "
                                   "of its shared domains");
    ck_assert_uint_eq(vpLedgerGeneration(ledger), gen);
    ck_assert_ptr_null(vpLedgerLookup(ledger, "c"));
    g_clear_error(&err);
    /* a newcomer's smaller ratio binds its whole set: CPU 0 carries 4 already */
    hwloc_bitmap_only(strict->vcpu_set[0], 8);
    ck_assert(!vpLedgerAdd(ledger, strict, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "CPU 0 would carry 4.00 vCPUs, past the ratio 2.5"));
    g_clear_error(&err);

    ck_assert(!vpLedgerAdd(ledger, dedicated, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "held by domain 'a' for its shared cores"));
    g_clear_error(&err);
    ck_assert(vpLedgerAdd(ledger, free_core, NULL));
    ck_assert(!vpLedgerAdd(ledger, onto, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "CPU 1 for its shared cores is held by domain 'e'"));
    g_clear_error(&err);

    ck_assert(vpLedgerRemove(ledger, "a"));
    ck_assert_double_eq_tol(vpLedgerSharedLoad(ledger, vpTopologyPUByOS(topo, 0)), 2.0, 1e-9);
    ck_assert(vpLedgerAdd(ledger, c, NULL));
    ck_assert_double_eq_tol(vpLedgerSharedRatio(ledger, vpTopologyPUByOS(topo, 0)), 4.0, 1e-9);
    ck_assert(vpLedgerCheck(ledger, NULL));
}
END_TEST

/* A shared plan's cores and per-vCPU sets survive the ledger's text, and a shared plan
 * whose vCPU floats outside its cores is an error naming it. */
START_TEST(test_shared_round_trip)
{
    g_autoptr(vpTopology) topo = testTopology();
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    const char *const crule[] = {"0", "8"};
    g_autoptr(vpPlan) b = sharedPlan("b", 3, "0,8", crule, 2, "2.5");
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    g_autoptr(vpLedger) back = NULL;
    const vpPlan *got;
    g_autofree char *bad = NULL;

    ck_assert(vpLedgerAdd(ledger, b, NULL));
    text = vpLedgerToText(ledger);
    back = vpLedgerFromText(topo, text, strlen(text), "mem", &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    got = vpLedgerLookup(back, "b");
    ck_assert_int_eq(got->policy.cpus, VP_CPUS_SHARED);
    ck_assert_double_eq_tol(got->policy.ratio, 2.5, 1e-9);
    ck_assert(hwloc_bitmap_isequal(got->shared, b->shared));
    for (unsigned k = 0; k < 3; k++)
        ck_assert(hwloc_bitmap_isequal(got->vcpu_set[k], b->vcpu_set[k]));
    ck_assert_double_eq_tol(vpLedgerSharedLoad(back, vpTopologyPUByOS(topo, 0)), 2.0, 1e-9);

    bad = g_strdup(text);
    ck_assert_ptr_nonnull(strstr(bad, "\"cpus\" : \"8\""));
    memcpy(strstr(bad, "\"cpus\" : \"8\"") + 10, "9", 1);
    ck_assert_ptr_null(vpLedgerFromText(topo, bad, strlen(bad), "mem", &err));
    ck_assert_ptr_nonnull(strstr(
        err->message, "vcpus[1] of a shared plan is pinned, or its cpus lie outside \"shared\""));
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("ledger");
    TCase *tc = tcase_create("memory");
    TCase *files = tcase_create("files");

    tcase_add_test(tc, test_add_owners);
    tcase_add_test(tc, test_emulator_kind);
    tcase_add_test(tc, test_conflict_changes_nothing);
    tcase_add_test(tc, test_bad_plans);
    tcase_add_test(tc, test_remove_and_replace);
    tcase_add_test(tc, test_json_round_trip);
    tcase_add_test(tc, test_text_round_trip);
    tcase_add_test(tc, test_plans_copy_text);
    tcase_add_test(tc, test_copy);
    tcase_add_test(tc, test_reconcile_memory);
    tcase_add_test(tc, test_node_memory_kept);
    tcase_add_test(tc, test_generation);
    tcase_add_test(tc, test_reconcile_huge_pages_stay);
    tcase_add_test(tc, test_json_legacy);
    tcase_add_loop_test(tc, test_json_bad, 0, G_N_ELEMENTS(bad_ledgers));
    tcase_add_test(tc, test_json_foreign_or_double_booked);
    tcase_add_test(tc, test_shared_fractions);
    tcase_add_test(tc, test_shared_round_trip);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(files, makeTmpdir, removeTmpdir);
    tcase_add_test(files, test_save_load);
    tcase_add_test(files, test_load_missing_is_empty);
    tcase_add_test(files, test_load_damaged);
    tcase_add_test(files, test_load_empty_file);
    tcase_add_test(files, test_load_foreign_pus);
    tcase_add_test(files, test_load_unreadable);
    tcase_add_test(files, test_load_huge_pu);
    tcase_add_test(files, test_load_deep);
    tcase_add_test(files, test_load_not_regular);
    tcase_add_test(files, test_save_failure_keeps_old);
    tcase_add_test(files, test_save_bad_directory);
    suite_add_tcase(s, files);

    return s;
}
