/*
 * guest-cookieplan [nosmt]: the daemon's cookie code, decision (core/cookieplan) and
 * actuation (host/cookieapply), on stand-in VMs against a real SCHED_CORE kernel; only
 * libvirt is left out (the stand-ins' threads are handed over as the daemon would find
 * QEMU's). With nosmt, the kernel's refusal makes every VM "unsupported" and nothing is
 * attempted.
 *
 * Stand-ins: processes whose main thread creates threads named like QEMU's vCPU threads,
 * also later (hotplug). ga and gb form trust group g with coresched=group; ga's emulator
 * runs on its own PUs (every thread gets the cookie), gb's does not (vCPU threads only) and
 * gb starts with a cookie of its own, as libvirt's sched_core gives; vm says coresched=vm
 * and carries a cookie given earlier, which it must keep; off says coresched=off.
 */
#include "core/cookieplan.h"
#include "host/cookieapply.h"
#include "report.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 8
#define NVMS 4
#define PENDING_TRIES 50 /* x 100 ms: the kernel's key for ids follows the pool by <= 2 s */

typedef struct {
    const char *name;
    vpCoresched coresched;
    const char *group;
    bool emulator_own;
    int nvcpus;
    pid_t pid;
    int control; /* 'h': start one more vCPU thread; EOF: exit */
    int answers; /* the tid of each thread started */
    int started;
    pid_t vcpus[MAX_THREADS];
} StandIn;

static gpointer
vcpuThread(gpointer data)
{
    int *args = data;
    char name[16];
    pid_t tid = gettid();

    g_snprintf(name, sizeof(name), "CPU %d/KVM", args[0]);
    prctl(PR_SET_NAME, name);
    if (write(args[1], &tid, sizeof(tid)) != sizeof(tid))
        _exit(3);
    g_free(args);
    for (;;)
        pause();
    return NULL;
}

static void
startThread(int index, int answers)
{
    int *args = g_new(int, 2);

    args[0] = index;
    args[1] = answers;
    g_thread_unref(g_thread_new(NULL, vcpuThread, args));
}

/* The VM's main thread starts each vCPU thread, one at a time, as QEMU's does. */
static void G_GNUC_NORETURN
vmMain(int nvcpus, int control, int answers)
{
    char command;
    int next = 0;

    prctl(PR_SET_NAME, "qemu-system-x86");
    while (next < nvcpus)
        startThread(next++, answers);
    while (read(control, &command, 1) == 1) {
        if (command == 'h')
            startThread(next++, answers);
    }
    _exit(0);
}

static pid_t
readTid(StandIn *vm)
{
    pid_t tid = 0;

    if (read(vm->answers, &tid, sizeof(tid)) != sizeof(tid) || vm->started >= MAX_THREADS) {
        fprintf(stderr, "%s: no thread id\n", vm->name);
        exit(2);
    }
    vm->vcpus[vm->started++] = tid;
    return tid;
}

static void
startVm(StandIn *vm)
{
    int control[2], answers[2];

    if (pipe(control) < 0 || pipe(answers) < 0 || (vm->pid = fork()) < 0) {
        perror("stand-in");
        exit(2);
    }
    if (vm->pid == 0) {
        close(control[1]);
        close(answers[0]);
        vmMain(vm->nvcpus, control[0], answers[1]);
    }
    close(control[0]);
    close(answers[1]);
    vm->control = control[1];
    vm->answers = answers[0];
    for (int i = 0; i < vm->nvcpus; i++)
        readTid(vm);
}

static pid_t
hotplug(StandIn *vm)
{
    if (write(vm->control, "h", 1) != 1) {
        perror("hotplug");
        exit(2);
    }
    vm->nvcpus++;
    return readTid(vm);
}

static void
stopVm(StandIn *vm)
{
    close(vm->control);
    close(vm->answers);
    kill(vm->pid, SIGKILL);
    waitpid(vm->pid, NULL, 0);
}

/* The threads as the daemon hands them over: vCPU threads, then the main thread. */
static void
processOf(const StandIn *vm, vpCookieProcess *p)
{
    p->pid = vm->pid;
    p->threads = vpCookieThreadsNew();
    for (int i = 0; i < vm->started; i++) {
        vpCookieThread th = {.tid = vm->vcpus[i], .vcpu = i};
        g_array_append_val(p->threads, th);
    }
    vpCookieThread main = {.tid = vm->pid, .vcpu = -1};
    g_array_append_val(p->threads, main);
}

typedef struct {
    StandIn *vms;
    vpCookieProcess procs[NVMS];
    vpCookieDomain doms[NVMS];
} Host;

static void
hostClear(Host *h)
{
    for (int i = 0; i < NVMS; i++)
        g_clear_pointer(&h->procs[i].threads, g_array_unref);
}

static bool
observeAll(Host *h)
{
    hostClear(h);
    for (int i = 0; i < NVMS; i++) {
        const StandIn *vm = &h->vms[i];
        g_autoptr(GError) error = NULL;

        processOf(vm, &h->procs[i]);
        h->doms[i] = (vpCookieDomain){.name = vm->name,
                                      .coresched = vm->coresched,
                                      .group = vm->group,
                                      .emulator_own = vm->emulator_own};
        if (!vpgCheck(vpCookieObserve(&h->procs[i], &h->doms[i], &error), "observe", "%s: %s",
                      vm->name, error ? error->message : "read"))
            return false;
    }
    return true;
}

static int
indexOf(const Host *h, const char *name)
{
    for (int i = 0; i < NVMS; i++) {
        if (strcmp(h->vms[i].name, name) == 0)
            return i;
    }
    return -1;
}

static char *
describe(const vpCookiePlan *plan)
{
    GString *s = g_string_new(NULL);

    for (guint i = 0; i < plan->actions->len; i++) {
        const vpCookieAction *a = &g_array_index(plan->actions, vpCookieAction, i);
        g_string_append_printf(s, "%s%s %s (%s)%s%s", i ? "; " : "",
                               a->op == VP_COOKIE_CREATE ? "create" : "share", a->domain,
                               vpCookieScopeName(a->scope), a->from ? " from " : "",
                               a->from ? a->from : "");
    }
    return g_string_free(s, FALSE);
}

/* One daemon pass: observe (waiting out ids that read 0 before the kernel's key exists),
 * decide, act. Returns the decision's actions, described. */
static char *
pass(Host *h, const vpCookieEnv *env)
{
    g_autoptr(vpCookiePlan) plan = NULL;
    int tries = 0;

    for (;;) {
        bool pending = false;

        if (!observeAll(h))
            return NULL;
        for (int i = 0; i < NVMS; i++)
            pending |= h->doms[i].seen == VP_COOKIE_PENDING;
        if (!pending || ++tries > PENDING_TRIES)
            break;
        g_usleep(100 * 1000);
    }
    if (tries)
        vpgFigure("pending-passes", "%d (ids read 0 until the kernel's key was ready)", tries);
    plan = vpCookiePlanDecide(h->doms, NVMS, env);
    for (guint i = 0; i < plan->actions->len; i++) {
        const vpCookieAction *a = &g_array_index(plan->actions, vpCookieAction, i);
        int t = indexOf(h, a->domain), f = a->from ? indexOf(h, a->from) : -1;
        g_autoptr(GError) error = NULL;

        vpgCheck(vpCookieApply(a, &h->procs[t], f >= 0 ? &h->procs[f] : NULL, &error), "apply",
                 "%s %s: %s", a->op == VP_COOKIE_CREATE ? "create" : "share", a->domain,
                 error ? error->message : "done");
    }
    return describe(plan);
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

/* Every vCPU thread of vm carries one id; returns it (0 when not one). */
static uint64_t
vcpuCookie(const StandIn *vm)
{
    uint64_t first = cookieOf(vm->vcpus[0]);

    for (int i = 1; i < vm->started; i++) {
        if (cookieOf(vm->vcpus[i]) != first)
            return 0;
    }
    return first;
}

#define X(id) ((guint64)(id))

static void
smt(StandIn *vms)
{
    StandIn *ga = &vms[0], *gb = &vms[1], *vm = &vms[2], *off = &vms[3];
    vpCookieEnv env = {true, VP_SCHED_CORE_NONE};
    Host h = {.vms = vms};
    g_autoptr(GError) error = NULL;
    g_autofree char *first = NULL, *second = NULL, *third = NULL, *fourth = NULL;
    uint64_t before, group;
    pid_t tid;
    char byte;

    /* What the host's boot services do; the first cookie id readable follows. */
    if (getrandom(&byte, 1, 0) != 1)
        perror("getrandom");
    /* Cookies given before vcpuplace looks: libvirt's own for gb, an earlier one for vm. */
    for (int i = 0; i < 2; i++) {
        StandIn *v = i ? vm : gb;
        bool ok =
            vpCoreschedCreate(v->vcpus[0], VP_CORESCHED_SCOPE_THREAD, &error) == VP_CORESCHED_OK &&
            vpCoreschedShare(v->vcpus[0], v->vcpus[1], VP_CORESCHED_SCOPE_THREAD, &error) ==
                VP_CORESCHED_OK;
        vpgCheck(ok, "given-before", "%s: %s", v->name, error ? error->message : "done");
        g_clear_error(&error);
    }
    before = vcpuCookie(vm);

    first = pass(&h, &env);
    vpgFigure("first-pass", "%s", first ? first : "failed");
    group = vcpuCookie(ga);
    vpgCheck(group != 0 && cookieOf(ga->pid) == group, "group-process-scope",
             "ga's vCPU and main threads carry %#" G_GINT64_MODIFIER "x, main %#" G_GINT64_MODIFIER
             "x",
             X(group), X(cookieOf(ga->pid)));
    vpgCheck(vcpuCookie(gb) == group, "group-shares",
             "gb's vCPU threads carry %#" G_GINT64_MODIFIER "x, the group's is %#" G_GINT64_MODIFIER
             "x",
             X(vcpuCookie(gb)), X(group));
    vpgCheck(cookieOf(gb->pid) == 0, "group-vcpu-scope",
             "gb's main thread carries %#" G_GINT64_MODIFIER "x (its emulator is not on its PUs)",
             X(cookieOf(gb->pid)));
    vpgCheck(before != 0 && vcpuCookie(vm) == before, "vm-keeps-its-cookie",
             "vm %#" G_GINT64_MODIFIER "x before, %#" G_GINT64_MODIFIER "x after", X(before),
             X(vcpuCookie(vm)));
    vpgCheck(vcpuCookie(vm) != group, "untrusted-differ",
             "vm %#" G_GINT64_MODIFIER "x, group g %#" G_GINT64_MODIFIER "x", X(vcpuCookie(vm)),
             X(group));
    vpgCheck(vcpuCookie(off) == 0 && cookieOf(off->pid) == 0, "off-untouched",
             "off carries %#" G_GINT64_MODIFIER "x", X(vcpuCookie(off)));
    vpgCheck(cookieOf(gettid()) == 0, "daemon-keeps-none",
             "this process carries %#" G_GINT64_MODIFIER "x", X(cookieOf(gettid())));

    second = pass(&h, &env);
    vpgCheck(second && !*second, "second-pass-idle", "actions: '%s'", second ? second : "failed");

    /* Hotplug: gb's new vCPU thread is born without the cookie (its main thread has none)
     * and gets the group's shared; ga's inherits it from its main thread. */
    tid = hotplug(gb);
    vpgCheck(cookieOf(tid) == 0, "hotplug-born-uncookied",
             "gb's new thread %d carries %#" G_GINT64_MODIFIER "x", (int)tid, X(cookieOf(tid)));
    tid = hotplug(ga);
    vpgCheck(cookieOf(tid) == group, "hotplug-inherits",
             "ga's new thread %d carries %#" G_GINT64_MODIFIER "x", (int)tid, X(cookieOf(tid)));
    third = pass(&h, &env);
    vpgFigure("hotplug-pass", "%s", third ? third : "failed");
    vpgCheck(vcpuCookie(gb) == group && gb->started == 3, "hotplug-cookied",
             "gb's 3 vCPU threads carry %#" G_GINT64_MODIFIER "x", X(vcpuCookie(gb)));

    /* vm's second vCPU thread wrongly carries the group's cookie: vm gets a fresh one. */
    vpCoreschedShare(ga->vcpus[0], vm->vcpus[1], VP_CORESCHED_SCOPE_THREAD, &error);
    g_clear_error(&error);
    fourth = pass(&h, &env);
    vpgFigure("contested-pass", "%s", fourth ? fourth : "failed");
    vpgCheck(vcpuCookie(vm) != 0 && vcpuCookie(vm) != group, "contested-resolved",
             "vm %#" G_GINT64_MODIFIER "x, group %#" G_GINT64_MODIFIER "x", X(vcpuCookie(vm)),
             X(group));
    hostClear(&h);
}

static void
nosmt(StandIn *vms)
{
    g_autoptr(GError) error = NULL;
    vpCoreschedStatus kernel = vpCoreschedProbe(&error);
    vpCookieEnv env = {kernel == VP_CORESCHED_OK, VP_SCHED_CORE_NONE};
    vpCookieDomain doms[NVMS];
    g_autoptr(vpCookiePlan) plan = NULL;
    bool all = true;

    vpgCheck(kernel == VP_CORESCHED_NO_SMT, "kernel-no-smt", "%s: %s",
             vpCoreschedStatusName(kernel), error ? error->message : "no error");
    for (int i = 0; i < NVMS; i++)
        doms[i] = (vpCookieDomain){.name = vms[i].name,
                                   .coresched = vms[i].coresched,
                                   .group = vms[i].group,
                                   .seen = VP_COOKIE_NO_THREADS};
    plan = vpCookiePlanDecide(doms, NVMS, &env);
    for (int i = 0; i < NVMS; i++)
        all &= g_array_index(plan->expect, vpCookieExpect, i).state == VP_COOKIE_STATE_UNSUPPORTED;
    vpgCheck(plan->actions->len == 0 && all, "nothing-attempted",
             "%u actions, every VM unsupported: %s", plan->actions->len, all ? "yes" : "no");
}

int
main(int argc, char **argv)
{
    StandIn vms[NVMS] = {
        {.name = "ga",
         .coresched = VP_CORESCHED_GROUP,
         .group = "g",
         .emulator_own = true,
         .nvcpus = 2},
        {.name = "gb", .coresched = VP_CORESCHED_GROUP, .group = "g", .nvcpus = 2},
        {.name = "vm", .coresched = VP_CORESCHED_VM, .nvcpus = 2},
        {.name = "off", .coresched = VP_CORESCHED_OFF, .nvcpus = 1},
    };

    vpgBegin("cookieplan");
    for (int i = 0; i < NVMS; i++)
        startVm(&vms[i]);
    if (argc > 1 && strcmp(argv[1], "nosmt") == 0)
        nosmt(vms);
    else
        smt(vms);
    for (int i = 0; i < NVMS; i++)
        stopVm(&vms[i]);
    return vpgEnd();
}
