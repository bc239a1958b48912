/*
 * guest-cases: how the SCHED_CORE kernel treats cookies in the cases a placement daemon
 * meets around QEMU and cannot see from its own code, through host/coresched.h:
 *   ids      a cookie's id once every holder has exited: the kernel may hand it out again;
 *   race     PR_SCHED_CORE_SHARE_TO of a whole thread group while the group creates
 *            threads: a thread cloned during the share keeps its parent's old cookie, and a
 *            second share (the daemon's read-back and retry) catches it;
 *   exec     a cookie survives exec (QEMU re-executed by a wrapper keeps it);
 *   io_uring io_uring workers (iou-wrk-N), threads the kernel creates inside QEMU's
 *            process, take the cookie of the thread that submitted the work: a vCPU-scope
 *            cookie never reaches a worker of the main thread;
 *   smt-off  SMT switched off at runtime (/sys/devices/system/cpu/smt/control): every
 *            PR_SCHED_CORE call answers ENODEV, and cookies work again once it is on.
 * smt-off runs last: it takes CPUs offline for a moment.
 */
#include "host/coresched.h"
#include "report.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define X(id) ((guint64)(id))
#define RACE_THREADS 150
#define SMT_CONTROL "/sys/devices/system/cpu/smt/control"

static pid_t
sleeper(void)
{
    pid_t pid = fork();

    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        for (;;)
            pause();
    }
    return pid;
}

static void
reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static uint64_t
cookieOf(pid_t tid)
{
    uint64_t value = 0;
    g_autoptr(GError) error = NULL;

    if (vpCoreschedGet(tid, &value, &error) != VP_CORESCHED_OK)
        vpgCheck(false, "get", "%s", error->message);
    return value;
}

/* ---- ids ------------------------------------------------------------------------------ */

static void
ids(void)
{
    g_autoptr(GError) error = NULL;
    pid_t a = sleeper(), b = sleeper();
    uint64_t first, other, again = 0;
    int reused = 0, tries = 20;

    vpCoreschedCreate(a, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    vpCoreschedCreate(b, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    first = cookieOf(a);
    other = cookieOf(b);
    vpgCheck(first && other && first != other, "ids-distinct-while-held",
             "two live cookies %#" G_GINT64_MODIFIER "x, %#" G_GINT64_MODIFIER "x", X(first),
             X(other));
    reap(a);
    for (int i = 0; i < tries && !reused; i++) {
        pid_t c = sleeper();
        vpCoreschedCreate(c, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
        g_clear_error(&error);
        again = cookieOf(c);
        reused = again == first ? i + 1 : 0;
        vpgCheck(again != other, "ids-never-a-live-one",
                 "new cookie %#" G_GINT64_MODIFIER "x while %#" G_GINT64_MODIFIER "x is held",
                 X(again), X(other));
        reap(c);
        if (reused || i == tries - 1)
            break;
    }
    vpgFigure("ids-reused", "%s (freed %#" G_GINT64_MODIFIER "x; %s)", reused ? "yes" : "no",
              X(first), reused ? "seen again on a new cookie" : "not seen again in 20 new cookies");
    reap(b);
}

/* ---- race ----------------------------------------------------------------------------- */

static gpointer
raceIdle(gpointer data)
{
    for (;;)
        pause();
    return NULL;
}

/* The child's main thread creates RACE_THREADS threads, one after another, then waits. */
static void G_GNUC_NORETURN
raceChild(int ready)
{
    if (write(ready, "r", 1) != 1)
        _exit(3);
    for (int i = 0; i < RACE_THREADS; i++)
        g_thread_unref(g_thread_new(NULL, raceIdle, NULL));
    if (write(ready, "d", 1) != 1)
        _exit(3);
    for (;;)
        pause();
}

/* Threads of pid with another cookie than want; *n counts them all. */
static int
without(pid_t pid, uint64_t want, int *n)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task", (int)pid);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *entry;
    int missed = 0;

    *n = 0;
    while (dir && (entry = g_dir_read_name(dir))) {
        (*n)++;
        missed += cookieOf((pid_t)atoi(entry)) != want;
    }
    return missed;
}

static void
race(void)
{
    g_autoptr(GError) error = NULL;
    int fds[2], n = 0, missed, after, rounds = 0;
    char c;
    pid_t source = sleeper(), pid;
    uint64_t want;

    vpCoreschedCreate(source, VP_CORESCHED_SCOPE_THREAD, &error);
    want = cookieOf(source);
    if (pipe(fds) < 0 || (pid = fork()) < 0) {
        perror("race");
        exit(2);
    }
    if (pid == 0)
        raceChild(fds[1]);
    close(fds[1]);
    if (read(fds[0], &c, 1) != 1)
        vpgCheck(false, "race-child", "the child did not start");
    /* Shares while the child's main thread clones. */
    do {
        vpCoreschedShare(source, pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
        g_clear_error(&error);
        rounds++;
    } while (rounds < 3);
    if (read(fds[0], &c, 1) != 1)
        vpgCheck(false, "race-child", "the child did not finish its threads");
    close(fds[0]);
    missed = without(pid, want, &n);
    vpgFigure("race-missed",
              "%d of %d threads without the cookie after %d shares during "
              "thread creation",
              missed, n, rounds);
    vpgCheck(cookieOf(pid) == want, "race-main-thread",
             "the creating thread carries %#" G_GINT64_MODIFIER "x, want %#" G_GINT64_MODIFIER "x",
             X(cookieOf(pid)), X(want));
    vpCoreschedShare(source, pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    after = without(pid, want, &n);
    vpgCheck(n == RACE_THREADS + 1 && after == 0, "race-second-share",
             "%d of %d threads without the cookie after one more share, once creation ended", after,
             n);
    reap(pid);
    reap(source);
}

/* ---- exec ----------------------------------------------------------------------------- */

static void
execKeeps(void)
{
    g_autoptr(GError) error = NULL;
    int fds[2];
    char c;
    pid_t pid;
    uint64_t before, after;

    if (pipe(fds) < 0 || (pid = fork()) < 0) {
        perror("exec");
        exit(2);
    }
    if (pid == 0) {
        close(fds[1]);
        /* Waits for the cookie, then becomes another program (comm: busybox). */
        if (read(fds[0], &c, 1) != 1)
            _exit(3);
        execl("/bin/busybox", "sleep", "60", NULL);
        _exit(127);
    }
    close(fds[0]);
    vpCoreschedCreate(pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    before = cookieOf(pid);
    if (write(fds[1], "x", 1) != 1)
        perror("exec");
    close(fds[1]);
    for (int i = 0; i < 500; i++) {
        g_autofree char *comm = NULL;
        g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)pid);
        if (g_file_get_contents(path, &comm, NULL, NULL) && g_str_has_prefix(comm, "busybox"))
            break;
        g_usleep(10 * 1000);
    }
    after = cookieOf(pid);
    vpgCheck(before != 0 && after == before, "exec-keeps-cookie",
             "%#" G_GINT64_MODIFIER "x before exec, %#" G_GINT64_MODIFIER "x after", X(before),
             X(after));
    reap(pid);
}

/* ---- io_uring ------------------------------------------------------------------------- */

/* Submits one IORING_OP_NOP with IOSQE_ASYNC, which the kernel hands to an io-wq worker
 * created on behalf of the calling thread; returns the ring's fd, or -1. */
static int
submitAsyncNop(void)
{
    struct io_uring_params p = {0};
    int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
    size_t sqlen, sqeslen;
    unsigned char *sq;
    struct io_uring_sqe *sqes;

    if (fd < 0)
        return -1;
    sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    sqeslen = p.sq_entries * sizeof(struct io_uring_sqe);
    sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
              IORING_OFF_SQ_RING);
    sqes =
        mmap(NULL, sqeslen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || sqes == MAP_FAILED) {
        close(fd);
        return -1;
    }
    memset(&sqes[0], 0, sizeof(sqes[0]));
    sqes[0].opcode = IORING_OP_NOP;
    sqes[0].flags = IOSQE_ASYNC;
    ((unsigned *)(sq + p.sq_off.array))[0] = 0;
    __atomic_store_n((unsigned *)(sq + p.sq_off.tail), 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The io-wq worker the kernel created for thread tid ("iou-wrk-TID"), or 0. */
static pid_t
workerOf(pid_t tid)
{
    g_autofree char *want = g_strdup_printf("iou-wrk-%d", (int)tid);

    for (int tries = 0; tries < 100; tries++) {
        g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
        const char *entry;

        while (dir && (entry = g_dir_read_name(dir))) {
            g_autofree char *path = g_strdup_printf("/proc/self/task/%s/comm", entry);
            g_autofree char *comm = NULL;
            if (g_file_get_contents(path, &comm, NULL, NULL) && strcmp(g_strchomp(comm), want) == 0)
                return (pid_t)atoi(entry);
        }
        g_usleep(10 * 1000);
    }
    return 0;
}

typedef struct {
    int fd;
    uint64_t own, worker;
    pid_t workerTid;
} UringResult;

/* A "vCPU" thread with a cookie of its own (as vcpuplace gives in vCPU scope) submits;
 * it stays alive while its worker is read, since the worker ends with it. */
static gpointer
uringVcpu(gpointer data)
{
    UringResult *r = data;
    g_autoptr(GError) error = NULL;

    prctl(PR_SET_NAME, "CPU 0/KVM");
    vpCoreschedCreate(gettid(), VP_CORESCHED_SCOPE_THREAD, &error);
    r->own = cookieOf(gettid());
    r->fd = submitAsyncNop();
    r->workerTid = r->fd >= 0 ? workerOf(gettid()) : 0;
    r->worker = r->workerTid ? cookieOf(r->workerTid) : 1;
    return NULL;
}

/* In a child, so that the workers end with it. Exit status: 0 ok, 1 a check failed, 77
 * no io_uring. */
static void
uring(void)
{
    pid_t pid = fork();
    int status = 0;

    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        UringResult v = {.fd = -1};
        int fd = submitAsyncNop();
        pid_t mainWorker;
        uint64_t mainCookie;

        if (fd < 0)
            _exit(77);
        mainWorker = workerOf(getpid());
        mainCookie = mainWorker ? cookieOf(mainWorker) : 1;
        g_thread_join(g_thread_new(NULL, uringVcpu, &v));
        vpgCheck(mainWorker != 0 && mainCookie == 0, "io-uring-main-worker-uncookied",
                 "the main thread's worker %d carries %#" G_GINT64_MODIFIER "x", (int)mainWorker,
                 X(mainCookie));
        vpgCheck(v.fd >= 0 && v.workerTid != 0 && v.own != 0 && v.worker == v.own,
                 "io-uring-worker-inherits",
                 "the cookied submitter's worker %d carries %#" G_GINT64_MODIFIER
                 "x, the submitter %#" G_GINT64_MODIFIER "x",
                 (int)v.workerTid, X(v.worker), X(v.own));
        _exit(vpgEnd());
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        vpgCheck(false, "io-uring", "io_uring_setup failed: the kernel lacks CONFIG_IO_URING");
    else
        vpgCheck(WIFEXITED(status) && WEXITSTATUS(status) == 0, "io-uring-child",
                 "the io_uring checks ran in a child, status %d", status);
}

/* ---- smt-off -------------------------------------------------------------------------- */

static bool
smtControl(const char *value, GError **error)
{
    return g_file_set_contents_full(SMT_CONTROL, value, -1, G_FILE_SET_CONTENTS_NONE, 0644, error);
}

static void
smtOff(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *online = NULL;
    vpCoreschedStatus off, on;
    pid_t a = sleeper();

    vpCoreschedCreate(a, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (!vpgCheck(smtControl("off", &error), "smt-off", "%s",
                  error ? error->message : "siblings offline")) {
        reap(a);
        return;
    }
    g_file_get_contents("/sys/devices/system/cpu/online", &online, NULL, NULL);
    off = vpCoreschedProbe(&error);
    vpgCheck(off == VP_CORESCHED_NO_SMT, "smt-off-no-smt", "online %s: probe %s (%s)",
             online ? g_strstrip(online) : "?", vpCoreschedStatusName(off),
             error ? error->message : "no error");
    g_clear_error(&error);
    off = vpCoreschedCreate(a, VP_CORESCHED_SCOPE_THREAD, &error);
    vpgCheck(off == VP_CORESCHED_NO_SMT, "smt-off-create-refused", "create: %s (%s)",
             vpCoreschedStatusName(off), error ? error->message : "no error");
    g_clear_error(&error);
    vpgCheck(smtControl("on", &error), "smt-on", "%s", error ? error->message : "siblings back");
    on = vpCoreschedProbe(&error);
    vpgCheck(on == VP_CORESCHED_OK && cookieOf(a) != 0, "smt-on-cookies-again",
             "probe %s, the earlier cookie reads %#" G_GINT64_MODIFIER "x",
             vpCoreschedStatusName(on), X(cookieOf(a)));
    reap(a);
}

int
main(void)
{
    vpgBegin("cases");
    ids();
    race();
    execKeeps();
    uring();
    smtOff();
    return vpgEnd();
}
