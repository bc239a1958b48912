/*
 * vCPU threads of a QEMU process, from libvirt's pidfile and /proc. See threads.h for
 * why not from libvirt. The domain name becomes a file name here: libvirt refuses names
 * with '/', and so does this code, with "." and ".." besides.
 */
#include "host/threads.h"
#include "host/procstat.h"
#include "core/model/error.h"

#include <errno.h>
#include <string.h>

void
vpVcpuThreadsFree(vpVcpuThreads *t)
{
    if (!t)
        return;
    g_free(t->tids);
    g_free(t);
}

const char *
vpVcpuThreadsRunDir(const char *uri)
{
    static const char *const system[] = {"qemu:///system", "qemu+unix:///system"};
    for (gsize i = 0; uri && i < G_N_ELEMENTS(system); i++) {
        if (g_str_has_prefix(uri, system[i]) &&
            (uri[strlen(system[i])] == '\0' || uri[strlen(system[i])] == '?'))
            return "/run/libvirt/qemu";
    }
    return NULL;
}

static gboolean
readPid(const char *path, pid_t *pid, GError **error)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s", err->message);
        return FALSE;
    }
    guint64 v;
    if (!g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXINT32, &v, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: '%s' is not a process id", path, text);
        return FALSE;
    }
    *pid = (pid_t)v;
    return TRUE;
}

/* A stale pidfile must not send us to another process. */
static gboolean
isQemuOf(const char *proc, pid_t pid, const char *name, GError **error)
{
    g_autofree char *path = g_strdup_printf("%s/%d/cmdline", proc, (int)pid);
    g_autofree char *cmdline = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &cmdline, &len, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "QEMU of %s: process %d is gone", name,
                    (int)pid);
        return FALSE;
    }
    /* libvirt writes "-name guest=NAME,debug-threads=on", doubling commas in NAME. */
    g_auto(GStrv) parts = g_strsplit(name, ",", -1);
    g_autofree char *escaped = g_strjoinv(",,", parts);
    g_autofree char *want = g_strdup_printf("guest=%s", escaped);
    gboolean named = FALSE;
    for (gsize off = 0; off < len; off += strlen(cmdline + off) + 1) {
        const char *arg = cmdline + off;
        if (strcmp(arg, "-name") == 0 && off + strlen(arg) + 1 < len) {
            const char *val = arg + strlen(arg) + 1;
            gsize n = strlen(want);
            named = strncmp(val, want, n) == 0 &&
                    (val[n] == '\0' || (val[n] == ',' && val[n + 1] != ','));
            break;
        }
    }
    if (!named)
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "process %d from the pidfile of %s is not its QEMU", (int)pid, name);
    return named;
}

/* "CPU 3/KVM" -> 3; -1 for any other thread name. */
static int
vcpuOfComm(const char *comm)
{
    if (!g_str_has_prefix(comm, "CPU "))
        return -1;
    char *end = NULL;
    guint64 n = g_ascii_strtoull(comm + 4, &end, 10);
    if (end == comm + 4 || *end != '/' || n > 16383)
        return -1;
    return (int)n;
}

vpVcpuThreads *
vpVcpuThreadsFind(const char *rundir, const char *proc, const char *name, GError **error)
{
    if (!rundir) {
        g_set_error(error, VP_ERROR, VP_ERROR_UNSUPPORTED,
                    "vCPU threads of %s: the driver's pidfile directory is unknown", name);
        return NULL;
    }
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain name '%s' is not a file name", name);
        return NULL;
    }
    g_autofree char *pidfile = g_strdup_printf("%s/%s.pid", rundir, name);
    pid_t pid;
    vpProcStat st;
    if (!readPid(pidfile, &pid, error) || !isQemuOf(proc, pid, name, error) ||
        !vpProcStatRead(proc, pid, &st, error))
        return NULL;
    /* The command line is the process's own to write; its start time is not: QEMU wrote
     * the pidfile once it ran, so a process that started later holds a reused pid. */
    if (!vpProcStartedBefore(&st, pidfile, error)) {
        g_prefix_error(error, "QEMU of %s: ", name);
        return NULL;
    }

    g_autofree char *taskdir = g_strdup_printf("%s/%d/task", proc, (int)pid);
    g_autoptr(GError) err = NULL;
    g_autoptr(GDir) dir = g_dir_open(taskdir, 0, &err);
    if (!dir) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s", err->message);
        return NULL;
    }
    g_autoptr(GArray) tids = g_array_new(FALSE, TRUE, sizeof(pid_t));
    const char *entry;
    while ((entry = g_dir_read_name(dir))) {
        g_autofree char *path = g_strdup_printf("%s/%s/comm", taskdir, entry);
        g_autofree char *comm = NULL;
        if (!g_file_get_contents(path, &comm, NULL, NULL))
            continue; /* the thread exited meanwhile */
        int vcpu = vcpuOfComm(g_strchomp(comm));
        guint64 tid;
        if (vcpu < 0 || !g_ascii_string_to_unsigned(entry, 10, 1, G_MAXINT32, &tid, NULL))
            continue;
        if ((guint)vcpu >= tids->len)
            g_array_set_size(tids, vcpu + 1);
        g_array_index(tids, pid_t, vcpu) = (pid_t)tid;
    }
    vpVcpuThreads *t = g_new0(vpVcpuThreads, 1);
    t->pid = pid;
    t->start_ticks = st.start_ticks;
    t->nvcpus = tids->len;
    t->tids = (pid_t *)g_array_free(g_steal_pointer(&tids), FALSE);
    return t;
}
