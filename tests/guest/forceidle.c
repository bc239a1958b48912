/*
 * guest-forceidle SECONDS: what a cookie costs when placement ignores it.
 *
 * Two CPU-bound one-vCPU "VMs" with different cookies run pinned (1) on the two siblings
 * of one core, (2) on two different cores, and (3) on one core's siblings again after
 * the second joined the first one's cookie. The kernel's own accounting says how long
 * each was running while its sibling was forced idle (core_forceidle_sum in
 * /proc/PID/sched, kept only with schedstats on) and how much CPU each got.
 */
#include "host/coresched.h"
#include "host/hwtopo.h"
#include "report.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    double forceidleMs;
    double runMs;
} SchedFigures;

static void G_GNUC_NORETURN
burn(void)
{
    volatile unsigned long spins = 0;

    prctl(PR_SET_NAME, "CPU 0/KVM");
    for (;;)
        spins++;
}

static pid_t
startBurner(void)
{
    pid_t pid = fork();

    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0)
        burn();
    return pid;
}

/* Reads "name : value" from /proc/PID/sched; false when the field is absent. */
static bool
readSchedField(const char *text, const char *field, double *value)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (char **line = lines; *line; line++) {
        char *colon = strchr(*line, ':');
        char *end;

        if (!colon)
            continue;
        *colon = '\0';
        if (strcmp(g_strstrip(*line), field) != 0)
            continue;
        *value = g_ascii_strtod(colon + 1, &end);
        return end != colon + 1;
    }
    return false;
}

static bool
readFigures(pid_t pid, SchedFigures *figures, GError **error)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/sched", (int)pid);
    g_autofree char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, error))
        return false;
    if (!readSchedField(text, "core_forceidle_sum", &figures->forceidleMs)) {
        g_set_error(error, VP_ERROR, VP_ERROR_UNSUPPORTED,
                    "%s has no core_forceidle_sum: the kernel lacks CONFIG_SCHEDSTATS or "
                    "schedstats are off (boot with schedstats=enable)",
                    path);
        return false;
    }
    if (!readSchedField(text, "se.sum_exec_runtime", &figures->runMs)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s has no se.sum_exec_runtime", path);
        return false;
    }
    return true;
}

static bool
pin(pid_t pid, unsigned cpu, GError **error)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(pid, sizeof(set), &set) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "cannot pin %d to CPU %u: %s", (int)pid, cpu,
                    g_strerror(errno));
        return false;
    }
    return true;
}

/* Runs both burners on cpuX / cpuY for seconds; stores the figures of that span. */
static bool
measure(const char *phase, pid_t x, unsigned cpuX, pid_t y, unsigned cpuY, unsigned seconds,
        SchedFigures *total)
{
    g_autoptr(GError) error = NULL;
    SchedFigures x0, y0, x1, y1;

    if (!pin(x, cpuX, &error) || !pin(y, cpuY, &error)) {
        vpgCheck(false, phase, "%s", error->message);
        return false;
    }
    /* Let both migrate onto their CPUs before the span starts. */
    g_usleep(G_USEC_PER_SEC / 5);
    if (!readFigures(x, &x0, &error) || !readFigures(y, &y0, &error)) {
        vpgCheck(false, phase, "%s", error->message);
        return false;
    }
    g_usleep((gulong)seconds * G_USEC_PER_SEC);
    if (!readFigures(x, &x1, &error) || !readFigures(y, &y1, &error)) {
        vpgCheck(false, phase, "%s", error->message);
        return false;
    }
    total->forceidleMs = (x1.forceidleMs - x0.forceidleMs) + (y1.forceidleMs - y0.forceidleMs);
    total->runMs = (x1.runMs - x0.runMs) + (y1.runMs - y0.runMs);
    vpgFigure(phase, "cpus=%u,%u forceidle_ms=%.1f run_ms=%.1f span_ms=%u", cpuX, cpuY,
              total->forceidleMs, total->runMs, seconds * 1000);
    return true;
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    const vpCore *core0, *core1;
    unsigned sibling0, sibling1, other;
    SchedFigures apart = {0}, together = {0}, shared = {0};
    vpCoreschedStatus status;
    unsigned seconds;
    pid_t x, y;

    vpgBegin("forceidle");
    if (argc != 2 || (seconds = (unsigned)atoi(argv[1])) == 0) {
        fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
        return 2;
    }
    topo = vpHwtopoLoad(NULL, NULL, NULL, &error);
    if (!vpgCheck(topo && vpTopologyNCores(topo) >= 2 && vpTopologyCore(topo, 0)->npus >= 2,
                  "topology", "%s",
                  topo ? "needs two cores, the first with two siblings" : error->message))
        return vpgEnd();
    /* Siblings come from the topology, never from CPU numbers. */
    core0 = vpTopologyCore(topo, 0);
    core1 = vpTopologyCore(topo, 1);
    sibling0 = vpTopologyPU(topo, core0->pus[0])->os;
    sibling1 = vpTopologyPU(topo, core0->pus[1])->os;
    other = vpTopologyPU(topo, core1->pus[0])->os;

    x = startBurner();
    y = startBurner();
    status = vpCoreschedCreate(x, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (status == VP_CORESCHED_OK)
        status = vpCoreschedCreate(y, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (vpgCheck(status == VP_CORESCHED_OK, "cookies", "%s",
                 error ? error->message : "one cookie per burner")) {
        if (measure("siblings-different-cookies", x, sibling0, y, sibling1, seconds, &together) &&
            measure("different-cores", x, sibling0, y, other, seconds, &apart)) {
            status = vpCoreschedShare(x, y, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
            if (vpgCheck(status == VP_CORESCHED_OK, "share", "%s",
                         error ? error->message : "second burner joins the first's cookie"))
                measure("siblings-same-cookie", x, sibling0, y, sibling1, seconds, &shared);
        }
        vpgCheck(together.forceidleMs > 0, "siblings-force-idle",
                 "%.1f ms forced idle on one core with two cookies", together.forceidleMs);
        vpgCheck(apart.forceidleMs < together.forceidleMs, "different-cores-less-idle",
                 "%.1f ms on two cores vs %.1f ms on one core's siblings", apart.forceidleMs,
                 together.forceidleMs);
        vpgCheck(shared.forceidleMs < together.forceidleMs, "same-cookie-less-idle",
                 "%.1f ms with one cookie vs %.1f ms with two", shared.forceidleMs,
                 together.forceidleMs);
    }
    kill(x, SIGKILL);
    kill(y, SIGKILL);
    waitpid(x, NULL, 0);
    waitpid(y, NULL, 0);
    return vpgEnd();
}
