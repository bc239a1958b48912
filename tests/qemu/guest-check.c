/*
 * Runs inside the guest tier's SCHED_CORE kernel: checks the vCPU threads of a patched QEMU
 * started paused with two thread contexts, tc0 (cpu-affinity=0, core-sched=on) for vCPU 0
 * and tc1 (cpu-affinity=1, core-sched-from=tc0) for vCPU 1. Each vCPU thread must carry its
 * context's affinity, both the one cookie of tc0, and QEMU's main thread no cookie: the
 * cookie stays with the contexts. Prints "VPGUEST ok|fail NAME ..." lines.
 *
 * Usage: qemu-guest-check QEMU_PID
 */
#include <glib.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/*
 * Bounds on waiting (a hang guard under TCG, not a measurement): for the vCPU threads to
 * appear, and for the kernel's hash key, without which GET reads every cookie as 0.
 */
#define WAIT_THREADS_S 300
#define WAIT_COOKIE_S 30

typedef struct {
    const char *name; /* comm, with -name debug-threads=on */
    pid_t tid;
} Thread;

/* Returns 1 for a failed check, so that callers can count failures. */
static int
report(gboolean ok, const char *check, const char *detail)
{
    printf("VPGUEST %s %s%s%s\n", ok ? "ok" : "fail", check, detail ? " " : "",
           detail ? detail : "");
    fflush(stdout);
    return !ok;
}

static char *
task_file(pid_t pid, pid_t tid, const char *file)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/%s", pid, tid, file);
    char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return NULL;
    }
    return g_strstrip(text);
}

/* Fills in the tid of each named thread; TRUE when all were found. */
static gboolean
find_threads(pid_t pid, Thread *threads, size_t n)
{
    g_autofree char *dir_path = g_strdup_printf("/proc/%d/task", pid);
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
    const char *entry;
    size_t found = 0;

    if (!dir) {
        return FALSE;
    }
    while ((entry = g_dir_read_name(dir))) {
        pid_t tid = (pid_t)g_ascii_strtoll(entry, NULL, 10);
        g_autofree char *comm = task_file(pid, tid, "comm");

        for (size_t i = 0; comm && i < n; i++) {
            if (!threads[i].tid && strcmp(comm, threads[i].name) == 0) {
                threads[i].tid = tid;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        found += threads[i].tid != 0;
    }
    return found == n;
}

static char *
cpus_allowed(pid_t pid, pid_t tid)
{
    g_autofree char *status = task_file(pid, tid, "status");
    const char *line = status ? strstr(status, "Cpus_allowed_list:") : NULL;

    if (!line) {
        return NULL;
    }
    line += strlen("Cpus_allowed_list:");
    return g_strstrip(g_strndup(line, strcspn(line, "\n")));
}

static gboolean
cookie_of(pid_t tid, unsigned long *cookie, int *err)
{
    if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, tid, PR_SCHED_CORE_SCOPE_THREAD,
              (unsigned long)cookie) != 0) {
        *err = errno;
        return FALSE;
    }
    return TRUE;
}

static int
check_affinity(pid_t pid, const Thread *t, const char *label, const char *expected)
{
    g_autofree char *check = g_strdup_printf("affinity.%s", label);
    g_autofree char *actual = cpus_allowed(pid, t->tid);
    g_autofree char *detail =
        g_strdup_printf("expected %s, got %s", expected, actual ? actual : "(unreadable)");

    return report(actual && strcmp(actual, expected) == 0, check, detail);
}

int
main(int argc, char **argv)
{
    Thread threads[] = {
        {"CPU 0/TCG", 0},
        {"CPU 1/TCG", 0},
        {"TC tc0", 0},
        {"TC tc1", 0},
    };
    unsigned long cookies[G_N_ELEMENTS(threads)] = {0};
    unsigned long main_cookie = 0;
    pid_t pid;
    int err = 0;
    int failures = 0;

    if (argc != 2 || (pid = (pid_t)g_ascii_strtoll(argv[1], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: qemu-guest-check QEMU_PID\n");
        return 2;
    }

    for (int i = 0; i < WAIT_THREADS_S * 10 && !find_threads(pid, threads, G_N_ELEMENTS(threads));
         i++) {
        if (kill(pid, 0) != 0) {
            break;
        }
        g_usleep(G_USEC_PER_SEC / 10);
    }
    if (!find_threads(pid, threads, G_N_ELEMENTS(threads))) {
        report(FALSE, "threads", "QEMU's vCPU and context threads did not all appear");
        return 1;
    }
    report(TRUE, "threads", NULL);

    failures += check_affinity(pid, &threads[0], "vcpu0", "0");
    failures += check_affinity(pid, &threads[1], "vcpu1", "1");

    for (int i = 0; i < WAIT_COOKIE_S * 10; i++) {
        if (!cookie_of(threads[0].tid, &cookies[0], &err) || cookies[0] != 0) {
            break;
        }
        g_usleep(G_USEC_PER_SEC / 10);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(threads) && !err; i++) {
        cookie_of(threads[i].tid, &cookies[i], &err);
    }
    if (!err) {
        cookie_of(pid, &main_cookie, &err);
    }
    if (err) {
        report(FALSE, "cookie.get", g_strerror(err));
        return 1;
    }
    failures += report(cookies[0] != 0, "cookie.vcpu0", "core-sched=on gives vCPU 0 a cookie");
    failures += report(cookies[1] == cookies[0], "cookie.vcpu1", "core-sched-from=tc0 shares it");
    failures += report(cookies[2] == cookies[0] && cookies[3] == cookies[0], "cookie.contexts",
                       "the contexts hold the cookie their threads inherit");
    failures += report(main_cookie == 0, "cookie.main", "QEMU's main thread keeps no cookie");
    return failures ? 1 : 0;
}
