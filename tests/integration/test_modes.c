/*
 * Integration tier: [daemon] mode and adopt_running, and the last good configuration, on
 * libvirt's test driver (test:///default runs "test", 2 vCPUs, unpinned) with the real
 * hook and CLI. What a fresh install does on a busy host: report, pin nothing, refuse
 * nothing; then one switch at a time to enforcing.
 */
#include "checkmain.h"
#include "harness.h"

#include "daemon/daemon.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TOPOLOGY "synthetic:pack:2 core:4 pu:2"

/* Whether every vCPU of the domain may run on every one of the host's 8 CPUs. */
static gboolean
unpinned(virDomainPtr dom)
{
    unsigned char map[2][1] = {{0}};
    int n = virDomainGetVcpuPinInfo(dom, 2, &map[0][0], 1, 0);
    ck_assert_int_eq(n, 2);
    return map[0][0] == 0xff && map[1][0] == 0xff;
}

static JsonObject *
status(void)
{
    const char *argv[] = {VP_CLI, "status", "--json", "--config", confpath, NULL};
    g_autofree char *out = NULL;
    ck_assert_int_eq(run(argv, NULL, &out, NULL), 0);
    g_autoptr(JsonParser) p = json_parser_new();
    ck_assert(json_parser_load_from_data(p, out, -1, NULL));
    return json_object_ref(json_node_get_object(json_parser_get_root(p)));
}

/* The reported entry of name in a status document; NULL when it is not reported. */
static JsonObject *
reported(JsonObject *st, const char *name)
{
    JsonArray *a = json_object_get_array_member(st, "reported");
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *e = json_array_get_object_element(a, i);
        if (strcmp(json_object_get_string_member(e, "domain"), name) == 0)
            return e;
    }
    return NULL;
}

static void
reload(vpDaemon *d, const char *extra)
{
    writeConfig("test:///default", TOPOLOGY, extra);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpDaemonReload(d, &err), "%s", err ? err->message : "");
    waitIdle(d);
}

/* Report mode: the running domain is reported with where it would go, not pinned; a start
 * enforce would refuse goes on; switching to enforce places only what the hook admits
 * until adopt_running=yes. */
START_TEST(test_report_then_enforce)
{
    writeConfig("test:///default", TOPOLOGY, "mode=report\nadopt_running=no\n");
    vpDaemon *d = startDaemon();
    virDomainPtr test = virDomainLookupByName(vpDaemonLibvirt(d), "test");
    ck_assert_ptr_nonnull(test);
    ck_assert_ptr_null(vpManagerRecord(vpDaemonManager(d), "test"));
    ck_assert(unpinned(test));
    g_autoptr(JsonObject) st = status();
    ck_assert_str_eq(json_object_get_string_member(st, "mode"), "report");
    JsonObject *e = reported(st, "test");
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(json_object_get_string_member(e, "why"), "mode=report");
    ck_assert(!json_object_get_null_member(e, "plan"));
    ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(st, "domains")), 0);

    /* 12 isolate vCPUs on 8 CPUs: enforce refuses this start; report lets it go on. */
    g_autofree char *big = domainXML("big", 12, "smt='isolate'", NULL);
    const char *prepare[] = {VP_HOOK, "big", "prepare", "begin", "-", NULL};
    ck_assert_int_eq(run(prepare, big, NULL, NULL), 0);
    g_autoptr(JsonObject) st2 = status();
    e = reported(st2, "big");
    ck_assert_ptr_nonnull(e);
    ck_assert(json_object_get_null_member(e, "plan"));
    ck_assert_ptr_nonnull(strstr(json_object_get_string_member(e, "refused"), "isolate"));
    ck_assert_ptr_null(vpManagerRecord(vpDaemonManager(d), "big"));
    const char *rebalance[] = {VP_CLI, "rebalance", "--config", confpath, NULL};
    g_autofree char *rerr = NULL;
    ck_assert_int_ne(run(rebalance, NULL, NULL, &rerr), 0);
    ck_assert_msg(strstr(rerr, "report mode"), "%s", rerr);
    const char *release[] = {VP_HOOK, "big", "release", "end", "-", NULL};
    ck_assert_int_eq(run(release, NULL, NULL, NULL), 0);
    g_autoptr(JsonObject) st3 = status();
    ck_assert_ptr_null(reported(st3, "big"));

    /* Enforce without adoption: "test" ran before; still reported, still unpinned. */
    reload(d, "mode=enforce\nadopt_running=no\n");
    ck_assert_ptr_null(vpManagerRecord(vpDaemonManager(d), "test"));
    ck_assert(unpinned(test));
    g_autoptr(JsonObject) st4 = status();
    ck_assert_str_eq(json_object_get_string_member(st4, "mode"), "enforce");
    e = reported(st4, "test");
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(strstr(json_object_get_string_member(e, "why"), "adopt_running=no"));
    /* ... and a start the hook admits is placed. */
    ck_assert_int_ne(run(prepare, big, NULL, NULL), 0);

    /* Adoption: placed and pinned. */
    reload(d, "mode=enforce\nadopt_running=yes\n");
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(vpDaemonManager(d), "test")->state), "applied");
    ck_assert(!unpinned(test));
    g_autoptr(JsonObject) st5 = status();
    ck_assert_ptr_null(reported(st5, "test"));
    virDomainFree(test);
    vpDaemonFree(d);
}
END_TEST

/* A reload that fails leaves the daemon on its last good configuration, and says so in
 * status until one succeeds. */
START_TEST(test_last_good_configuration)
{
    writeConfig("test:///default", TOPOLOGY, NULL);
    vpDaemon *d = startDaemon();
    ck_assert_ptr_null(vpDaemonConfigError(d));
    writeConfig("test:///default", TOPOLOGY, "mode=enforcing\n");
    g_autoptr(GError) err = NULL;
    ck_assert(!vpDaemonReload(d, &err));
    ck_assert_ptr_nonnull(strstr(vpDaemonConfigError(d), "mode='enforcing'"));
    ck_assert_int_eq(vpDaemonConfig(d)->mode, VP_MODE_ENFORCE);
    g_autofree char *text = vpDaemonMetricsText(d);
    ck_assert_ptr_nonnull(strstr(text, "\nvcpuplace_config_last_reload_successful 0\n"));

    /* The hook, reading the same broken file, asks the daemon, which answers as before:
     * a start that does not fit is refused, one that fits is reserved. */
    g_autofree char *big = domainXML("big", 12, "smt='isolate'", NULL);
    g_autofree char *small = domainXML("small", 1, NULL, NULL);
    const char *bigPrepare[] = {VP_HOOK, "big", "prepare", "begin", "-", NULL};
    const char *smallPrepare[] = {VP_HOOK, "small", "prepare", "begin", "-", NULL};
    g_autofree char *herr = NULL;
    ck_assert_int_eq(run(bigPrepare, big, NULL, &herr), 1);
    ck_assert_msg(strstr(herr, "refusing to start big") && strstr(herr, "isolate"), "%s", herr);
    g_clear_pointer(&herr, g_free);
    ck_assert_int_eq(run(smallPrepare, small, NULL, &herr), 0);
    ck_assert_msg(strstr(herr, "mode='enforcing'") && strstr(herr, "last good configuration"), "%s",
                  herr);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(vpDaemonManager(d), "small")->state),
                     "reserved");

    writeConfig("test:///default", TOPOLOGY, NULL);
    g_autoptr(JsonObject) st = status();
    ck_assert_ptr_nonnull(strstr(json_object_get_string_member(st, "config_error"), "enforcing"));
    reload(d, NULL);
    ck_assert_ptr_null(vpDaemonConfigError(d));
    vpDaemonFree(d);
}
END_TEST

Suite *
vpTestSuite(void)
{
    g_log_set_writer_func(quietWriter, NULL, NULL);
    Suite *s = suite_create("modes");
    TCase *tc = tcase_create("integration");
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_report_then_enforce);
    tcase_add_test(tc, test_last_good_configuration);
    suite_add_tcase(s, tc);
    return s;
}
