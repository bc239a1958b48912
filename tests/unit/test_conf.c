/*
 * plugin/conf: vcpuplaced.conf's one reader. Every refusal names the file and line, and
 * the group, key and value where there is one; what it accepts reads back as written;
 * its table agrees with core's names, ranges and defaults.
 */
#include "conf/conf.h"
#include "core/model/policy.h"
#include "core/balance/pressure.h"
#include "core/balance/rebalance.h"
#include "core/model/topology.h"

#include "checkmain.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F "/etc/vp.conf"

static const struct {
    const char *text;
    const char *error;
} bad[] = {
    {"[daemon]\nhook_failure=closed \n",
     F ":2: [daemon] hook_failure='closed ' ends in whitespace"},
    {"[daemon]\nhook_failure=closed\t\n",
     F ":2: [daemon] hook_failure='closed\t' ends in whitespace"},
    {"[daemon]\r\nhook_failure=closed\r\n",
     F ":2: [daemon] hook_failure='closed\r' ends in whitespace"},
    {"[daemon]\nhook_failure=Closed\n",
     F ":2: [daemon] hook_failure='Closed' is not one of open, closed"},
    {"[daemon]\nhook_failure=closed\n[policy]\nsmt spread\n",
     F ":4: 'smt spread' is not a [group] header, a key=value line or a comment"},
    {"[daemon]\nsokcet=/x\n", F ":2: unknown key 'sokcet' in [daemon] (known: uri, topology, "
                                "host_cpus, housekeeping_cpus, socket, state, hook_failure, "
                                "hook_timeout_ms, domains, qemu_conf, vcpu_poll_ms, qemu_run_dir, "
                                "node_memory_reserve_mib, capacity_vcpus, capacity_flavors, mode, "
                                "adopt_running, hook)"},
    {"# c\n\n[deamon]\n", F ":3: unknown group [deamon] (known: daemon, policy, rebalance)"},
    {"uri=qemu:///system\n",
     F ":1: key 'uri' is outside any group (known: [daemon], [policy], [rebalance])"},
    {"[daemon]\nsocket=/a\nsocket=b\n", F ":3: [daemon] socket='b' is not an absolute path"},
    {"[daemon]\nuri=\n", F ":2: [daemon] uri is empty"},
    {"[daemon]\nsocket=relative.sock\n",
     F ":2: [daemon] socket='relative.sock' is not an absolute path"},
    {"[daemon]\ncapacity_vcpus=1,0\n",
     F ":2: [daemon] capacity_vcpus='1,0': item 2 ('0') is not a whole number in [1, 4096]"},
    {"[daemon]\ncapacity_vcpus=2,,4\n",
     F ":2: [daemon] capacity_vcpus='2,,4': item 2 ('') is not a whole number in [1, 4096]"},
    {"[daemon]\ncapacity_vcpus=4 8\n",
     F ":2: [daemon] capacity_vcpus='4 8': item 1 ('4 8') is not a whole number in [1, 4096]"},
    {"[daemon]\nhook_timeout_ms=0\n",
     F ":2: [daemon] hook_timeout_ms='0' is not a whole number of milliseconds in [1, 60000]"},
    {"[daemon]\nhook_timeout_ms=-1\n",
     F ":2: [daemon] hook_timeout_ms='-1' is not a whole number of milliseconds in [1, 60000]"},
    {"[daemon]\nhook_timeout_ms=99999999999999999999\n",
     F ":2: [daemon] hook_timeout_ms='99999999999999999999' is not a whole number of "
       "milliseconds in [1, 60000]"},
    {"[daemon]\nvcpu_poll_ms=50\n", F ":2: [daemon] vcpu_poll_ms='50' is not 0 (off) or a whole "
                                      "number of milliseconds in [100, 3.6e+06]"},
    {"[daemon]\nhost_cpus=0-x\n", F ":2: [daemon] host_cpus='0-x' is not a CPU list (e.g. 0-3,8)"},
    {"[daemon]\nhousekeeping_cpus=all\n",
     F ":2: [daemon] housekeeping_cpus='all' is not a CPU list (e.g. 0-3,8) or none"},
    {"[daemon]\ndomains=web-*;;db-*\n", F ":2: [daemon] domains='web-*;;db-*': pattern 2 is empty"},
    {"[daemon]\ndomains=\n",
     F ":2: [daemon] domains is empty (leave it out to manage every domain)"},
    {"[policy]\nsmt=sideways\n",
     F ":2: [policy] smt='sideways' is not one of isolate, pack, spread, share"},
    {"[policy]\ngroup=a b\n",
     F ":2: [policy] group='a b' is not 1 to 64 characters of A-Z a-z 0-9 . _ -"},
    {"[rebalance]\ninterval=0\n",
     F ":2: [rebalance] interval='0' is not a number of seconds in [0.1, 3600]"},
    {"[rebalance]\ninterval=1,5\n",
     F ":2: [rebalance] interval='1,5' is not a number of seconds in [0.1, 3600]"},
    {"[rebalance]\nalpha=nan\n", F ":2: [rebalance] alpha='nan' is not a number in (0, 1]"},
    {"[rebalance]\nalpha=0\n", F ":2: [rebalance] alpha='0' is not a number in (0, 1]"},
    {"[rebalance]\ntextfile=/var/\n",
     F ":2: [rebalance] textfile='/var/' is not an absolute file path"},
    {"[rebalance]\nmin_residency=100\nmemory=10\n",
     F ":3: [rebalance] min_residency='100' must not be above memory='10'"},
    {"[rebalance]\ncool_wait=0.2\n",
     F ":2: [rebalance] cool_wait='0.2' must not be above hot_wait='0.10'"},
    {"[rebalance]\nmax_moves=0\n",
     F ":2: [rebalance] max_moves='0' is not a whole number in [1, 1000]"},
    {"[daemon]\nuri=a\0b\n", F ":2: NUL byte in the file"},
    {"[daemon]\nuri=\xff\n", F ":2: not UTF-8 text"},
    {"[daemon\n", F ":1: '[daemon' is not a [group] header, a key=value line or a comment"},
};

START_TEST(test_bad)
{
    const char *text = bad[_i].text;
    /* The NUL case is counted with its NUL. */
    size_t len = strlen(text);
    if (strstr(bad[_i].error, "NUL"))
        len += 1 + strlen(text + len + 1);
    char *err = NULL;
    vpConf *conf = vpConfParse(F, text, len, &err);
    ck_assert_msg(!conf, "accepted: %s", text);
    ck_assert_str_eq(err, bad[_i].error);
    free(err);
}
END_TEST

START_TEST(test_long_line)
{
    size_t n = VP_CONF_MAX_LINE + 100;
    char *text = malloc(n + 32);
    strcpy(text, "[daemon]\nuri=");
    memset(text + strlen(text), 'a', n);
    text[13 + n] = '\0';
    char *err = NULL;
    ck_assert_ptr_null(vpConfParse(F, text, strlen(text), &err));
    ck_assert_msg(strstr(err, F ":2: line is longer than"), "%s", err);
    free(err);
    free(text);
}
END_TEST

START_TEST(test_good)
{
    static const char text[] = "# vcpuplaced\n"
                               "; also a comment\n"
                               "[daemon]\n"
                               "uri = qemu+ssh://h/system\n"
                               "hook_failure=closed\n"
                               "hook_timeout_ms=250\n"
                               "domains=web-*;db-*;\n"
                               "housekeeping_cpus=none\n"
                               "host_cpus=0-3,8\n"
                               "\n"
                               "[policy]\n"
                               "smt=isolate\n"
                               "group=ops\n"
                               "[rebalance]\n"
                               "interval=0.5\n"
                               "hot_wait=0.3\n"
                               "[daemon]\n"
                               "hook_timeout_ms=300\n";
    char *err = NULL;
    vpConf *conf = vpConfParse(F, text, sizeof(text) - 1, &err);
    ck_assert_msg(conf, "%s", err);
    ck_assert_str_eq(vpConfPath(conf), F);
    ck_assert_str_eq(vpConfGet(conf, "daemon", "uri"), "qemu+ssh://h/system");
    ck_assert_int_eq(vpConfGetChoice(conf, "daemon", "hook_failure"), 1);
    ck_assert_uint_eq(vpConfGetUint(conf, "daemon", "hook_timeout_ms"), 300);
    ck_assert_str_eq(vpConfGet(conf, "daemon", "socket"), VP_DEFAULT_SOCKET);
    ck_assert(!vpConfHas(conf, "daemon", "socket", NULL));
    int line = 0;
    ck_assert(vpConfHas(conf, "daemon", "hook_failure", &line));
    ck_assert_int_eq(line, 5);
    char **globs = vpConfList(vpConfGet(conf, "daemon", "domains"));
    ck_assert_str_eq(globs[0], "web-*");
    ck_assert_str_eq(globs[1], "db-*");
    ck_assert_ptr_null(globs[2]);
    ck_assert(vpConfManages(globs, "web-1") && vpConfManages(globs, "db-") &&
              !vpConfManages(globs, "xweb-1") && !vpConfManages(globs, "web"));
    vpConfListFree(globs);
    ck_assert_double_eq(vpConfGetNumber(conf, "rebalance", "interval"), 0.5);
    ck_assert_uint_eq(vpConfCount(conf, "policy"), 2);
    const char *key, *value;
    vpConfAt(conf, "policy", 1, &key, &value);
    ck_assert_str_eq(key, "group");
    ck_assert_str_eq(value, "ops");
    vpConfFree(conf);
}
END_TEST

/* The daemon and the hook decide with this rule which domains are vcpuplace's. */
START_TEST(test_manages)
{
    char *globs[] = {"a*b?c", "*.prod", "exact", NULL};
    static const char *const yes[] = {"abxc", "ab1c", "aXXbXXbyc", "x.prod", ".prod", "exact"};
    static const char *const no[] = {"abc", "abxcd", "prod", "exactly", "xexact", ""};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        ck_assert_msg(vpConfManages(globs, yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        ck_assert_msg(!vpConfManages(globs, no[i]), "%s", no[i]);
    ck_assert(vpConfManages(NULL, "anything"));
}
END_TEST

START_TEST(test_missing)
{
    char *err = NULL;
    vpConf *conf = vpConfLoad("/nonexistent/vp.conf", true, &err);
    ck_assert_ptr_nonnull(conf);
    ck_assert_ptr_null(vpConfPath(conf));
    ck_assert_str_eq(vpConfGet(conf, "daemon", "hook_failure"), "open");
    vpConfFree(conf);
    ck_assert_ptr_null(vpConfLoad("/nonexistent/vp.conf", false, &err));
    ck_assert_str_eq(err, "cannot read configuration /nonexistent/vp.conf: No such file or "
                          "directory");
    free(err);
    ck_assert_ptr_null(vpConfLoad("/dev/zero", false, &err));
    ck_assert_str_eq(err, "cannot read configuration /dev/zero: not a regular file");
    free(err);
}
END_TEST

/* The shipped example parses, and says what the table says. */
START_TEST(test_shipped)
{
    const char *top = getenv("VP_TOPDIR");
    ck_assert_ptr_nonnull(top);
    char path[4096];
    snprintf(path, sizeof(path), "%s/plugin/daemon/vcpuplaced.conf", top);
    char *err = NULL;
    vpConf *conf = vpConfLoad(path, false, &err);
    ck_assert_msg(conf, "%s", err);
    ck_assert_uint_eq(vpConfCount(conf, "daemon"), 0);
    vpConfFree(conf);
}
END_TEST

/* Lists as core takes them (hwloc does the parsing there). */
START_TEST(test_cpu_lists)
{
    static const char *const lists[] = {
        "0",  "0-3", "0-3,8", "65535", "65536", "3-1",   "0-",   "-1",
        ",1", "1,",  "0-3-5", "1 ",    "a",     "00-01", "0--1", "99999",
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        GError *err = NULL;
        hwloc_bitmap_t set = vpCpuListParse("x", lists[i], &err);
        ck_assert_msg(vpConfCpuListValid(lists[i]) == (set != NULL), "'%s'", lists[i]);
        if (set)
            hwloc_bitmap_free(set);
        g_clear_error(&err);
    }
}
END_TEST

/* [policy]: every choice of the table is core's, in core's order, and the defaults are
 * core's. */
START_TEST(test_policy_agrees)
{
    vpPolicy defaults, fromTable;
    vpPolicyInitDefaults(&defaults);
    vpPolicyInitDefaults(&fromTable);
    for (const vpConfKey *k = vpConfKeys; k->key; k++) {
        if (strcmp(k->group, "policy") != 0 || k->type != VP_CONF_CHOICE)
            continue;
        GError *err = NULL;
        vpPolicy p;
        vpPolicyInitDefaults(&p);
        ck_assert(!vpPolicySetDefault(&p, k->key, "?", &err));
        char *want = g_strdup_printf("%s='?' is not one of %s", k->key, k->choices);
        ck_assert_str_eq(err->message, want);
        g_free(want);
        g_clear_error(&err);
        ck_assert_msg(vpPolicySetDefault(&fromTable, k->key, k->def, &err), "%s", k->key);
        vpPolicyClear(&p);
    }
    ck_assert_int_eq(fromTable.smt, defaults.smt);
    ck_assert_int_eq(fromTable.coresched, defaults.coresched);
    ck_assert_int_eq(fromTable.locality, defaults.locality);
    ck_assert_int_eq(fromTable.emulator, defaults.emulator);
    ck_assert_int_eq(fromTable.rebalance, defaults.rebalance);
    ck_assert_int_eq(fromTable.unmet, defaults.unmet);
    ck_assert_int_eq(fromTable.tenancy, defaults.tenancy);
    vpPolicyClear(&defaults);
    vpPolicyClear(&fromTable);
}
END_TEST

/* locality=numa:N: the table takes the N core takes, and refuses the others with core's
 * words. */
START_TEST(test_split_agrees)
{
    static const char *const values[] = {"numa:2",  "numa:64", "numa:1", "numa:65",
                                         "numa:02", "numa:x",  "numa:"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char *text = g_strdup_printf("[policy]\nlocality=%s\n", values[i]);
        char *err = NULL;
        GError *core = NULL;
        vpPolicy p;
        vpPolicyInitDefaults(&p);
        vpConf *conf = vpConfParse(F, text, strlen(text), &err);
        gboolean ok = vpPolicySetDefault(&p, "locality", values[i], &core);
        ck_assert_msg(!conf == !ok, "%s: table %s, core %s", values[i], conf ? "takes" : "refuses",
                      ok ? "takes" : "refuses");
        if (!ok) {
            char *want = g_strdup_printf("%s:2: [policy] %s", F, core->message);
            ck_assert_str_eq(err, want);
            g_free(want);
        }
        g_clear_error(&core);
        vpConfFree(conf);
        free(err);
        g_free(text);
        vpPolicyClear(&p);
    }
}
END_TEST

/* [rebalance]: the table's defaults are core's, and so is every range end. */
START_TEST(test_ranges_agree)
{
    char *err = NULL;
    vpConf *none = vpConfParse(F, "", 0, &err);
    vpPressureConfig p;
    vpRebalanceConfig r;
    vpPressureConfigInit(&p);
    vpRebalanceConfigInit(&r);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "alpha"), p.alpha);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "hot_wait"), p.hot_wait);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "cool_wait"), p.cool_wait);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "hot_corun"), p.hot_corun);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "idle_busy"), p.idle_busy);
    ck_assert_uint_eq(vpConfGetUint(none, "rebalance", "persistence"), p.persistence);
    ck_assert_uint_eq(vpConfGetUint(none, "rebalance", "max_moves"), r.max_moves);
    ck_assert_int_eq(vpConfGetUint(none, "rebalance", "min_residency") * 1000000000LL,
                     r.min_residency_ns);
    ck_assert_int_eq(vpConfGetUint(none, "rebalance", "memory") * 1000000000LL, r.memory_ns);
    ck_assert_uint_eq(vpConfGetUint(none, "rebalance", "return_quiet"), r.return_quiet);
    ck_assert_double_eq(vpConfGetNumber(none, "rebalance", "coupled_wakeups"), r.coupled_wakeups);
    vpConfFree(none);

    /* Each pressure key at its ends: what the table allows, core's validator allows. */
    static const char *const keys[] = {"alpha", "hot_wait", "cool_wait", "hot_corun", "idle_busy"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const vpConfKey *k = vpConfKeys;
        while (strcmp(k->key, keys[i]) != 0)
            k++;
        double ends[] = {k->min, k->max, k->min - 1e-9, k->max + 1e-9};
        for (int e = 0; e < 4; e++) {
            vpPressureConfig c;
            vpPressureConfigInit(&c);
            c.cool_wait = 0;
            c.hot_wait = 1;
            double *f = strcmp(k->key, "alpha") == 0       ? &c.alpha
                        : strcmp(k->key, "hot_wait") == 0  ? &c.hot_wait
                        : strcmp(k->key, "cool_wait") == 0 ? &c.cool_wait
                        : strcmp(k->key, "hot_corun") == 0 ? &c.hot_corun
                                                           : &c.idle_busy;
            *f = ends[e];
            bool table =
                ends[e] >= k->min && !(k->min_open && ends[e] == k->min) && ends[e] <= k->max;
            ck_assert_msg(vpPressureConfigValidate(&c, NULL) == table, "%s=%g", k->key, ends[e]);
        }
    }
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("conf");
    tcase_add_loop_test(tc, test_bad, 0, sizeof(bad) / sizeof(bad[0]));
    tcase_add_test(tc, test_long_line);
    tcase_add_test(tc, test_good);
    tcase_add_test(tc, test_missing);
    tcase_add_test(tc, test_manages);
    tcase_add_test(tc, test_shipped);
    tcase_add_test(tc, test_cpu_lists);
    tcase_add_test(tc, test_policy_agrees);
    tcase_add_test(tc, test_split_agrees);
    tcase_add_test(tc, test_ranges_agree);
    suite_add_tcase(s, tc);
    return s;
}
