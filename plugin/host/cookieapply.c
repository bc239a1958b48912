/*
 * Cookie observation and actions on threads, and the threads of a QEMU process as /proc
 * lists them (host/threads.h finds the process and its vCPU threads). SHARE copies a cookie from
 * one thread: for a VM's vCPU scope it goes to each vCPU thread, for its process scope to the
 * thread group (PR_SCHED_CORE_SCOPE_THREAD_GROUP); a fresh cookie for the vCPU scope is created on
 * the first vCPU thread and shared to the others.
 */
#include "host/cookieapply.h"
#include "core/model/error.h"
#include "host/threads.h"

static void
threadClear(gpointer data)
{
    g_free(((vpCookieThread *)data)->comm);
}

GArray *
vpCookieThreadsNew(void)
{
    GArray *threads = g_array_new(FALSE, TRUE, sizeof(vpCookieThread));
    g_array_set_clear_func(threads, threadClear);
    return threads;
}

static char *
threadComm(const char *proc, pid_t pid, pid_t tid)
{
    g_autofree char *path = g_strdup_printf("%s/%d/task/%d/comm", proc, (int)pid, (int)tid);
    char *comm = NULL;
    if (!g_file_get_contents(path, &comm, NULL, NULL))
        return NULL;
    return g_strchomp(comm);
}

void
vpCookieProcessFind(vpCookieProcess *p, const char *rundir, const char *proc, const char *name)
{
    g_autoptr(vpVcpuThreads) t = vpVcpuThreadsFind(rundir, proc, name, NULL);

    p->threads = vpCookieThreadsNew();
    if (!t)
        return;
    p->pid = t->pid;
    for (unsigned v = 0; v < t->nvcpus; v++) {
        if (!t->tids[v])
            continue;
        vpCookieThread th = {
            .tid = t->tids[v], .comm = threadComm(proc, t->pid, t->tids[v]), .vcpu = (int)v};
        g_array_append_val(p->threads, th);
    }
    g_autofree char *taskdir = g_strdup_printf("%s/%d/task", proc, (int)t->pid);
    g_autoptr(GDir) dir = g_dir_open(taskdir, 0, NULL);
    const char *entry;
    while (dir && (entry = g_dir_read_name(dir))) {
        guint64 tid;
        gboolean vcpu = FALSE;
        if (!g_ascii_string_to_unsigned(entry, 10, 1, G_MAXINT32, &tid, NULL))
            continue;
        for (unsigned v = 0; v < t->nvcpus; v++)
            vcpu |= t->tids[v] == (pid_t)tid;
        if (vcpu)
            continue;
        vpCookieThread th = {
            .tid = (pid_t)tid, .comm = threadComm(proc, t->pid, (pid_t)tid), .vcpu = -1};
        g_array_append_val(p->threads, th);
    }
}

static void
summarize(GArray *threads, bool vcpus, uint64_t *id, bool *all)
{
    bool any = false;

    *id = 0;
    *all = true;
    for (guint i = 0; i < threads->len; i++) {
        const vpCookieThread *th = &g_array_index(threads, vpCookieThread, i);

        if ((th->vcpu >= 0) != vcpus)
            continue;
        any = true;
        if (!th->actual)
            *all = false;
        else if (*id && *id != th->actual)
            *id = VP_COOKIE_MIXED;
        else if (!*id)
            *id = th->actual;
    }
    if (!any || !*id)
        *all = false;
}

gboolean
vpCookieObserve(vpCookieProcess *p, vpCookieDomain *d, GError **error)
{
    g_autoptr(GArray) tids = g_array_new(FALSE, FALSE, sizeof(pid_t));
    bool zero = false, vcpus = false;

    d->seen = VP_COOKIE_NO_THREADS;
    for (guint i = 0; i < p->threads->len;) {
        vpCookieThread *th = &g_array_index(p->threads, vpCookieThread, i);
        uint64_t value = 0;
        vpCoreschedStatus st = vpCoreschedGet(th->tid, &value, error);

        if (st == VP_CORESCHED_GONE) {
            g_clear_error(error);
            g_array_remove_index(p->threads, i);
            continue;
        }
        if (st != VP_CORESCHED_OK)
            return FALSE;
        th->known = true;
        th->actual = value;
        zero |= value == 0;
        vcpus |= th->vcpu >= 0;
        g_array_append_val(tids, th->tid);
        i++;
    }
    if (!vcpus)
        return TRUE;
    summarize(p->threads, true, &d->vcpus, &d->vcpus_all);
    summarize(p->threads, false, &d->others, &d->others_all);
    d->seen = VP_COOKIE_SEEN;
    /* A 0 is "no cookie" or "ids not readable yet": vpCoreschedVerify() tells which. */
    if (zero && vpCoreschedVerify((const pid_t *)tids->data, tids->len, 0, NULL, NULL) ==
                    VP_CORESCHED_PENDING)
        d->seen = VP_COOKIE_PENDING;
    return TRUE;
}

static GArray *
vcpuTids(const vpCookieProcess *p)
{
    GArray *tids = g_array_new(FALSE, FALSE, sizeof(pid_t));

    for (guint i = 0; i < p->threads->len; i++) {
        const vpCookieThread *th = &g_array_index(p->threads, vpCookieThread, i);
        if (th->vcpu >= 0)
            g_array_append_val(tids, th->tid);
    }
    return tids;
}

/* A vCPU thread of from that carries cookie; any of them when 0 (from has just been
 * given a fresh one on all of them). */
static pid_t
sourceThread(const vpCookieProcess *from, uint64_t cookie)
{
    g_autoptr(GArray) tids = vcpuTids(from);

    for (guint i = 0; i < tids->len; i++) {
        pid_t tid = g_array_index(tids, pid_t, i);
        uint64_t value = 0;

        if (!cookie || (vpCoreschedGet(tid, &value, NULL) == VP_CORESCHED_OK && value == cookie))
            return tid;
    }
    return 0;
}

gboolean
vpCookieApply(const vpCookieAction *a, const vpCookieProcess *target, const vpCookieProcess *from,
              GError **error)
{
    g_autoptr(GArray) tids = vcpuTids(target);
    pid_t src;
    guint first = 0;

    if (!tids->len) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "core scheduling: %s has no vCPU thread",
                    a->domain);
        return FALSE;
    }
    if (a->op == VP_COOKIE_CREATE) {
        if (a->scope == VP_COOKIE_SCOPE_PROCESS)
            return vpCoreschedCreate(target->pid, VP_CORESCHED_SCOPE_THREAD_GROUP, error) ==
                   VP_CORESCHED_OK;
        src = g_array_index(tids, pid_t, 0);
        if (vpCoreschedCreate(src, VP_CORESCHED_SCOPE_THREAD, error) != VP_CORESCHED_OK)
            return FALSE;
        first = 1;
    } else {
        src = from ? sourceThread(from, a->cookie) : 0;
        if (!src) {
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                        "core scheduling: no vCPU thread of %s carries the cookie for %s", a->from,
                        a->domain);
            return FALSE;
        }
        if (a->scope == VP_COOKIE_SCOPE_PROCESS)
            return vpCoreschedShare(src, target->pid, VP_CORESCHED_SCOPE_THREAD_GROUP, error) ==
                   VP_CORESCHED_OK;
    }
    for (guint i = first; i < tids->len; i++) {
        pid_t tid = g_array_index(tids, pid_t, i);

        if (tid != src &&
            vpCoreschedShare(src, tid, VP_CORESCHED_SCOPE_THREAD, error) != VP_CORESCHED_OK)
            return FALSE;
    }
    return TRUE;
}
