/*
 * The daemon's decisions without libvirt: a sync judges a request (as the domxml adapter
 * parses it) against live pins, and a move libvirt did not take is undone in the ledger,
 * all or nothing, unless the record changed hands meanwhile.
 */
#include "core/balance/rebalance.h"
#include "daemon/manager.h"

#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <glib/gstdio.h>

static char *tmpdir;

static void
setup(void)
{
    tmpdir = g_dir_make_tmp("vp-manager-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmpdir);
}

static void
teardown(void)
{
    g_autofree char *ledger = g_build_filename(tmpdir, "ledger.json", NULL);
    g_unlink(ledger);
    g_rmdir(tmpdir);
    g_clear_pointer(&tmpdir, g_free);
}

/* One package, one L3, four cores without SMT: CPUs 0-3. */
static vpManager *
newManager(void)
{
    vpTopology *topo = vpTestTopology("synthetic:pack:1 l3:1 core:4 pu:1", NULL);
    g_autoptr(GError) err = NULL;
    vpPolicy defaults;
    vpPolicyInitDefaults(&defaults);
    g_autofree char *state = g_build_filename(tmpdir, "ledger.json", NULL);
    vpManager *m = vpManagerNew(topo, &defaults, state, &err);
    vpPolicyClear(&defaults);
    ck_assert_msg(m, "%s", err ? err->message : "");
    return m;
}

static vpRequest *
request(const char *name, unsigned vcpus)
{
    vpRequest *req = vpRequestNew(name, vcpus);
    vpPolicyInitDefaults(&req->policy);
    return req;
}

/* Live pins: each vCPU on set (a CPU list). */
static vpLivePins *
live(unsigned n, const char *const *sets)
{
    vpLivePins *pins = vpLivePinsNew(n);
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(hwloc_bitmap_list_sscanf(pins->vcpu[i], sets[i]), 0);
    return pins;
}

static vpLivePins *
liveAsPlanned(const vpPlan *plan)
{
    vpLivePins *pins = vpLivePinsNew(plan->nvcpus);
    for (unsigned i = 0; i < plan->nvcpus; i++)
        hwloc_bitmap_only(pins->vcpu[i], plan->vcpu_pu[i]);
    return pins;
}

START_TEST(test_sync_request)
{
    g_autoptr(vpManager) m = newManager();
    g_autoptr(vpRequest) req = request("web", 2);
    g_autoptr(GError) err = NULL;

    /* unknown, on libvirt's defaults: placed, to be applied */
    g_autoptr(vpLivePins) wide = live(2, (const char *[]){"0-3", "0-3"});
    ck_assert_int_eq(vpManagerSync(m, "web", req, wide, &err), VP_SYNC_APPLY);
    ck_assert_int_eq(vpManagerRecord(m, "web")->state, VP_DOM_APPLYING);
    const vpPlan *plan = vpManagerPlan(m, "web");
    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(plan->how, VP_HOW_PLACED);

    /* libvirt shows the plan: applied, nothing to do */
    g_autoptr(vpLivePins) same = liveAsPlanned(plan);
    ck_assert_int_eq(vpManagerSync(m, "web", req, same, &err), VP_SYNC_NOTHING);
    ck_assert_int_eq(vpManagerRecord(m, "web")->state, VP_DOM_APPLIED);

    /* an operator moved both vCPUs onto the CPUs nobody holds: adopted */
    int free0 = -1, free1 = -1;
    for (int cpu = 0; cpu < 4; cpu++) {
        if (cpu == plan->vcpu_pu[0] || cpu == plan->vcpu_pu[1])
            continue;
        if (free0 < 0)
            free0 = cpu;
        else
            free1 = cpu;
    }
    g_autofree char *s0 = g_strdup_printf("%d", free0);
    g_autofree char *s1 = g_strdup_printf("%d", free1);
    g_autoptr(vpLivePins) moved = live(2, (const char *[]){s0, s1});
    ck_assert_int_eq(vpManagerSync(m, "web", req, moved, &err), VP_SYNC_NOTHING);
    plan = vpManagerPlan(m, "web");
    ck_assert_int_eq(plan->how, VP_HOW_ADOPTED);
    ck_assert_int_eq(plan->vcpu_pu[0], free0);
    ck_assert_int_eq(plan->vcpu_pu[1], free1);
    ck_assert(vpLedgerCheck(vpManagerLedger(m), NULL));

    /* a request that names another domain is refused and recorded */
    g_autoptr(vpRequest) other = request("db", 1);
    ck_assert_int_eq(vpManagerSync(m, "web", other, moved, &err), VP_SYNC_NOTHING);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, "domain name 'web' does not match the XML's <name>db</name>");
    ck_assert_int_eq(vpManagerRecord(m, "web")->state, VP_DOM_UNPLACED);
}
END_TEST

static GPtrArray *
oneMove(const char *domain, unsigned vcpu, unsigned from, unsigned to)
{
    GPtrArray *moves = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree);
    vpMove *mv = g_new0(vpMove, 1);
    mv->domain = g_strdup(domain);
    mv->vcpu = vcpu;
    mv->from = from;
    mv->to = to;
    mv->reason = g_strdup("test");
    g_ptr_array_add(moves, mv);
    return moves;
}

START_TEST(test_move_back)
{
    g_autoptr(vpManager) m = newManager();
    g_autoptr(vpRequest) req = request("web", 1);
    g_autoptr(GError) err = NULL;
    ck_assert_ptr_nonnull(vpManagerReserve(m, "web", req, &err));
    guint64 serial = vpManagerRecord(m, "web")->serial;
    g_autoptr(vpPlan) old = vpPlanCopy(vpManagerPlan(m, "web"));
    unsigned from = old->vcpu_pu[0], to = (from + 1) % 4;
    g_autoptr(GPtrArray) olds = g_ptr_array_new();
    g_ptr_array_add(olds, old);
    g_autoptr(GArray) serials = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_array_append_val(serials, serial);

    /* moved, then undone */
    g_autoptr(GPtrArray) moves = oneMove("web", 0, from, to);
    ck_assert_msg(vpManagerMove(m, moves, &err), "%s", err ? err->message : "");
    ck_assert_int_eq(vpManagerPlan(m, "web")->vcpu_pu[0], (int)to);
    ck_assert(vpManagerMoveBack(m, olds, serials, &err));
    ck_assert_int_eq(vpManagerPlan(m, "web")->vcpu_pu[0], (int)from);

    /* moved, then the CPU it left taken by a start: the move stays, to be pinned anew */
    ck_assert(vpManagerMove(m, moves, &err));
    int pu = vpTopologyPUByOS(vpManagerTopology(m), from);
    unsigned others = 0;
    for (unsigned n = 0; n < 3 && vpLedgerPUFree(vpManagerLedger(m), pu); n++) {
        g_autofree char *name = g_strdup_printf("start%u", n);
        g_autoptr(vpRequest) start = request(name, 1);
        ck_assert_ptr_nonnull(vpManagerReserve(m, name, start, &err));
        others++;
    }
    ck_assert_uint_ge(others, 1);
    ck_assert(!vpManagerMoveBack(m, olds, serials, &err));
    ck_assert_ptr_nonnull(err);
    g_clear_error(&err);
    ck_assert_int_eq(vpManagerPlan(m, "web")->vcpu_pu[0], (int)to);
    ck_assert_int_eq(vpManagerRecord(m, "web")->state, VP_DOM_APPLYING);
    ck_assert(vpLedgerCheck(vpManagerLedger(m), NULL));

    /* released and reserved anew meanwhile: the new owner's, left alone */
    ck_assert(vpManagerRelease(m, "web"));
    ck_assert_ptr_nonnull(vpManagerReserve(m, "web", req, &err));
    g_autoptr(vpBitmap) before = vpPlanHeld(vpManagerPlan(m, "web"));
    ck_assert(vpManagerMoveBack(m, olds, serials, &err));
    g_autoptr(vpBitmap) after = vpPlanHeld(vpManagerPlan(m, "web"));
    ck_assert(hwloc_bitmap_isequal(after, before));
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("manager");
    TCase *tc = tcase_create("manager");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_sync_request);
    tcase_add_test(tc, test_move_back);
    suite_add_tcase(s, tc);
    return s;
}
