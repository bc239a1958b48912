/*
 * guest-cookies [nosmt]: core-scheduling cookies for three stand-in VMs on a real
 * SCHED_CORE kernel, given the way the daemon will give them; with nosmt, the kernel's
 * refusal on a machine without SMT siblings.
 *
 * Each stand-in is a process shaped like QEMU: a main thread named qemu-system-x86 that
 * creates vCPU threads named "CPU n/KVM" (also on hotplug). vm-a and vm-c form one trust
 * group; vm-b is alone and asks for cookies on its vCPU threads only. This process plays
 * the daemon and must keep no cookie of its own.
 */
#include "core/model/topology.h"
#include "host/coresched.h"
#include "report.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_VCPUS 8

typedef struct {
    const char *name;
    pid_t pid;
    int control; /* daemon -> VM: 'h' hotplugs a vCPU; EOF ends the VM */
    int answers; /* VM -> daemon: tid of each vCPU thread started */
    int nvcpus;
    pid_t vcpus[MAX_VCPUS];
} StandIn;

typedef struct {
    int index;
    int answers;
} VcpuStart;

/* vCPU threads start concurrently, so each says which vCPU it is. */
typedef struct {
    int index;
    pid_t tid;
} VcpuAnswer;

static gpointer
vcpuThread(gpointer data)
{
    VcpuStart *start = data;
    VcpuAnswer answer = {.index = start->index, .tid = gettid()};
    char name[16];

    g_snprintf(name, sizeof(name), "CPU %d/KVM", start->index);
    prctl(PR_SET_NAME, name);
    /* Smaller than PIPE_BUF: written in one piece even with several writers. */
    if (write(start->answers, &answer, sizeof(answer)) != sizeof(answer))
        _exit(3);
    g_free(start);
    for (;;)
        pause();
    return NULL;
}

static void
startVcpu(int index, int answers)
{
    VcpuStart *start = g_new(VcpuStart, 1);

    start->index = index;
    start->answers = answers;
    g_thread_unref(g_thread_new(NULL, vcpuThread, start));
}

/* The VM process: its main thread starts every vCPU thread, as QEMU's does. */
static void G_GNUC_NORETURN
vmMain(int nvcpus, int control, int answers)
{
    char command;
    int next = 0;

    prctl(PR_SET_NAME, "qemu-system-x86");
    while (next < nvcpus)
        startVcpu(next++, answers);
    while (read(control, &command, 1) == 1) {
        if (command == 'h')
            startVcpu(next++, answers);
    }
    _exit(0);
}

static pid_t
readTid(StandIn *vm)
{
    VcpuAnswer answer;

    if (read(vm->answers, &answer, sizeof(answer)) != sizeof(answer) || answer.index < 0 ||
        answer.index >= MAX_VCPUS) {
        fprintf(stderr, "%s: no vCPU thread id: %s\n", vm->name, g_strerror(errno));
        exit(2);
    }
    vm->vcpus[answer.index] = answer.tid;
    vm->nvcpus++;
    return answer.tid;
}

static void
startVm(StandIn *vm, const char *name, int nvcpus)
{
    int control[2], answers[2];

    if (pipe(control) < 0 || pipe(answers) < 0) {
        perror("pipe");
        exit(2);
    }
    vm->name = name;
    vm->pid = fork();
    if (vm->pid < 0) {
        perror("fork");
        exit(2);
    }
    if (vm->pid == 0) {
        close(control[1]);
        close(answers[0]);
        vmMain(nvcpus, control[0], answers[1]);
    }
    close(control[0]);
    close(answers[1]);
    vm->control = control[1];
    vm->answers = answers[0];
    vm->nvcpus = 0;
    for (int i = 0; i < nvcpus; i++)
        readTid(vm);
}

static pid_t
hotplugVcpu(StandIn *vm)
{
    if (write(vm->control, "h", 1) != 1) {
        perror("hotplug");
        exit(2);
    }
    return readTid(vm);
}

static void
stopVm(StandIn *vm)
{
    if (!vm->pid)
        return;
    close(vm->control);
    close(vm->answers);
    kill(vm->pid, SIGKILL);
    waitpid(vm->pid, NULL, 0);
    vm->pid = 0;
}

static bool
checkStatus(vpCoreschedStatus status, GError *error, const char *check, const char *what)
{
    return vpgCheck(status == VP_CORESCHED_OK, check, "%s: %s", what,
                    error ? error->message : "done");
}

static void
checkNames(const StandIn *vm)
{
    unsigned wrong = 0;

    for (int i = 0; i < vm->nvcpus; i++) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/comm", vm->pid, vm->vcpus[i]);
        g_autofree char *want = g_strdup_printf("CPU %d/KVM\n", i);
        g_autofree char *comm = NULL;

        if (!g_file_get_contents(path, &comm, NULL, NULL) || strcmp(comm, want) != 0)
            wrong++;
    }
    vpgCheck(wrong == 0, "vcpu-thread-names", "%s: %u of %d vCPU threads not named CPU n/KVM",
             vm->name, wrong, vm->nvcpus);
}

/* Every thread of the VM process, main thread first. */
static GArray *
allThreads(const StandIn *vm)
{
    GArray *tids = g_array_new(FALSE, FALSE, sizeof(pid_t));

    g_array_append_val(tids, vm->pid);
    g_array_append_vals(tids, vm->vcpus, vm->nvcpus);
    return tids;
}

/* The kernel's crng readiness, which the key for cookie ids waits for. */
static bool
randomPoolReady(void)
{
    char byte;

    return getrandom(&byte, 1, GRND_NONBLOCK) == 1;
}

/* A blocking getrandom() makes the kernel gather jitter entropy until the pool is ready:
 * what boot services do on a real host a moment after boot. */
static gpointer
seedRandomPool(gpointer unused)
{
    char byte;

    if (getrandom(&byte, 1, 0) != 1)
        perror("getrandom");
    return NULL;
}

/*
 * The first cookie is created before the random pool is ready (TCG has no RDRAND and
 * few interrupts, so this guest's pool stays unready until asked): GET must read 0
 * then, and vpCoreschedVerify() must wait instead of concluding "no cookie".
 */
static uint64_t
firstCookie(const StandIn *vm)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) threads = allThreads(vm);
    g_autoptr(GThread) seeder = NULL;
    bool readyBefore = randomPoolReady();
    vpCoreschedStatus status;
    uint64_t early = 0, cookie = 0;
    gint64 started;

    status = vpCoreschedCreate(vm->pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (!checkStatus(status, error, "create-vm-a", "cookie for every thread of vm-a"))
        return 0;
    if (readyBefore) {
        vpgFigure("random-pool", "ready before the first cookie: the 0-read wait is not "
                                 "exercised in this boot");
    } else {
        status = vpCoreschedGet(vm->vcpus[0], &early, &error);
        if (status == VP_CORESCHED_OK && early != 0 && randomPoolReady()) {
            vpgFigure("random-pool", "became ready between the probe and the first GET");
        } else {
            vpgCheck(status == VP_CORESCHED_OK && early == 0, "get-reads-0-before-pool-ready",
                     "vm-a vCPU 0 reads %#" G_GINT64_MODIFIER "x with the pool not ready",
                     (guint64)early);
            g_clear_error(&error);
            status = vpCoreschedVerify((pid_t *)threads->data, threads->len, 0, NULL, &error);
            vpgCheck(status == VP_CORESCHED_PENDING, "verify-pending-before-pool-ready", "%s: %s",
                     vpCoreschedStatusName(status), error ? error->message : "no error");
        }
        g_clear_error(&error);
        seeder = g_thread_new("seed", seedRandomPool, NULL);
    }
    started = g_get_monotonic_time();
    /* Under TCG on a loaded 2-CPU host the guest's crng takes far longer to be ready than
     * on hardware (seen: over 5 s), so this first wait gets a generous bound of its own. */
    status = vpCoreschedVerify((pid_t *)threads->data, threads->len, 60000, &cookie, &error);
    vpgFigure("verify-waited-ms", "%.0f", (g_get_monotonic_time() - started) / 1000.0);
    checkStatus(status, error, "vm-a-one-cookie", "all threads of vm-a (main + 3 vCPUs)");
    if (seeder)
        g_thread_join(g_steal_pointer(&seeder));
    return status == VP_CORESCHED_OK ? cookie : 0;
}

/* The daemon's part, step by step: each check depends on the cookies set before it. */
static void
checkCookies(StandIn *a, StandIn *b, StandIn *c)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) threadsC = NULL;
    vpCoreschedStatus status;
    uint64_t cookieA, cookieB = 0, cookieC = 0, value = 0;
    pid_t tid;

    /* vm-a: one cookie for the whole QEMU process (libvirt's sched_core=full). From here
     * on a cookie id of vm-a reads non-zero, so a 0 read means "no cookie". */
    cookieA = firstCookie(a);
    if (!cookieA)
        return;

    /* vm-c joins vm-a's trust group. */
    status = vpCoreschedShare(a->vcpus[0], c->pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    checkStatus(status, error, "share-vm-a-to-vm-c", "vm-a's cookie to every thread of vm-c");
    g_clear_error(&error);
    threadsC = allThreads(c);
    status = vpCoreschedVerify((pid_t *)threadsC->data, threadsC->len, 0, &cookieC, &error);
    checkStatus(status, error, "vm-c-one-cookie", "all threads of vm-c (main + 2 vCPUs)");
    g_clear_error(&error);
    vpgCheck(cookieA == cookieC, "trust-group-shares",
             "vm-a %#" G_GINT64_MODIFIER "x, vm-c %#" G_GINT64_MODIFIER "x", (guint64)cookieA,
             (guint64)cookieC);

    /* vm-b: cookies on the vCPU threads only (libvirt's sched_core=vcpus). */
    status = vpCoreschedCreate(b->vcpus[0], VP_CORESCHED_SCOPE_THREAD, &error);
    checkStatus(status, error, "create-vm-b", "cookie for vm-b's first vCPU thread");
    g_clear_error(&error);
    for (int i = 1; i < b->nvcpus; i++) {
        status = vpCoreschedShare(b->vcpus[0], b->vcpus[i], VP_CORESCHED_SCOPE_THREAD, &error);
        checkStatus(status, error, "share-vm-b-vcpus", "vm-b's cookie to its other vCPUs");
        g_clear_error(&error);
    }
    status = vpCoreschedVerify(b->vcpus, b->nvcpus, 0, &cookieB, &error);
    checkStatus(status, error, "vm-b-one-cookie", "vm-b's 3 vCPU threads");
    g_clear_error(&error);
    vpgCheck(cookieB != 0 && cookieB != cookieA, "untrusted-differ",
             "vm-b %#" G_GINT64_MODIFIER "x, vm-a %#" G_GINT64_MODIFIER "x", (guint64)cookieB,
             (guint64)cookieA);
    status = vpCoreschedGet(b->pid, &value, &error);
    vpgCheck(status == VP_CORESCHED_OK && value == 0, "vm-b-main-thread-uncookied",
             "vm-b main thread reads %#" G_GINT64_MODIFIER "x (%s)", (guint64)value,
             error ? error->message : "vCPU scope leaves it alone");
    g_clear_error(&error);

    status = vpCoreschedVerify(&b->pid, 1, VP_CORESCHED_SETTLE_MS, NULL, &error);
    vpgCheck(status == VP_CORESCHED_MISMATCH && strstr(error->message, "has no cookie"),
             "verify-finds-uncookied-thread", "%s: %s", vpCoreschedStatusName(status),
             error ? error->message : "no error");
    g_clear_error(&error);

    status = vpCoreschedVerify((pid_t[]){a->vcpus[0], b->vcpus[0]}, 2, 0, NULL, &error);
    vpgCheck(status == VP_CORESCHED_MISMATCH && strstr(error->message, "has cookie"),
             "verify-tells-vms-apart", "%s: %s", vpCoreschedStatusName(status),
             error ? error->message : "no error");
    g_clear_error(&error);

    status = vpCoreschedGet(gettid(), &value, &error);
    vpgCheck(status == VP_CORESCHED_OK && value == 0, "daemon-keeps-no-cookie",
             "daemon thread reads %#" G_GINT64_MODIFIER "x after sharing", (guint64)value);
    g_clear_error(&error);

    /* Hotplug: QEMU's main thread creates the new vCPU thread, which inherits its cookie. */
    tid = hotplugVcpu(a);
    status = vpCoreschedGet(tid, &value, &error);
    vpgCheck(status == VP_CORESCHED_OK && value == cookieA, "hotplug-inherits",
             "new vm-a vCPU thread %d reads %#" G_GINT64_MODIFIER "x, vm-a has %#" G_GINT64_MODIFIER
             "x",
             (int)tid, (guint64)value, (guint64)cookieA);
    g_clear_error(&error);

    /* With vCPU scope the main thread has no cookie to pass on: the daemon must add it. */
    tid = hotplugVcpu(b);
    status = vpCoreschedGet(tid, &value, &error);
    vpgCheck(status == VP_CORESCHED_OK && value == 0, "hotplug-vcpu-scope-starts-uncookied",
             "new vm-b vCPU thread %d reads %#" G_GINT64_MODIFIER "x", (int)tid, (guint64)value);
    g_clear_error(&error);
    status = vpCoreschedShare(b->vcpus[0], tid, VP_CORESCHED_SCOPE_THREAD, &error);
    checkStatus(status, error, "hotplug-share", "vm-b's cookie to its new vCPU");
    g_clear_error(&error);
    status = vpCoreschedVerify(b->vcpus, b->nvcpus, 0, &value, &error);
    vpgCheck(status == VP_CORESCHED_OK && value == cookieB, "hotplug-cookied",
             "vm-b's 4 vCPU threads: %s", error ? error->message : "one cookie");
    g_clear_error(&error);

    stopVm(b);
    status = vpCoreschedGet(b->vcpus[0], &value, &error);
    vpgCheck(status == VP_CORESCHED_GONE, "exited-vm-gone", "%s: %s", vpCoreschedStatusName(status),
             error ? error->message : "no error");
    g_clear_error(&error);
}

/* Booted without SMT siblings: the kernel refuses cookies with ENODEV, and each call must
 * say so rather than report a missing kernel feature or a failure. */
static void
checkNoSmt(void)
{
    g_autoptr(GError) probeError = NULL;
    g_autoptr(GError) createError = NULL;
    vpCoreschedStatus status;
    StandIn vm;

    status = vpCoreschedProbe(&probeError);
    vpgCheck(status == VP_CORESCHED_NO_SMT && strstr(probeError->message, "ENODEV"), "probe-no-smt",
             "%s: %s", vpCoreschedStatusName(status),
             probeError ? probeError->message : "no error");
    startVm(&vm, "vm-a", 2);
    status = vpCoreschedCreate(vm.pid, VP_CORESCHED_SCOPE_THREAD_GROUP, &createError);
    vpgCheck(status == VP_CORESCHED_NO_SMT &&
                 g_error_matches(createError, VP_ERROR, VP_ERROR_UNSUPPORTED),
             "create-no-smt", "%s: %s", vpCoreschedStatusName(status),
             createError ? createError->message : "no error");
    stopVm(&vm);
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    StandIn a, b, c;
    vpCoreschedStatus status;

    vpgBegin("cookies");
    if (argc == 2 && strcmp(argv[1], "nosmt") == 0) {
        checkNoSmt();
        return vpgEnd();
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [nosmt]\n", argv[0]);
        return 2;
    }
    status = vpCoreschedProbe(&error);
    if (!vpgCheck(status == VP_CORESCHED_OK, "probe", "%s%s%s", vpCoreschedStatusName(status),
                  error ? ": " : "", error ? error->message : ""))
        return vpgEnd();

    startVm(&a, "vm-a", 3);
    startVm(&b, "vm-b", 3);
    startVm(&c, "vm-c", 2);
    checkNames(&a);
    checkNames(&b);
    checkNames(&c);
    checkCookies(&a, &b, &c);
    stopVm(&a);
    stopVm(&b);
    stopVm(&c);
    return vpgEnd();
}
