/*
 * Linux core-scheduling cookies (prctl PR_SCHED_CORE): SMT siblings of one core run
 * tasks of one cookie at a time, so each VM, or each trust group of VMs, gets its own.
 *
 * Every call returns how the kernel answered, classified, and on failure also a GError
 * (domain VP_ERROR) naming the pid or tid and the errno. The same errno means one thing
 * only because calls are checked before they reach the kernel: EINVAL from a well-formed
 * call is a kernel built without CONFIG_SCHED_CORE. Cookies are inherited across
 * fork/clone; a GET reads 0 for a set cookie until the kernel's random pool is ready
 * (seconds after boot), which vpCoreschedVerify() tells apart from "no cookie".
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum {
    VP_CORESCHED_OK = 0,
    VP_CORESCHED_UNSUPPORTED, /* EINVAL: kernel built without CONFIG_SCHED_CORE */
    VP_CORESCHED_NO_SMT,      /* ENODEV: no core has two siblings online */
    VP_CORESCHED_DENIED,      /* EPERM: caller may not ptrace-read the target */
    VP_CORESCHED_GONE,        /* ESRCH: the process or thread has exited */
    VP_CORESCHED_MISMATCH,    /* verify: a thread carries no cookie or another one */
    VP_CORESCHED_PENDING,     /* verify: ids still read 0, the random pool is not ready */
    VP_CORESCHED_FAILED,      /* any other errno, or a bad argument */
} vpCoreschedStatus;

/* Which tasks a cookie is applied to, relative to the pid given. */
typedef enum {
    VP_CORESCHED_SCOPE_THREAD = 0,    /* that thread only */
    VP_CORESCHED_SCOPE_THREAD_GROUP,  /* every thread of its process */
    VP_CORESCHED_SCOPE_PROCESS_GROUP, /* every thread of every process in its process group */
} vpCoreschedScope;

/* A settle_ms for vpCoreschedVerify() where blocking is fine: the kernel's key for cookie
 * ids appears up to 2 s after its random pool is ready. A main loop passes 0 and retries
 * _PENDING later. */
#define VP_CORESCHED_SETTLE_MS 5000

/* Asks the running kernel whether core scheduling works for this process, by reading
 * the caller's own cookie. VP_CORESCHED_OK, _UNSUPPORTED or _NO_SMT; call it once. */
vpCoreschedStatus vpCoreschedProbe(GError **error);

/* Gives pid's scope (the thread pid, its process, or its process group) a new cookie
 * that no other task has. The caller's own cookie is untouched. */
vpCoreschedStatus vpCoreschedCreate(pid_t pid, vpCoreschedScope scope, GError **error);

/* Copies the cookie of thread from to the scope of to (e.g. one VM's cookie to the other
 * VMs of its trust group). A from without a cookie clears to's. The caller keeps its own. */
vpCoreschedStatus vpCoreschedShare(pid_t from, pid_t to, vpCoreschedScope scope, GError **error);

/* Reads thread tid's cookie id into *cookie: 0 means none, or a set cookie while the
 * random pool is not ready. Ids are 32-bit hashes, comparable only within one boot. */
vpCoreschedStatus vpCoreschedGet(pid_t tid, uint64_t *cookie, GError **error);

/* Checks that threads tids[0..n) carry one cookie, stored in *cookie (may be NULL). Reads of
 * 0 before the random pool is ready are retried for up to settle_ms, then give _PENDING. */
vpCoreschedStatus vpCoreschedVerify(const pid_t *tids, size_t n, unsigned settle_ms,
                                    uint64_t *cookie, GError **error);

/* Short name of a status for logs and `vcpuplace status`: "ok", "unsupported", "no-smt",
 * "denied", "gone", "mismatch", "pending", "failed". */
const char *vpCoreschedStatusName(vpCoreschedStatus status);
/* Short name of a scope: "thread", "thread-group", "process-group". */
const char *vpCoreschedScopeName(vpCoreschedScope scope);
