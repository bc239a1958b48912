/*
 * The daemon's work as per-domain jobs (daemon/jobs.h): a sync that waits on libvirt does
 * not commit what it decided when the domain was released meanwhile; a second job on the
 * same domain waits for the first, or is refused with the holder named; jobs on two
 * domains run side by side. The window is the actuator's pin of a domain just started
 * (vpActuatorSetUnlockedFunc): the main thread holds no lock and does not poll, as while
 * it waits on libvirt, and the real hook runs from there.
 */
#include "checkmain.h"
#include "harness.h"

#include "core/model/ledger.h"
#include "daemon/actuator.h"
#include "daemon/daemon.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TOPOLOGY "synthetic:pack:1 core:2 pu:2"

static void
writeJobsConfig(guint hook_timeout_ms)
{
    g_autofree char *extra =
        g_strdup_printf("domains=job-*\nhook_failure=closed\nhook_timeout_ms=%u\nvcpu_poll_ms=0\n"
                        "[rebalance]\nmode=off\n[admission]\nmax_moves=0\n",
                        hook_timeout_ms);
    writeConfig("test:///default", TOPOLOGY, extra);
}

static int
hookNow(const char *name, const char *op, const char *subop, const char *xml, char **errout)
{
    const char *argv[] = {VP_HOOK, name, op, subop, "-", NULL};
    return runNow(argv, xml, errout);
}

/* A hook request run from a thread of its own, so that the window can see whether it is
 * answered while the job it collides with is still in flight. */
typedef struct {
    const char *name, *op, *subop, *xml;
    int status;
    char *err;
    gint done;
} vpHookThread;

static gpointer
hookThread(gpointer data)
{
    vpHookThread *h = data;
    h->status = hookNow(h->name, h->op, h->subop, h->xml, &h->err);
    g_atomic_int_set(&h->done, 1);
    return NULL;
}

/* What a test does in the window of job-a's pin, once. */
typedef struct {
    const char *xml; /* job-a's, for the hook */
    guint calls;
    guint hold_ms; /* how long the window stays open after the hook request began */
    vpHookThread second;
    GThread *thread;
    gint answered_in_window;
} vpWindow;

static void
inWindow(gpointer data)
{
    vpWindow *w = data;
    if (w->calls++)
        return;
    /* a release for job-a (a late one, or a failed start's) frees it while the pin is under
     * way, and the next start asks again; the pin itself succeeds */
    ck_assert_int_eq(hookNow("job-a", "release", "end", w->xml, NULL), 0);
    w->second = (vpHookThread){.name = "job-a", .op = "prepare", .subop = "begin", .xml = w->xml};
    w->thread = g_thread_new("hook", hookThread, &w->second);
    g_usleep(w->hold_ms * 1000);
    w->answered_in_window = g_atomic_int_get(&w->second.done);
}

/* Starts job-a outside the hook: its lifecycle event syncs it, placing and pinning it,
 * which opens the window. */
static virDomainPtr
startInWindow(vpDaemon *d, vpWindow *w)
{
    virDomainPtr dom = define(vpDaemonLibvirt(d), w->xml);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), inWindow, w);
    ck_assert_int_eq(virDomainCreate(dom), 0);
    while (!w->calls)
        g_main_context_iteration(NULL, TRUE);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), NULL, NULL);
    /* the main thread holds the state lock whenever it runs: the reserve needs it */
    while (!g_atomic_int_get(&w->second.done)) {
        vpDaemonUnlock(d);
        g_usleep(10000);
        vpDaemonLock(d);
    }
    g_thread_join(w->thread);
    return dom;
}

/* What listeners heard: "name+" for live, "name-" for released, in order. */
static void
recordEvent(vpDaemon *d, const char *name, virDomainPtr dom, const vpPlan *plan, gpointer data)
{
    g_string_append_printf(data, "%s%s ", name, plan ? "+" : "-");
}

/* job-a is released and reserved again while its sync waits on libvirt to pin it: the
 * reserve waits for the sync's job (one job per domain) and is answered once it ends; the
 * sync's pin succeeds but commits nothing (listeners never hear of job-a as live, the new
 * record stays reserved), and the ledger holds the new reservation only, nothing leaked or
 * booked twice. */
START_TEST(test_stale_commit_dropped_and_serialized)
{
    writeJobsConfig(5000);
    g_autoptr(GString) heard = g_string_new(NULL);
    g_autoptr(vpDaemon) d = startDaemonWith(recordEvent, heard);
    vpManager *m = vpDaemonManager(d);
    g_autofree char *xml = domainXML("job-a", 2, "smt='spread'", NULL);
    vpWindow w = {.xml = xml, .hold_ms = 300};
    virDomainPtr dom = startInWindow(d, &w);

    ck_assert_int_eq(w.answered_in_window, 0);
    ck_assert_msg(w.second.status == 0, "reserve after the job: %s", w.second.err);
    waitIdle(d);
    const vpDomRecord *rec = vpManagerRecord(m, "job-a");
    ck_assert_ptr_nonnull(rec);
    ck_assert_str_eq(vpDomStateName(rec->state), "reserved");
    ck_assert_ptr_null(rec->error);
    ck_assert_str_eq(heard->str, "job-a- ");
    ck_assert_uint_eq(vpLedgerNDomains(vpManagerLedger(m)), 1);
    ck_assert_uint_eq(vpManagerPlan(m, "job-a")->nvcpus, 2);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    g_free(w.second.err);
    virDomainFree(dom);
}
END_TEST

/* The same collision with the reserve's wait bound (half the hook's timeout) shorter than
 * the job: the start is refused, naming the job that holds the domain, and nothing is
 * recorded for it. */
START_TEST(test_busy_refused_clearly)
{
    writeJobsConfig(400);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    g_autofree char *xml = domainXML("job-a", 2, "smt='spread'", NULL);
    vpWindow w = {.xml = xml, .hold_ms = 1500};
    virDomainPtr dom = startInWindow(d, &w);

    ck_assert_int_eq(w.answered_in_window, 1);
    ck_assert_msg(w.second.status == 1 && strstr(w.second.err, "domain job-a: busy with its sync"),
                  "status %d: %s", w.second.status, w.second.err);
    waitIdle(d);
    ck_assert_ptr_null(vpManagerRecord(m, "job-a"));
    ck_assert_uint_eq(vpLedgerNDomains(vpManagerLedger(m)), 0);
    g_free(w.second.err);
    virDomainFree(dom);
}
END_TEST

/* In the window of job-a's pin, a start of job-b is answered at once: a job on one domain
 * holds up no other. job-a's pin then commits, beside job-b's reservation. */
typedef struct {
    const char *xml;
    guint calls;
    int status;
    char *err;
} vpOther;

static void
otherInWindow(gpointer data)
{
    vpOther *o = data;
    if (o->calls++)
        return;
    o->status = hookNow("job-b", "prepare", "begin", o->xml, &o->err);
}

START_TEST(test_two_domains_concurrent)
{
    writeJobsConfig(5000);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    g_autofree char *axml = domainXML("job-a", 1, "smt='spread'", NULL);
    g_autofree char *bxml = domainXML("job-b", 1, "smt='spread'", NULL);
    virDomainPtr a = define(vpDaemonLibvirt(d), axml);
    vpOther o = {.xml = bxml};
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), otherInWindow, &o);
    ck_assert_int_eq(virDomainCreate(a), 0);
    waitIdle(d);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), NULL, NULL);

    ck_assert_uint_eq(o.calls, 1);
    ck_assert_msg(o.status == 0, "job-b's reserve: %s", o.err);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "job-a")->state), "applied");
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "job-b")->state), "reserved");
    ck_assert_int_ne(vpManagerPlan(m, "job-a")->vcpu_pu[0], vpManagerPlan(m, "job-b")->vcpu_pu[0]);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    g_free(o.err);
    virDomainFree(a);
}
END_TEST

Suite *
vpTestSuite(void)
{
    g_log_set_writer_func(quietWriter, NULL, NULL);
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("integration");
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_stale_commit_dropped_and_serialized);
    tcase_add_test(tc, test_busy_refused_clearly);
    tcase_add_test(tc, test_two_domains_concurrent);
    suite_add_tcase(s, tc);
    return s;
}
