/*
 * Core-scheduling wrapper against the running kernel, whatever it is. The expected
 * answer comes from sources the wrapper does not read: the kernel's own config
 * (/proc/config.gz or /boot/config-RELEASE) and the SMT siblings in sysfs. On a kernel
 * without CONFIG_SCHED_CORE (Debian's, this project's build host) every call must be
 * classified "unsupported"; on the guest tier's kernel the same program checks that
 * cookies are created, shared, read back, and that ESRCH and EPERM are told apart.
 */
#include "host/coresched.h"

#include "core/model/topology.h"
#include "checkmain.h"

#include <check.h>
#include <errno.h>
#include <gio/gio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum { CONFIG_UNKNOWN, CONFIG_NO, CONFIG_YES } ConfigAnswer;

static ConfigAnswer
answerFromLines(GDataInputStream *lines)
{
    char *line;

    while ((line = g_data_input_stream_read_line(lines, NULL, NULL, NULL))) {
        g_autofree char *owned = line;

        if (g_str_equal(owned, "CONFIG_SCHED_CORE=y"))
            return CONFIG_YES;
    }
    return CONFIG_NO;
}

/* Whether the running kernel was built with CONFIG_SCHED_CORE, per its own config. */
static ConfigAnswer
kernelHasSchedCore(const char **source)
{
    struct utsname uts;
    g_autoptr(GFile) gz = g_file_new_for_path("/proc/config.gz");
    g_autoptr(GFileInputStream) raw = g_file_read(gz, NULL, NULL);
    g_autofree char *boot = NULL;
    g_autoptr(GFile) plain = NULL;

    if (raw) {
        g_autoptr(GZlibDecompressor) gunzip =
            g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
        g_autoptr(GInputStream) text =
            g_converter_input_stream_new(G_INPUT_STREAM(raw), G_CONVERTER(gunzip));
        g_autoptr(GDataInputStream) lines = g_data_input_stream_new(text);

        *source = "/proc/config.gz";
        return answerFromLines(lines);
    }
    if (uname(&uts) < 0)
        return CONFIG_UNKNOWN;
    boot = g_strdup_printf("/boot/config-%s", uts.release);
    plain = g_file_new_for_path(boot);
    g_autoptr(GFileInputStream) bootRaw = g_file_read(plain, NULL, NULL);
    if (bootRaw) {
        g_autoptr(GDataInputStream) lines = g_data_input_stream_new(G_INPUT_STREAM(bootRaw));

        *source = "/boot/config-RELEASE";
        return answerFromLines(lines);
    }
    *source = "none (neither /proc/config.gz nor /boot/config-RELEASE readable)";
    return CONFIG_UNKNOWN;
}

/* Whether some online CPU has an SMT sibling: the kernel's condition for ENODEV. */
static bool
smtPresent(void)
{
    g_autofree char *online = NULL;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_t siblings = hwloc_bitmap_alloc();
    bool found = false;
    int cpu;

    ck_assert(g_file_get_contents("/sys/devices/system/cpu/online", &online, NULL, NULL));
    ck_assert_int_eq(hwloc_bitmap_list_sscanf(cpus, online), 0);
    hwloc_bitmap_foreach_begin(cpu, cpus)
    {
        g_autofree char *path =
            g_strdup_printf("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
        g_autofree char *list = NULL;

        if (g_file_get_contents(path, &list, NULL, NULL) &&
            hwloc_bitmap_list_sscanf(siblings, list) == 0 && hwloc_bitmap_weight(siblings) > 1)
            found = true;
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(siblings);
    return found;
}

static vpCoreschedStatus
expectedSupport(void)
{
    const char *source = NULL;
    ConfigAnswer config = kernelHasSchedCore(&source);
    bool smt = smtPresent();

    fprintf(stderr, "test_coresched: kernel config from %s: CONFIG_SCHED_CORE %s; SMT %s\n", source,
            config == CONFIG_YES  ? "=y"
            : config == CONFIG_NO ? "not set"
                                  : "unknown",
            smt ? "present" : "absent");
    ck_assert_msg(config != CONFIG_UNKNOWN,
                  "cannot tell whether this kernel has CONFIG_SCHED_CORE: no kernel config "
                  "readable, so the probe's answer cannot be checked");
    if (config == CONFIG_NO)
        return VP_CORESCHED_UNSUPPORTED;
    return smt ? VP_CORESCHED_OK : VP_CORESCHED_NO_SMT;
}

/* A child process that sleeps until reaped. */
static pid_t
spawnIdleChild(void)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (;;)
            pause();
    }
    return pid;
}

static void
reapChild(pid_t pid)
{
    int status;

    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* A pid that existed a moment ago: what a daemon sees when a VM exits under it. */
static pid_t
exitedPid(void)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void
assertErrorMentions(const GError *error, const char *a, const char *b)
{
    ck_assert_ptr_nonnull(error);
    ck_assert_msg(g_error_matches(error, VP_ERROR, error->code), "domain is not VP_ERROR");
    ck_assert_msg(strstr(error->message, a) && strstr(error->message, b),
                  "message '%s' should name '%s' and '%s'", error->message, a, b);
}

START_TEST(probe_matches_kernel)
{
    g_autoptr(GError) error = NULL;
    vpCoreschedStatus expected = expectedSupport();
    vpCoreschedStatus got = vpCoreschedProbe(&error);

    ck_assert_msg(got == expected, "probe said %s, the kernel config and sysfs say %s",
                  vpCoreschedStatusName(got), vpCoreschedStatusName(expected));
    switch (got) {
    case VP_CORESCHED_OK:
        ck_assert_ptr_null(error);
        break;
    case VP_CORESCHED_UNSUPPORTED:
        assertErrorMentions(error, "CONFIG_SCHED_CORE", "EINVAL");
        ck_assert_int_eq(error->code, VP_ERROR_UNSUPPORTED);
        break;
    case VP_CORESCHED_NO_SMT:
        assertErrorMentions(error, "SMT", "ENODEV");
        ck_assert_int_eq(error->code, VP_ERROR_UNSUPPORTED);
        break;
    default:
        ck_abort_msg("probe cannot answer %s", vpCoreschedStatusName(got));
    }
}
END_TEST

/* The kernel checks support before it looks the pid up: ESRCH only where cookies work. */
START_TEST(exited_pid_is_gone)
{
    vpCoreschedStatus support = expectedSupport();
    vpCoreschedStatus expected = support == VP_CORESCHED_OK ? VP_CORESCHED_GONE : support;
    const char *errname = support == VP_CORESCHED_OK            ? "ESRCH"
                          : support == VP_CORESCHED_UNSUPPORTED ? "EINVAL"
                                                                : "ENODEV";
    pid_t gone = exitedPid();
    g_autofree char *name = g_strdup_printf("%d", (int)gone);
    g_autoptr(GError) createError = NULL;
    g_autoptr(GError) getError = NULL;
    g_autoptr(GError) shareError = NULL;
    uint64_t cookie = 42;

    ck_assert_int_eq(vpCoreschedCreate(gone, VP_CORESCHED_SCOPE_THREAD_GROUP, &createError),
                     expected);
    assertErrorMentions(createError, name, errname);
    ck_assert_int_eq(vpCoreschedGet(gone, &cookie, &getError), expected);
    assertErrorMentions(getError, name, errname);
    ck_assert_int_eq(cookie, 42);
    ck_assert_int_eq(vpCoreschedShare(gone, getpid(), VP_CORESCHED_SCOPE_THREAD, &shareError),
                     expected);
    assertErrorMentions(shareError, name, errname);
}
END_TEST

START_TEST(bad_arguments_never_reach_the_kernel)
{
    g_autoptr(GError) zero = NULL;
    g_autoptr(GError) negative = NULL;
    g_autoptr(GError) scope = NULL;
    g_autoptr(GError) empty = NULL;

    ck_assert_int_eq(vpCoreschedCreate(0, VP_CORESCHED_SCOPE_THREAD, &zero), VP_CORESCHED_FAILED);
    ck_assert(g_error_matches(zero, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_int_eq(vpCoreschedShare(getpid(), -5, VP_CORESCHED_SCOPE_THREAD, &negative),
                     VP_CORESCHED_FAILED);
    assertErrorMentions(negative, "pid", "'-5'");
    ck_assert_int_eq(vpCoreschedCreate(getpid(), (vpCoreschedScope)7, &scope), VP_CORESCHED_FAILED);
    assertErrorMentions(scope, "scope", "'7'");
    ck_assert_int_eq(vpCoreschedVerify(NULL, 0, 0, NULL, &empty), VP_CORESCHED_FAILED);
    ck_assert(g_error_matches(empty, VP_ERROR, VP_ERROR_INVALID));
}
END_TEST

/* Where cookies work: a created cookie reads back, sharing copies it, and a third process
 * keeps its own. Elsewhere the test states why it checked nothing more. */
START_TEST(create_share_verify)
{
    g_autoptr(GError) error = NULL;
    pid_t self = gettid();
    pid_t a, b;
    uint64_t mine = 0, theirs = 0, other = 0;

    if (expectedSupport() != VP_CORESCHED_OK) {
        fprintf(stderr, "test_coresched: create_share_verify needs a kernel with core "
                        "scheduling and SMT (the guest tier runs it)\n");
        return;
    }
    a = spawnIdleChild();
    b = spawnIdleChild();

    ck_assert_int_eq(vpCoreschedCreate(self, VP_CORESCHED_SCOPE_THREAD, &error), VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify(&self, 1, VP_CORESCHED_SETTLE_MS, &mine, &error),
                     VP_CORESCHED_OK);
    ck_assert_uint_ne(mine, 0);

    ck_assert_int_eq(vpCoreschedShare(self, a, VP_CORESCHED_SCOPE_THREAD_GROUP, &error),
                     VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify((pid_t[]){self, a}, 2, 0, &theirs, &error), VP_CORESCHED_OK);
    ck_assert_uint_eq(theirs, mine);

    ck_assert_int_eq(vpCoreschedCreate(b, VP_CORESCHED_SCOPE_THREAD_GROUP, &error),
                     VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify(&b, 1, 0, &other, &error), VP_CORESCHED_OK);
    ck_assert_uint_ne(other, mine);
    ck_assert_int_eq(vpCoreschedVerify((pid_t[]){a, b}, 2, 0, NULL, &error), VP_CORESCHED_MISMATCH);
    assertErrorMentions(error, "has cookie", "thread");

    reapChild(a);
    reapChild(b);
}
END_TEST

/* The throwaway thread that carries a shared cookie must leave the caller's alone. */
START_TEST(share_keeps_callers_cookie)
{
    g_autoptr(GError) error = NULL;
    pid_t self = gettid();
    pid_t a, b;
    uint64_t before = 0, after = 0, theirs = 0;

    if (expectedSupport() != VP_CORESCHED_OK) {
        fprintf(stderr, "test_coresched: share_keeps_callers_cookie needs a kernel with "
                        "core scheduling and SMT (the guest tier runs it)\n");
        return;
    }
    a = spawnIdleChild();
    b = spawnIdleChild();
    ck_assert_int_eq(vpCoreschedCreate(a, VP_CORESCHED_SCOPE_THREAD_GROUP, &error),
                     VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedCreate(self, VP_CORESCHED_SCOPE_THREAD, &error), VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify(&self, 1, VP_CORESCHED_SETTLE_MS, &before, &error),
                     VP_CORESCHED_OK);

    ck_assert_int_eq(vpCoreschedShare(a, b, VP_CORESCHED_SCOPE_THREAD_GROUP, &error),
                     VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify((pid_t[]){a, b}, 2, 0, &theirs, &error), VP_CORESCHED_OK);
    ck_assert_int_eq(vpCoreschedVerify(&self, 1, 0, &after, &error), VP_CORESCHED_OK);
    ck_assert_uint_eq(after, before);
    ck_assert_uint_ne(theirs, before);
    reapChild(a);
    reapChild(b);
}
END_TEST

/* EPERM: an unprivileged process may not touch another user's process. */
START_TEST(unprivileged_is_denied)
{
    pid_t child;
    int status;

    if (expectedSupport() != VP_CORESCHED_OK || geteuid() != 0) {
        fprintf(stderr, "test_coresched: unprivileged_is_denied needs root on a kernel with "
                        "core scheduling and SMT (the guest tier runs it)\n");
        return;
    }
    child = spawnIdleChild();
    pid_t prober = fork();
    ck_assert_int_ge(prober, 0);
    if (prober == 0) {
        g_autoptr(GError) error = NULL;
        g_autofree char *name = g_strdup_printf("%d", (int)child);

        if (setuid(65534) < 0)
            _exit(10);
        if (vpCoreschedCreate(child, VP_CORESCHED_SCOPE_THREAD_GROUP, &error) !=
            VP_CORESCHED_DENIED)
            _exit(11);
        if (!strstr(error->message, name) || !strstr(error->message, "EPERM"))
            _exit(12);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(prober, &status, 0), prober);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "unprivileged create on root's process: exit %d (10 setuid, 11 not denied, "
                  "12 message)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    reapChild(child);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("coresched");
    TCase *tc = tcase_create("kernel");

    tcase_add_test(tc, probe_matches_kernel);
    tcase_add_test(tc, exited_pid_is_gone);
    tcase_add_test(tc, bad_arguments_never_reach_the_kernel);
    tcase_add_test(tc, create_share_verify);
    tcase_add_test(tc, share_keeps_callers_cookie);
    tcase_add_test(tc, unprivileged_is_denied);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}
