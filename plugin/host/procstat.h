/*
 * /proc/PID/stat: who a process is beyond its pid. A pid is reused once its process has
 * gone, and a command line says whatever its process wrote there; the start time (in
 * clock ticks since boot) tells a process from a later one with the same pid.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    char state; /* R, S, D, Z, ... */
    pid_t ppid;
    guint64 start_ticks; /* field 22: clock ticks after boot */
} vpProcStat;

/* Reads proc/PID/stat (proc is "/proc"; tests may point elsewhere). */
bool vpProcStatRead(const char *proc, pid_t pid, vpProcStat *out, GError **error);

/* Seconds after boot at which st's process started. */
double vpProcStartSeconds(const vpProcStat *st);

/* Whether the process started no later than the file at path was last written (within
 * the tick's and the clock's slack): a process that writes the file, or is written into
 * it, once it runs (a pidfile), started before. A pid reused after the file was written
 * names a process that started after it. */
bool vpProcStartedBefore(const vpProcStat *st, const char *path, GError **error);
