/*
 * What the monitor's files share: monitor.c keeps the threads and samples them,
 * monitorperf.c opens and reads their perf counters. Nothing outside
 * plugin/host/monitor*.c includes this.
 */
#pragma once

#include "host/monitor.h"

#define FILE_BUF 8192

typedef enum {
    WARN_FDLIMIT = 1 << 0,
    WARN_PERF = 1 << 1,
    WARN_SCHEDSTAT = 1 << 2,
    WARN_SWITCHES = 1 << 3,
    WARN_HW = 1 << 4,
    WARN_TRACEPOINT = 1 << 5,
} Warned;

typedef struct {
    char *domain;
    int vcpu;
    pid_t pid, tid;
    char *dir; /* /proc/PID/task/TID/ */
    int schedstat_fd;
    int switches_fd;
    bool schedstat_reopen; /* no kept fd (fd limit): open for each read */
    bool switches_reopen;
    /* group: context switches (leader), migrations, task clock, voluntary switches */
    int perf_fd[4];
    int nperf;
    int hw_fd[2]; /* group: cycles (leader), instructions */
    bool gone;
    bool sampled;
    gint64 prev_ts;
    guint32 prev_sources;
    vpMonitorCounters prev;
} Thread;

struct _vpMonitor {
    GPtrArray *threads; /* Thread *, in the order added */
    GHashTable *index;  /* "domain\037vcpu" -> Thread * */
    const char *switches_file;
    int switch_tp; /* sched_switch tracepoint id, -1 when switches come from /proc */
    /* The probe's tracepoint event, kept: the kernel registers the tracepoint with its first
     * perf event (about 30 ms here) and unregisters it with its last (about 50 ms), and the
     * daemon's main thread, which hooks may be waiting on, should pay that once, at start,
     * not whenever the first vCPU thread is watched or the last one leaves. */
    int switch_probe[2];
    bool forceidle;
    bool perf;
    bool hw;
    guint32 warned;
    int stat_fd;
    GArray *stat_prev; /* vpMonitorCpuTicks */
    char *buf;
    gsize bufsize;
    guint64 tick_ns;
    int fd_ceiling; /* descriptors numbered from here on are not kept */
};

void vpMonWarnOnce(vpMonitor *mon, Warned cause, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
bool vpMonFdLimit(int err);
void vpMonCloseFd(int *fd);
int vpMonKeepFd(const vpMonitor *mon, int fd);

/* monitorperf.c */
void vpMonDetect(vpMonitor *mon, const vpMonitorOptions *opts);
void vpMonOpenPerf(vpMonitor *mon, Thread *t);
bool vpMonPerfReadGroup(int leader, int n, guint64 *out);
