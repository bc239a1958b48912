/*
 * Core-scheduling cookies through prctl(PR_SCHED_CORE).
 *
 * The kernel answers every command with a few errnos whose meaning depends on the call
 * being well formed (kernel/sched/core_sched.c: ENODEV before anything else when no core
 * has two siblings, then EINVAL for bad arguments, ESRCH, EPERM). Arguments are checked
 * here first, so an EINVAL that comes back can only mean that the prctl option itself is
 * unknown: a kernel without CONFIG_SCHED_CORE.
 */
#include "host/coresched.h"

#include "core/model/topology.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#define POLL_INTERVAL_US 10000

static const char *const statusNames[] = {
    [VP_CORESCHED_OK] = "ok",           [VP_CORESCHED_UNSUPPORTED] = "unsupported",
    [VP_CORESCHED_NO_SMT] = "no-smt",   [VP_CORESCHED_DENIED] = "denied",
    [VP_CORESCHED_GONE] = "gone",       [VP_CORESCHED_MISMATCH] = "mismatch",
    [VP_CORESCHED_PENDING] = "pending", [VP_CORESCHED_FAILED] = "failed",
};

static const char *const scopeNames[] = {
    [VP_CORESCHED_SCOPE_THREAD] = "thread",
    [VP_CORESCHED_SCOPE_THREAD_GROUP] = "thread-group",
    [VP_CORESCHED_SCOPE_PROCESS_GROUP] = "process-group",
};

const char *
vpCoreschedStatusName(vpCoreschedStatus status)
{
    if ((unsigned)status >= G_N_ELEMENTS(statusNames))
        return "invalid";
    return statusNames[status];
}

const char *
vpCoreschedScopeName(vpCoreschedScope scope)
{
    if ((unsigned)scope >= G_N_ELEMENTS(scopeNames))
        return "invalid";
    return scopeNames[scope];
}

static vpCoreschedStatus
statusFromErrno(int err, const char **meaning)
{
    switch (err) {
    case EINVAL:
        *meaning = "the kernel has no core scheduling (built without CONFIG_SCHED_CORE)";
        return VP_CORESCHED_UNSUPPORTED;
    case ENODEV:
        *meaning = "no CPU core has two SMT siblings online";
        return VP_CORESCHED_NO_SMT;
    case EPERM:
        *meaning = "not allowed to ptrace-read the target (needs CAP_SYS_PTRACE or the "
                   "same user)";
        return VP_CORESCHED_DENIED;
    case ESRCH:
        *meaning = "no such process or thread (it has exited)";
        return VP_CORESCHED_GONE;
    default:
        *meaning = "unexpected answer from the kernel";
        return VP_CORESCHED_FAILED;
    }
}

static int
errorCodeFor(vpCoreschedStatus status)
{
    switch (status) {
    case VP_CORESCHED_UNSUPPORTED:
    case VP_CORESCHED_NO_SMT:
        return VP_ERROR_UNSUPPORTED;
    default:
        return VP_ERROR_SYSTEM;
    }
}

/* The tasks a scope covers, for messages: "every thread of process 42". */
static char *
describeTarget(pid_t pid, vpCoreschedScope scope)
{
    switch (scope) {
    case VP_CORESCHED_SCOPE_THREAD:
        return g_strdup_printf("thread %d", (int)pid);
    case VP_CORESCHED_SCOPE_THREAD_GROUP:
        return g_strdup_printf("every thread of process %d", (int)pid);
    case VP_CORESCHED_SCOPE_PROCESS_GROUP:
        return g_strdup_printf("every process in the process group of %d", (int)pid);
    }
    return g_strdup_printf("pid %d", (int)pid);
}

static bool
checkArgs(const char *action, pid_t pid, vpCoreschedScope scope, GError **error)
{
    if (pid <= 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "core scheduling: cannot %s: pid '%d' is not a process or thread id", action,
                    (int)pid);
        return false;
    }
    if ((unsigned)scope >= G_N_ELEMENTS(scopeNames)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "core scheduling: cannot %s for pid %d: scope '%d' is not one of thread, "
                    "thread-group, process-group",
                    action, (int)pid, (int)scope);
        return false;
    }
    return true;
}

/* One prctl; on failure the message reads "core scheduling: cannot ACTION TARGET: ...". */
static vpCoreschedStatus
coreschedPrctl(unsigned long cmd, pid_t pid, vpCoreschedScope scope, uint64_t *cookie,
               const char *action, const char *target, GError **error)
{
    const char *meaning;
    vpCoreschedStatus status;
    int err;

    if (prctl(PR_SCHED_CORE, cmd, (unsigned long)pid, (unsigned long)scope,
              (unsigned long)cookie) == 0)
        return VP_CORESCHED_OK;

    err = errno;
    status = statusFromErrno(err, &meaning);
    g_set_error(error, VP_ERROR, errorCodeFor(status), "core scheduling: cannot %s %s: %s (%s: %s)",
                action, target, meaning, strerrorname_np(err) ? strerrorname_np(err) : "?",
                g_strerror(err));
    return status;
}

vpCoreschedStatus
vpCoreschedProbe(GError **error)
{
    uint64_t cookie = 0;

    return coreschedPrctl(PR_SCHED_CORE_GET, 0, VP_CORESCHED_SCOPE_THREAD, &cookie, "read",
                          "the cookie of the calling thread", error);
}

vpCoreschedStatus
vpCoreschedCreate(pid_t pid, vpCoreschedScope scope, GError **error)
{
    g_autofree char *target = NULL;

    if (!checkArgs("create a cookie", pid, scope, error))
        return VP_CORESCHED_FAILED;
    target = describeTarget(pid, scope);
    return coreschedPrctl(PR_SCHED_CORE_CREATE, pid, scope, NULL, "create a cookie for", target,
                          error);
}

typedef struct {
    pid_t from;
    pid_t to;
    vpCoreschedScope scope;
    GError *error;
} ShareJob;

/* SHARE_FROM can only pull a cookie onto the calling thread, and SHARE_TO only pushes the
 * calling thread's: a throwaway thread carries the cookie across so that the caller's own
 * cookie never changes (a daemon carrying a VM's cookie would be forced idle with it). */
static gpointer
shareThread(gpointer data)
{
    ShareJob *job = data;
    g_autofree char *source = g_strdup_printf("thread %d", (int)job->from);
    g_autofree char *target = describeTarget(job->to, job->scope);
    g_autofree char *action = g_strdup_printf("share the cookie of thread %d with", (int)job->from);
    vpCoreschedStatus status;

    status = coreschedPrctl(PR_SCHED_CORE_SHARE_FROM, job->from, VP_CORESCHED_SCOPE_THREAD, NULL,
                            "take the cookie of", source, &job->error);
    if (status == VP_CORESCHED_OK)
        status = coreschedPrctl(PR_SCHED_CORE_SHARE_TO, job->to, job->scope, NULL, action, target,
                                &job->error);
    return GINT_TO_POINTER(status);
}

vpCoreschedStatus
vpCoreschedShare(pid_t from, pid_t to, vpCoreschedScope scope, GError **error)
{
    ShareJob job = {.from = from, .to = to, .scope = scope};
    g_autoptr(GThread) thread = NULL;
    vpCoreschedStatus status;

    if (!checkArgs("share a cookie", from, VP_CORESCHED_SCOPE_THREAD, error) ||
        !checkArgs("share a cookie", to, scope, error))
        return VP_CORESCHED_FAILED;

    thread = g_thread_try_new("vp-coresched", shareThread, &job, error);
    if (!thread) {
        g_prefix_error(error, "core scheduling: cannot share the cookie of thread %d: ", (int)from);
        return VP_CORESCHED_FAILED;
    }
    status = GPOINTER_TO_INT(g_thread_join(g_steal_pointer(&thread)));
    if (job.error)
        g_propagate_error(error, job.error);
    return status;
}

vpCoreschedStatus
vpCoreschedGet(pid_t tid, uint64_t *cookie, GError **error)
{
    g_autofree char *target = NULL;
    /* The kernel writes a u64 and refuses an address that is not 8-byte aligned. */
    uint64_t value = 0;
    vpCoreschedStatus status;

    if (!checkArgs("read a cookie", tid, VP_CORESCHED_SCOPE_THREAD, error))
        return VP_CORESCHED_FAILED;
    target = g_strdup_printf("of thread %d", (int)tid);
    status = coreschedPrctl(PR_SCHED_CORE_GET, tid, VP_CORESCHED_SCOPE_THREAD, &value,
                            "read the cookie", target, error);
    if (status == VP_CORESCHED_OK)
        *cookie = value;
    return status;
}

/* A throwaway thread gives itself a cookie and reads its id: non-zero proves that the
 * kernel's key for ids exists, so that a 0 read elsewhere means "no cookie". */
static gpointer
idsReadableThread(gpointer unused)
{
    uint64_t id = 0;

    if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, VP_CORESCHED_SCOPE_THREAD, 0) < 0 ||
        prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, VP_CORESCHED_SCOPE_THREAD, (unsigned long)&id) <
            0)
        return GINT_TO_POINTER(FALSE);
    return GINT_TO_POINTER(id != 0);
}

static bool
idsReadable(void)
{
    GThread *thread = g_thread_try_new("vp-coresched", idsReadableThread, NULL, NULL);

    return thread && GPOINTER_TO_INT(g_thread_join(thread));
}

/*
 * Cookie ids are hashes of the kernel's cookie pointer with a key that exists only once
 * the random pool is ready (lib/vsprintf.c looks every 2 s); until then every GET reads
 * 0. A non-zero read, of a target or of the throwaway thread's own cookie, proves the key
 * exists: a 0 read after that is a thread without a cookie. Without proof, 0 is retried
 * until settle_ms runs out, and the answer is then "pending", never "no cookie".
 */
vpCoreschedStatus
vpCoreschedVerify(const pid_t *tids, size_t n, unsigned settle_ms, uint64_t *cookie, GError **error)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)settle_ms * 1000;
    bool keyReady = false;

    if (n == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "core scheduling: cannot verify cookies: no thread given");
        return VP_CORESCHED_FAILED;
    }

    for (;;) {
        uint64_t first = 0;
        pid_t firstTid = 0;
        pid_t zeroTid = 0;

        for (size_t i = 0; i < n; i++) {
            bool wasReady = keyReady;
            uint64_t value;
            vpCoreschedStatus status = vpCoreschedGet(tids[i], &value, error);

            if (status != VP_CORESCHED_OK)
                return status;
            if (value == 0) {
                if (wasReady) {
                    g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                                "core scheduling: thread %d has no cookie", (int)tids[i]);
                    return VP_CORESCHED_MISMATCH;
                }
                if (!zeroTid)
                    zeroTid = tids[i];
                continue;
            }
            keyReady = true;
            if (!first) {
                first = value;
                firstTid = tids[i];
            } else if (value != first) {
                g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                            "core scheduling: thread %d has cookie %#" G_GINT64_MODIFIER
                            "x, thread %d has %#" G_GINT64_MODIFIER "x",
                            (int)firstTid, (guint64)first, (int)tids[i], (guint64)value);
                return VP_CORESCHED_MISMATCH;
            }
        }
        if (!zeroTid) {
            if (cookie)
                *cookie = first;
            return VP_CORESCHED_OK;
        }
        /* With the key proven, the next pass gives a definite answer. */
        if (keyReady || (keyReady = idsReadable()))
            continue;
        if (g_get_monotonic_time() >= deadline) {
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                        "core scheduling: cannot read the cookie of thread %d yet: ids read 0 "
                        "until the kernel's random pool is ready (waited %u ms)",
                        (int)zeroTid, settle_ms);
            return VP_CORESCHED_PENDING;
        }
        g_usleep(POLL_INTERVAL_US);
    }
}
