/*
 * The QEMU process of a running domain and its vCPU threads.
 *
 * libvirt 9.0 has no API for vCPU thread ids short of a QEMU monitor command, which
 * taints the domain. They are found the way an operator would: libvirt's pidfile for the
 * domain, checked against the process's command line ("-name guest=NAME,") and its start
 * time (not after the pidfile was written: a reused pid fails), and the vCPU
 * threads by the names QEMU gives them with debug-threads=on, which libvirt always sets:
 * "CPU N/KVM", "CPU N/TCG".
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    guint64 start_ticks; /* the process's start time (host/procstat.h) */
    unsigned nvcpus;     /* highest vCPU index found + 1 */
    pid_t *tids;         /* per vCPU, 0 when QEMU has no thread for it (offline) */
} vpVcpuThreads;

void vpVcpuThreadsFree(vpVcpuThreads *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpVcpuThreads, vpVcpuThreadsFree)

/* The directory of the QEMU driver's pidfiles for a libvirt URI (qemu:///system:
 * /run/libvirt/qemu), or NULL when vcpuplace cannot know it (other drivers, session). */
const char *vpVcpuThreadsRunDir(const char *uri);

/* rundir from vpVcpuThreadsRunDir(); proc is "/proc" (tests may point elsewhere). */
vpVcpuThreads *vpVcpuThreadsFind(const char *rundir, const char *proc, const char *name,
                                 GError **error);
