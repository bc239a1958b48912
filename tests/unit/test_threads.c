/*
 * host/threads.h and vpCookieProcessFind() on libvirt's pidfile and a /proc tree laid out
 * like a QEMU's (a directory standing in for /proc: no QEMU runs in this tier; the e2e tier
 * finds real ones).
 */
#include "host/cookieapply.h"
#include "host/procstat.h"
#include "host/threads.h"
#include "checkmain.h"

#include <check.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static char *tmpdir;
static char *run;
static char *proc;

static void
writeFile(const char *dir, const char *name, const char *text, gsize len)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *parent = g_path_get_dirname(path);
    ck_assert_int_eq(g_mkdir_with_parents(parent, 0755), 0);
    ck_assert(g_file_set_contents(path, text, len, NULL));
}

/* A /proc/PID/stat line with this start time (clock ticks after boot); the command name
 * holds ") " as a process may make it. */
static char *
statLine(pid_t pid, guint64 start_ticks)
{
    return g_strdup_printf("%d (qemu) x) S 1 %d %d 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 9 0 "
                           "%" G_GUINT64_FORMAT " 1000000 200 18446744073709551615\n",
                           (int)pid, (int)pid, (int)pid, start_ticks);
}

/* The start time of this test's own process: before the pidfile makeQemu() writes. */
static guint64
selfStartTicks(void)
{
    vpProcStat self;

    ck_assert(vpProcStatRead("/proc", getpid(), &self, NULL));
    ck_assert_int_eq(self.ppid, getppid());
    return self.start_ticks;
}

static void
removeTree(const char *path)
{
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *child = g_build_filename(path, name, NULL);

        if (g_file_test(child, G_FILE_TEST_IS_DIR))
            removeTree(child);
        else
            g_remove(child);
    }
    g_rmdir(path);
}

/* Guest "we,b" (libvirt doubles the comma in -name): vCPUs 0, 1 and 3, two other threads. */
static void
makeQemu(void)
{
    static const char cmdline[] = "qemu-system-x86_64\0-name\0guest=we,,b,debug-threads=on\0";

    tmpdir = g_dir_make_tmp("vp-threads-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmpdir);
    run = g_build_filename(tmpdir, "run", NULL);
    proc = g_build_filename(tmpdir, "proc", NULL);
    writeFile(run, "we,b.pid", "4242\n", -1);
    writeFile(proc, "4242/cmdline", cmdline, sizeof(cmdline));
    writeFile(proc, "4242/task/4242/comm", "qemu-system-x86\n", -1);
    writeFile(proc, "4242/task/4250/comm", "CPU 1/KVM\n", -1);
    writeFile(proc, "4242/task/4249/comm", "CPU 0/KVM\n", -1);
    writeFile(proc, "4242/task/4251/comm", "IO mon_iothread\n", -1);
    writeFile(proc, "4242/task/4252/comm", "CPU 3/TCG\n", -1);
    g_autofree char *stat = statLine(4242, selfStartTicks());
    writeFile(proc, "4242/stat", stat, -1);
}

static void
removeQemu(void)
{
    removeTree(tmpdir);
    g_clear_pointer(&tmpdir, g_free);
    g_clear_pointer(&run, g_free);
    g_clear_pointer(&proc, g_free);
}

START_TEST(test_vcpu_threads)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpVcpuThreads) t = vpVcpuThreadsFind(run, proc, "we,b", &err);
    ck_assert_msg(t, "%s", err ? err->message : "");
    ck_assert_int_eq(t->pid, 4242);
    ck_assert_uint_eq(t->nvcpus, 4);
    ck_assert_int_eq(t->tids[0], 4249);
    ck_assert_int_eq(t->tids[1], 4250);
    ck_assert_int_eq(t->tids[2], 0);
    ck_assert_int_eq(t->tids[3], 4252);
    ck_assert_uint_eq(t->start_ticks, selfStartTicks());

    /* The pid reused by a process that started after QEMU wrote the pidfile, and that
     * names itself as the guest: a stale pidfile once sent the cookie there. */
    g_autofree char *later = statLine(4242, selfStartTicks() + 3600 * sysconf(_SC_CLK_TCK));
    g_autofree char *stat = statLine(4242, selfStartTicks());
    writeFile(proc, "4242/stat", later, -1);
    ck_assert_ptr_null(vpVcpuThreadsFind(run, proc, "we,b", &err));
    ck_assert_msg(strstr(err->message, "its pid was reused"), "%s", err->message);
    g_clear_error(&err);
    writeFile(proc, "4242/stat", stat, -1);

    /* A pidfile naming another guest's QEMU (a stale file, a reused pid). */
    writeFile(run, "other.pid", "4242", -1);
    ck_assert_ptr_null(vpVcpuThreadsFind(run, proc, "other", &err));
    ck_assert_msg(strstr(err->message, "is not its QEMU"), "%s", err->message);
    g_clear_error(&err);
    /* A prefix of the real name is not the name. */
    writeFile(run, "we.pid", "4242", -1);
    ck_assert_ptr_null(vpVcpuThreadsFind(run, proc, "we", &err));
    g_clear_error(&err);
    ck_assert_ptr_null(vpVcpuThreadsFind(run, proc, "../etc/x", &err));
    ck_assert_msg(strstr(err->message, "not a file name"), "%s", err->message);
    g_clear_error(&err);
    ck_assert_ptr_null(vpVcpuThreadsFind(run, proc, "nosuch", &err));
    g_clear_error(&err);
    ck_assert_ptr_null(vpVcpuThreadsFind(NULL, proc, "we,b", &err));
    ck_assert_str_eq(vpVcpuThreadsRunDir("qemu:///system"), "/run/libvirt/qemu");
    ck_assert_ptr_null(vpVcpuThreadsRunDir("qemu:///session"));
    ck_assert_ptr_null(vpVcpuThreadsRunDir("test:///default"));
}
END_TEST

/* The cookie pass's view: vCPU threads first by vCPU, then every other thread, with names. */
START_TEST(test_cookie_process)
{
    vpCookieProcess p = {0};
    bool main_seen = false, io_seen = false;

    vpCookieProcessFind(&p, run, proc, "we,b");
    ck_assert_int_eq(p.pid, 4242);
    ck_assert_uint_eq(p.threads->len, 5);
    {
        static const pid_t tids[] = {4249, 4250, 4252};
        static const int vcpus[] = {0, 1, 3};
        static const char *const comms[] = {"CPU 0/KVM", "CPU 1/KVM", "CPU 3/TCG"};

        for (guint i = 0; i < G_N_ELEMENTS(tids); i++) {
            const vpCookieThread *th = &g_array_index(p.threads, vpCookieThread, i);

            ck_assert_int_eq(th->tid, tids[i]);
            ck_assert_int_eq(th->vcpu, vcpus[i]);
            ck_assert_str_eq(th->comm, comms[i]);
        }
    }
    for (guint i = 3; i < p.threads->len; i++) {
        const vpCookieThread *th = &g_array_index(p.threads, vpCookieThread, i);

        ck_assert_int_eq(th->vcpu, -1);
        if (th->tid == 4242) {
            ck_assert_str_eq(th->comm, "qemu-system-x86");
            main_seen = true;
        } else {
            ck_assert_int_eq(th->tid, 4251);
            ck_assert_str_eq(th->comm, "IO mon_iothread");
            io_seen = true;
        }
    }
    ck_assert(main_seen && io_seen);
    g_array_free(p.threads, TRUE);

    /* No QEMU found: an empty list, pid 0. */
    memset(&p, 0, sizeof(p));
    vpCookieProcessFind(&p, run, proc, "nosuch");
    ck_assert_int_eq(p.pid, 0);
    ck_assert_uint_eq(p.threads->len, 0);
    g_array_free(p.threads, TRUE);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("proc");

    tcase_add_checked_fixture(tc, makeQemu, removeQemu);
    tcase_add_test(tc, test_vcpu_threads);
    tcase_add_test(tc, test_cookie_process);
    suite_add_tcase(s, tc);
    return s;
}
