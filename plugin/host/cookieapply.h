/*
 * core/place/cookieplan.h's decisions carried out on real threads: what a VM's threads carry,
 * read with PR_SCHED_CORE_GET, and its CREATE and SHARE steps done with prctl
 * (host/coresched.h). The daemon has it find the threads of QEMU processes; the guest tier
 * hands it stand-ins on a SCHED_CORE kernel.
 */
#pragma once

#include "core/place/cookieplan.h"
#include "host/coresched.h"

#include <glib.h>
#include <sys/types.h>

typedef struct {
    pid_t tid;
    char *comm; /* the thread's name, or NULL */
    int vcpu;   /* -1: not a vCPU thread */
    bool known; /* actual was read */
    uint64_t actual;
} vpCookieThread;

/* One VM's process and its threads. */
typedef struct {
    pid_t pid;
    GArray *threads; /* vpCookieThread, vCPU threads first */
} vpCookieProcess;

/* An empty thread list that frees the names it holds. */
GArray *vpCookieThreadsNew(void);

/* The QEMU process of domain name (host/threads.h: rundir is its pidfile directory, proc
 * "/proc") and every thread of it, vCPU threads first (by vCPU), then the others. p gets a
 * thread list in any case; its pid is 0 when no QEMU process was found. */
void vpCookieProcessFind(vpCookieProcess *p, const char *rundir, const char *proc,
                         const char *name);

/* Reads every thread's cookie (threads that exited are dropped) and sets d's seen, vcpus,
 * vcpus_all, others and others_all; the caller fills the rest of d. Ids that read 0 while
 * the kernel's random pool is not ready give VP_COOKIE_PENDING. FALSE, with the kernel's
 * answer, when it refuses a read. */
gboolean vpCookieObserve(vpCookieProcess *p, vpCookieDomain *d, GError **error);

/* Carries out one action on target; from is the SHARE action's source VM. */
gboolean vpCookieApply(const vpCookieAction *a, const vpCookieProcess *target,
                       const vpCookieProcess *from, GError **error);
