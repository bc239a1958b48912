/*
 * One job per domain at a time, libvirt's qemuDomainObjBeginJob model. An operation that
 * changes what a domain holds begins a job on it (state lock held), decides under the
 * lock, lets the lock go for libvirt between vpJobEnter() and vpJobExit(), and commits
 * once, under the lock, only if vpJobExit() said the domain did not change meanwhile.
 * Jobs on different domains run side by side (the socket thread's reserve beside the
 * main loop's sync); a second job on one domain waits for the first, bounded, and is
 * refused with the holder named when the bound passes.
 *
 * What changes a domain without a job: the hook's release (libvirt's word that it stopped,
 * never refused or kept waiting) and what the main loop does between jobs (expiry, a full
 * sync's release of the gone, a reload). A release during a job is what the check at
 * vpJobExit() catches: the domain's record is gone, or gone and made anew, so its serial
 * (vpDomRecord) differs.
 */
#pragma once

#include "daemon/manager.h"

typedef struct _vpJobs vpJobs;
typedef struct _vpJob vpJob;

/* lock: the state lock; mgr borrowed. */
vpJobs *vpJobsNew(GMutex *lock, const vpManager *mgr);
void vpJobsFree(vpJobs *jobs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpJobs, vpJobsFree)

/* State lock held: the job `what` on domain name, once no other job holds it. Waits at
 * most wait_ms for the holder (0: the main loop, which never waits: the holder may be
 * waiting for it); then NULL with VP_ERROR_BUSY, the holder and its age in the message. */
vpJob *vpJobBegin(vpJobs *jobs, const char *name, const char *what, guint wait_ms, GError **error);
/* State lock held: the domain is free for the next job (waiters wake). */
void vpJobEnd(vpJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpJob, vpJobEnd)

const char *vpJobName(const vpJob *job);

/* Around a libvirt call (libvirt's Enter/ExitMonitor): lets the state lock go, and takes it
 * back. vpJobExit() is FALSE when the domain changed while the lock was let go (logged
 * once), and stays FALSE: what the job decided before belongs to a record that is gone,
 * and must not be committed. The job's own changes, made under the lock, are not
 * changes. */
void vpJobEnter(vpJob *job);
bool vpJobExit(vpJob *job);
/* FALSE once vpJobExit() was. */
bool vpJobCurrent(const vpJob *job);

/* For the integration tier: func runs on the job's thread each time a job has let the
 * state lock go (vpJobEnter), so that a test can put a hook request into that window.
 * NULL removes it. */
void vpJobsSetEnterFunc(vpJobs *jobs, void (*func)(const char *name, gpointer data), gpointer data);
