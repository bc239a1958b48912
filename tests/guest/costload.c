/*
 * guest-costload: the load of issue 16's benchmark (the cost of core scheduling), run
 * inside the SMT guest under configurations that differ only in cookies, pins and the
 * CPUs online, and measured in the kernel's own figures.
 *
 *   guest-costload --tenants 4,2,1,1 --seconds S --runs R [--chunk N] [--tokens N]
 *                  [--siblings 0-1/2-3]
 *                  [--fewer-forceidle B,C] CONFIG...
 *
 * Each tenant stands for a VM: a process with one worker thread per vCPU. The workers of
 * a tenant form a ring of pipes: each computes a chunk (a CPU-bound loop), passes a token
 * to the next and waits for the token of the previous one, so a tenant wakes its threads
 * as often as a hackbench message passer and goes no faster than its slowest vCPU, as a
 * guest whose vCPUs wait on each other does. Work is the chunks done.
 *
 * CONFIG is NAME:COOKIES:PINS:CPUS
 *   COOKIES  '-' (none) or one label per tenant, comma-separated: tenants with one label
 *            share one cookie (a trust group), each label its own;
 *   PINS     '-' (every thread floats) or per tenant, '/'-separated, its threads' CPUs,
 *            comma-separated, or 'f' for a tenant whose threads float;
 *   CPUS     'all' or 'smtoff' (every sibling but the first of each core offline).
 * Runs alternate: run r runs every configuration once, starting with the r-th.
 *
 * Printed per run and tenant: VPGUEST figure costload.tenant config=.. run=.. tenant=..
 * with the span, the CPUs online, work, and the sums over its threads of run time, run
 * delay and time slices (/proc/PID/task/TID/schedstat) and forced idle (core_forceidle_sum
 * in .../sched, kept only with schedstats on). Checked: the siblings are those given
 * (the placement was computed for them), every thread is pinned and cookied as asked,
 * and with --fewer-forceidle B,C that configuration C forced less idle, as a fraction of
 * its tenants' run time over all runs, than B.
 */
#include "host/coresched.h"
#include "report.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TENANTS 8
#define MAX_WORKERS 64
#define MAX_CONFIGS 12
#define MAX_CPUS 64
#define WARMUP_MS 300
#define MAX_TOKENS 64

typedef struct {
    char name[32];
    bool cookies;
    int group[MAX_TENANTS];            /* cookie label index per tenant */
    int pin[MAX_TENANTS][MAX_WORKERS]; /* -1: floats */
    bool smtoff;
    double forceidleMs, runMs; /* over all runs, for --fewer-forceidle */
} Config;

typedef struct {
    atomic_ulong work;
    atomic_int tid;
} WorkerSlot;

typedef struct {
    int nworkers;
    int cpu[MAX_WORKERS];
    unsigned long chunk;
    int tokens;
    WorkerSlot *slots;
    int ring[MAX_WORKERS][2];
} Tenant;

typedef struct {
    Tenant *tenant;
    int index;
} WorkerArg;

typedef struct {
    double runMs, waitMs, forceidleMs;
    unsigned long slices, work;
} Sample;

static int ntenants;
static int ntokens = 1;
static int nvcpus[MAX_TENANTS];
static WorkerSlot *slots; /* shared with the tenants' processes */

static double
nowMs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool
setAffinity(pid_t tid, int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    if (cpu >= 0) {
        CPU_SET(cpu, &set);
    } else {
        for (int c = 0; c < MAX_CPUS; c++)
            CPU_SET(c, &set);
    }
    return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

static void *
worker(void *data)
{
    const WorkerArg *arg = data;
    Tenant *t = arg->tenant;
    int i = arg->index, next = (i + 1) % t->nworkers;
    WorkerSlot *slot = &t->slots[i];
    uint64_t x = 88172645463325252ULL + (uint64_t)i;
    volatile uint64_t sink;
    char token = 't';

    setAffinity(0, t->cpu[i]);
    atomic_store(&slot->tid, (int)syscall(SYS_gettid));
    for (;;) {
        for (unsigned long k = 0; k < t->chunk; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        sink = x;
        (void)sink;
        if (write(t->ring[next][1], &token, 1) != 1 || read(t->ring[i][0], &token, 1) != 1)
            _exit(3);
        atomic_fetch_add(&slot->work, 1);
    }
    return NULL;
}

/* The tenant's process: its ring, with as many tokens per worker as the slack asked for (a
 * worker waits once the one before it is that many chunks behind), and its threads. */
static void G_GNUC_NORETURN
tenantMain(Tenant *t)
{
    pthread_t threads[MAX_WORKERS];
    WorkerArg args[MAX_WORKERS];
    char tokens[MAX_TOKENS];

    memset(tokens, 't', sizeof(tokens));
    for (int i = 0; i < t->nworkers; i++) {
        if (pipe(t->ring[i]) < 0 || write(t->ring[i][1], tokens, (size_t)t->tokens) != t->tokens)
            _exit(3);
    }
    for (int i = 0; i < t->nworkers; i++) {
        args[i] = (WorkerArg){t, i};
        if (pthread_create(&threads[i], NULL, worker, &args[i]) != 0)
            _exit(3);
    }
    for (int i = 0; i < t->nworkers; i++)
        pthread_join(threads[i], NULL);
    _exit(0);
}

static bool
parseCpu(const char *text, int *cpu)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (end == text || *end || v < 0 || v >= MAX_CPUS)
        return false;
    *cpu = (int)v;
    return true;
}

static bool
parseConfig(const char *spec, Config *c)
{
    g_auto(GStrv) parts = g_strsplit(spec, ":", -1);
    g_autoptr(GPtrArray) labels = g_ptr_array_new_with_free_func(g_free);

    if (g_strv_length(parts) != 4 || !*parts[0] || strlen(parts[0]) >= sizeof(c->name)) {
        fprintf(stderr, "config '%s': want NAME:COOKIES:PINS:CPUS\n", spec);
        return false;
    }
    memset(c, 0, sizeof(*c));
    g_strlcpy(c->name, parts[0], sizeof(c->name));
    c->cookies = strcmp(parts[1], "-") != 0;
    if (c->cookies) {
        g_auto(GStrv) l = g_strsplit(parts[1], ",", -1);

        if ((int)g_strv_length(l) != ntenants) {
            fprintf(stderr, "config '%s': %u cookie labels for %d tenants\n", spec,
                    g_strv_length(l), ntenants);
            return false;
        }
        for (int t = 0; t < ntenants; t++) {
            guint idx;

            if (!g_ptr_array_find_with_equal_func(labels, l[t], g_str_equal, &idx)) {
                g_ptr_array_add(labels, g_strdup(l[t]));
                idx = labels->len - 1;
            }
            c->group[t] = (int)idx;
        }
    }
    for (int t = 0; t < ntenants; t++)
        for (int w = 0; w < nvcpus[t]; w++)
            c->pin[t][w] = -1;
    if (strcmp(parts[2], "-") != 0) {
        g_auto(GStrv) per = g_strsplit(parts[2], "/", -1);

        if ((int)g_strv_length(per) != ntenants) {
            fprintf(stderr, "config '%s': pins for %u tenants, not %d\n", spec, g_strv_length(per),
                    ntenants);
            return false;
        }
        for (int t = 0; t < ntenants; t++) {
            g_auto(GStrv) cpus = NULL;

            if (strcmp(per[t], "f") == 0)
                continue;
            cpus = g_strsplit(per[t], ",", -1);
            if ((int)g_strv_length(cpus) != nvcpus[t]) {
                fprintf(stderr, "config '%s': tenant %d has %d vCPUs, '%s' pins %u\n", spec, t,
                        nvcpus[t], per[t], g_strv_length(cpus));
                return false;
            }
            for (int w = 0; w < nvcpus[t]; w++) {
                if (!parseCpu(cpus[w], &c->pin[t][w])) {
                    fprintf(stderr, "config '%s': '%s' is not a CPU number\n", spec, cpus[w]);
                    return false;
                }
            }
        }
    }
    if (strcmp(parts[3], "smtoff") == 0) {
        c->smtoff = true;
    } else if (strcmp(parts[3], "all") != 0) {
        fprintf(stderr, "config '%s': CPUS must be all or smtoff, not '%s'\n", spec, parts[3]);
        return false;
    }
    return true;
}

static char *
readSys(int cpu, const char *leaf)
{
    g_autofree char *path = g_strdup_printf("/sys/devices/system/cpu/cpu%d/%s", cpu, leaf);
    char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    return g_strstrip(text);
}

/* In place: sysfs has no temporary files to rename over its attributes. */
static bool
writeSys(const char *path, const char *value)
{
    return g_file_set_contents_full(path, value, -1, G_FILE_SET_CONTENTS_NONE, 0644, NULL);
}

static int
possibleCpus(void)
{
    int n = 0;

    for (; n < MAX_CPUS; n++) {
        g_autofree char *path = g_strdup_printf("/sys/devices/system/cpu/cpu%d", n);

        if (!g_file_test(path, G_FILE_TEST_EXISTS))
            break;
    }
    return n;
}

/* Every CPU online, or with smtoff only the first sibling of each core; the CPUs online. */
static int
setCpus(bool smtoff)
{
    int n = possibleCpus(), online = 0;

    for (int cpu = 1; cpu < n; cpu++) {
        g_autofree char *path = g_strdup_printf("/sys/devices/system/cpu/cpu%d/online", cpu);
        g_autofree char *siblings = NULL;
        bool want = true;
        int first;

        if (smtoff) {
            /* Read with the CPU online: an offline CPU's topology is not kept. */
            writeSys(path, "1");
            siblings = readSys(cpu, "topology/thread_siblings_list");
            want = !siblings || (sscanf(siblings, "%d", &first) == 1 && first == cpu);
        }
        if (!writeSys(path, want ? "1" : "0"))
            vpgCheck(false, "online", "cannot set %s to %d", path, want);
    }
    for (int cpu = 0; cpu < n; cpu++) {
        g_autofree char *o = readSys(cpu, "online");

        online += cpu == 0 || (o && strcmp(o, "1") == 0);
    }
    return online;
}

static bool
readNumber(const char *text, const char *field, double *value)
{
    const char *at = strstr(text, field);

    if (!at)
        return false;
    at += strlen(field);
    at += strspn(at, " \t:");
    *value = g_ascii_strtod(at, NULL);
    return true;
}

static bool
sampleThread(pid_t pid, pid_t tid, Sample *s)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    g_autofree char *stat = NULL, *sched = NULL;
    unsigned long long run, wait, slices;
    double fi;

    if (!g_file_get_contents(path, &stat, NULL, NULL) ||
        sscanf(stat, "%llu %llu %llu", &run, &wait, &slices) != 3)
        return false;
    g_free(path);
    path = g_strdup_printf("/proc/%d/task/%d/sched", (int)pid, (int)tid);
    if (!g_file_get_contents(path, &sched, NULL, NULL) ||
        !readNumber(sched, "core_forceidle_sum", &fi))
        return false;
    s->runMs += run / 1e6;
    s->waitMs += wait / 1e6;
    s->slices += slices;
    s->forceidleMs += fi;
    return true;
}

static bool
sampleTenants(const pid_t *pids, Sample *out)
{
    int slot = 0;

    for (int t = 0; t < ntenants; t++) {
        memset(&out[t], 0, sizeof(out[t]));
        for (int w = 0; w < nvcpus[t]; w++, slot++) {
            out[t].work += atomic_load(&slots[slot].work);
            if (!sampleThread(pids[t], atomic_load(&slots[slot].tid), &out[t]))
                return false;
        }
    }
    return true;
}

/* Every thread carries the CPU and cookie asked for: ids equal within a label, distinct
 * across labels, none without cookies. */
static bool
checkSetup(const Config *c, const pid_t *pids)
{
    uint64_t first[MAX_TENANTS] = {0};
    int slot = 0;

    for (int t = 0; t < ntenants; t++) {
        for (int w = 0; w < nvcpus[t]; w++, slot++) {
            g_autoptr(GError) error = NULL;
            pid_t tid = atomic_load(&slots[slot].tid);
            uint64_t cookie = 0;
            vpCoreschedStatus st;
            cpu_set_t set;

            if (sched_getaffinity(tid, sizeof(set), &set) < 0 ||
                (c->pin[t][w] >= 0 && (CPU_COUNT(&set) != 1 || !CPU_ISSET(c->pin[t][w], &set))))
                return vpgCheck(false, "pinned", "config %s: tenant %d thread %d not on CPU %d",
                                c->name, t, w, c->pin[t][w]);
            st = vpCoreschedGet(tid, &cookie, &error);
            /* With SMT off the kernel answers ENODEV to every request: no cookie either. */
            if (st != VP_CORESCHED_OK && !(st == VP_CORESCHED_NO_SMT && !c->cookies))
                return vpgCheck(false, "cookie", "config %s: %s", c->name, error->message);
            if (!c->cookies ? cookie != 0 : cookie == 0)
                return vpgCheck(false, "cookie", "config %s: tenant %d thread %d cookie %#llx",
                                c->name, t, w, (unsigned long long)cookie);
            if (c->cookies && !first[c->group[t]])
                first[c->group[t]] = cookie;
            if (c->cookies && first[c->group[t]] != cookie)
                return vpgCheck(false, "cookie", "config %s: tenant %d thread %d cookie differs",
                                c->name, t, w);
        }
    }
    for (int a = 0; c->cookies && a < MAX_TENANTS; a++)
        for (int b = a + 1; b < MAX_TENANTS; b++)
            if (first[a] && first[a] == first[b])
                return vpgCheck(false, "cookie", "config %s: labels %d and %d share a cookie",
                                c->name, a, b);
    return vpgCheck(true, "setup", "config %s: pins and cookies as asked", c->name);
}

static bool
setCookies(const Config *c, const pid_t *pids)
{
    int leader[MAX_TENANTS];

    for (int g = 0; g < MAX_TENANTS; g++)
        leader[g] = -1;
    for (int t = 0; c->cookies && t < ntenants; t++) {
        g_autoptr(GError) error = NULL;
        int g = c->group[t];
        vpCoreschedStatus st;

        if (leader[g] < 0) {
            leader[g] = t;
            st = vpCoreschedCreate(pids[t], VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
        } else {
            st =
                vpCoreschedShare(pids[leader[g]], pids[t], VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
        }
        if (st != VP_CORESCHED_OK)
            return vpgCheck(false, "cookie", "config %s: %s", c->name, error->message);
    }
    return true;
}

static bool
runOnce(Config *c, int run, unsigned seconds, unsigned long chunk)
{
    pid_t pids[MAX_TENANTS];
    Sample s0[MAX_TENANTS], s1[MAX_TENANTS];
    int online = setCpus(c->smtoff), slot = 0, nslots = 0;
    double t0 = 0, t1 = 0;
    bool sampled = false;

    for (int t = 0; t < ntenants; t++)
        nslots += nvcpus[t];
    memset(slots, 0, sizeof(WorkerSlot) * (size_t)nslots);
    for (int t = 0; t < ntenants; t++) {
        Tenant tenant = {
            .nworkers = nvcpus[t], .chunk = chunk, .tokens = ntokens, .slots = slots + slot};

        for (int w = 0; w < nvcpus[t]; w++)
            tenant.cpu[w] = c->pin[t][w];
        slot += nvcpus[t];
        pids[t] = fork();
        if (pids[t] < 0) {
            perror("fork");
            exit(2);
        }
        if (pids[t] == 0)
            tenantMain(&tenant);
    }
    for (int i = 0; i < nslots; i++)
        while (!atomic_load(&slots[i].tid))
            g_usleep(1000);
    if (setCookies(c, pids) && checkSetup(c, pids)) {
        g_usleep(WARMUP_MS * 1000);
        t0 = nowMs();
        sampled = sampleTenants(pids, s0);
        g_usleep((gulong)seconds * G_USEC_PER_SEC);
        sampled = sampled && sampleTenants(pids, s1);
        t1 = nowMs();
        if (!sampled)
            vpgCheck(false, "sample", "config %s run %d: thread figures unreadable", c->name, run);
    }
    for (int t = 0; t < ntenants; t++)
        kill(pids[t], SIGKILL);
    for (int t = 0; t < ntenants; t++)
        waitpid(pids[t], NULL, 0);
    if (!sampled)
        return false;
    for (int t = 0; t < ntenants; t++) {
        double fi = s1[t].forceidleMs - s0[t].forceidleMs, runMs = s1[t].runMs - s0[t].runMs;

        c->forceidleMs += fi;
        c->runMs += runMs;
        vpgFigure("tenant",
                  "config=%s run=%d tenant=%d vcpus=%d span_ms=%.1f online=%d work=%lu "
                  "run_ms=%.1f wait_ms=%.1f forceidle_ms=%.1f slices=%lu",
                  c->name, run, t, nvcpus[t], t1 - t0, online, s1[t].work - s0[t].work, runMs,
                  s1[t].waitMs - s0[t].waitMs, fi, s1[t].slices - s0[t].slices);
    }
    return true;
}

/* The kernel's sibling sets must be the ones the plan was made for. */
static void
checkSiblings(const char *spec)
{
    g_auto(GStrv) sets = g_strsplit(spec, "/", -1);

    for (char **set = sets; *set; set++) {
        int cpu;
        g_autofree char *have = NULL;

        if (sscanf(*set, "%d", &cpu) != 1) {
            vpgCheck(false, "siblings", "'%s' is not a CPU list", *set);
            continue;
        }
        have = readSys(cpu, "topology/thread_siblings_list");
        vpgCheck(have && strcmp(have, *set) == 0, "siblings", "CPU %d: kernel %s, plan %s", cpu,
                 have ? have : "(none)", *set);
    }
}

/*
 * Cookie ids read 0 until the kernel's key for them exists, made from the random pool once
 * it is ready, which TCG (no RDRAND, few interrupts) leaves until asked: a blocking read
 * makes the kernel gather it, and a throwaway process waits until its own cookie reads
 * non-zero, so that checkSetup's 0 means "no cookie".
 */
static void
idsReadable(void)
{
    char byte;
    pid_t pid;
    int status = 0;

    if (getrandom(&byte, 1, 0) != 1)
        perror("getrandom");
    pid = fork();
    if (pid == 0) {
        uint64_t id = 0;

        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, VP_CORESCHED_SCOPE_THREAD, 0) < 0)
            _exit(2);
        for (int i = 0; i < 200 && !id; i++) {
            if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, VP_CORESCHED_SCOPE_THREAD,
                      (unsigned long)&id) < 0)
                _exit(2);
            if (!id)
                g_usleep(G_USEC_PER_SEC / 20);
        }
        _exit(id ? 0 : 1);
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    vpgCheck(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "cookie-ids",
             "cookie ids readable before the runs (exit %d)", WEXITSTATUS(status));
}

static Config *
findConfig(Config *configs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(configs[i].name, name) == 0)
            return &configs[i];
    return NULL;
}

static void
checkFewerForceidle(Config *configs, int n, const char *spec)
{
    g_auto(GStrv) names = g_strsplit(spec, ",", -1);
    Config *b, *c;
    double fb, fc;

    if (g_strv_length(names) != 2 || !(b = findConfig(configs, n, names[0])) ||
        !(c = findConfig(configs, n, names[1]))) {
        vpgCheck(false, "fewer-forceidle", "'%s' does not name two configurations", spec);
        return;
    }
    fb = b->runMs > 0 ? b->forceidleMs / b->runMs : 0;
    fc = c->runMs > 0 ? c->forceidleMs / c->runMs : 0;
    vpgCheck(c->runMs > 0 && fc < fb, "fewer-forceidle",
             "forced idle of run time: %s %.4f (%.1f of %.1f ms), %s %.4f (%.1f of %.1f ms)",
             c->name, fc, c->forceidleMs, c->runMs, b->name, fb, b->forceidleMs, b->runMs);
}

int
main(int argc, char **argv)
{
    g_autofree char *tenants = NULL, *siblings = NULL, *fewer = NULL;
    int seconds = 0, runs = 0, chunk = 20000, nconfigs = 0;
    g_autoptr(GOptionContext) ctx = g_option_context_new("CONFIG...");
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"tenants", 0, 0, G_OPTION_ARG_STRING, &tenants, "vCPUs per tenant", "N,N,..."},
        {"seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "measured span per run", "S"},
        {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "runs of every configuration", "R"},
        {"chunk", 0, 0, G_OPTION_ARG_INT, &chunk, "loop iterations per token", "N"},
        {"tokens", 0, 0, G_OPTION_ARG_INT, &ntokens, "tokens per worker in the ring", "N"},
        {"siblings", 0, 0, G_OPTION_ARG_STRING, &siblings, "expected sibling sets", "0-1/2-3"},
        {"fewer-forceidle", 0, 0, G_OPTION_ARG_STRING, &fewer, "check C < B", "B,C"},
        G_OPTION_ENTRY_NULL,
    };
    Config configs[MAX_CONFIGS];
    g_auto(GStrv) counts = NULL;
    int total = 0;

    vpgBegin("costload");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || !tenants || seconds <= 0 ||
        runs <= 0 || chunk <= 0 || ntokens <= 0 || ntokens > MAX_TOKENS || argc < 2 ||
        argc - 1 > MAX_CONFIGS) {
        fprintf(stderr, "usage: %s --tenants N,.. --seconds S --runs R CONFIG...: %s\n", argv[0],
                error ? error->message : "an argument is missing or out of range");
        return 2;
    }
    counts = g_strsplit(tenants, ",", -1);
    ntenants = (int)g_strv_length(counts);
    for (int t = 0; t < ntenants; t++) {
        nvcpus[t] = atoi(counts[t]);
        total += nvcpus[t];
        if (ntenants > MAX_TENANTS || nvcpus[t] <= 0 || total > MAX_WORKERS) {
            fprintf(stderr, "--tenants '%s': 1..%d tenants of 1.. vCPUs, %d in all\n", tenants,
                    MAX_TENANTS, MAX_WORKERS);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++)
        if (!parseConfig(argv[i], &configs[nconfigs++]))
            return 2;
    slots = mmap(NULL, sizeof(WorkerSlot) * MAX_WORKERS, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    idsReadable();
    if (siblings)
        checkSiblings(siblings);
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < nconfigs; k++)
            runOnce(&configs[(r + k) % nconfigs], r, (unsigned)seconds, (unsigned long)chunk);
    setCpus(false);
    if (fewer)
        checkFewerForceidle(configs, nconfigs, fewer);
    return vpgEnd();
}
