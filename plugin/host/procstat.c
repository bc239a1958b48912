#include "host/procstat.h"
#include "core/model/error.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Slack for comparing a start time in clock ticks with a file time: the tick (10 ms at
 * HZ 100) and a clock step between the write and now. */
#define VP_PROC_START_SLACK_S 1.0

bool
vpProcStatRead(const char *proc, pid_t pid, vpProcStat *out, GError **error)
{
    g_autofree char *path = g_strdup_printf("%s/%d/stat", proc, (int)pid);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, &len, &err)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "process %d: %s", (int)pid, err->message);
        return false;
    }
    /* "PID (COMM) STATE PPID ...": COMM may hold spaces and ')', so the fields start after
     * the last ')'. */
    const char *close = g_strrstr_len(text, len, ")");
    g_auto(GStrv) fields = close ? g_strsplit(close + 1, " ", 0) : NULL;
    /* After COMM: fields[1] is field 3 (state), so field N is fields[N - 2]. */
    guint64 ppid, start;
    if (!fields || g_strv_length(fields) < 21 || strlen(fields[1]) != 1 ||
        !g_ascii_string_to_unsigned(fields[2], 10, 0, G_MAXINT32, &ppid, NULL) ||
        !g_ascii_string_to_unsigned(fields[20], 10, 0, G_MAXUINT64, &start, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: not a process's stat line", path);
        return false;
    }
    out->pid = pid;
    out->state = fields[1][0];
    out->ppid = (pid_t)ppid;
    out->start_ticks = start;
    return true;
}

double
vpProcStartSeconds(const vpProcStat *st)
{
    long hz = sysconf(_SC_CLK_TCK);
    return (double)st->start_ticks / (hz > 0 ? hz : 100);
}

bool
vpProcStartedBefore(const vpProcStat *st, const char *path, GError **error)
{
    struct stat sb;
    if (stat(path, &sb) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s: %s", path, g_strerror(errno));
        return false;
    }
    struct timespec real, boot;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    double written = (sb.st_mtim.tv_sec - real.tv_sec + boot.tv_sec) +
                     (sb.st_mtim.tv_nsec - real.tv_nsec + boot.tv_nsec) / 1e9;
    double started = vpProcStartSeconds(st);
    if (started <= written + VP_PROC_START_SLACK_S)
        return true;
    g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                "process %d started %.2f s after %s was written: its pid was reused", (int)st->pid,
                started - written, path);
    return false;
}
