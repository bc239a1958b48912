/*
 * Per-domain jobs (jobs.h). The table and the condition live under the state lock itself,
 * so that a waiter lets it go while it waits, as the holder does while it calls libvirt.
 */
#include "daemon/jobs.h"
#include "daemon/log.h"

struct _vpJobs {
    GMutex *lock;
    const vpManager *mgr;
    GHashTable *held; /* name -> vpJob */
    GCond freed;
    void (*entered)(const char *name, gpointer data);
    gpointer entered_data;
};

struct _vpJob {
    vpJobs *jobs;
    char *name;
    const char *what;
    gint64 since;
    guint64 serial; /* the domain's record as the lock was let go; 0: none */
    bool current;
};

static guint64
serialOf(const vpJobs *jobs, const char *name)
{
    const vpDomRecord *rec = vpManagerRecord(jobs->mgr, name);
    return rec ? rec->serial : 0;
}

vpJobs *
vpJobsNew(GMutex *lock, const vpManager *mgr)
{
    vpJobs *jobs = g_new0(vpJobs, 1);
    jobs->lock = lock;
    jobs->mgr = mgr;
    jobs->held = g_hash_table_new(g_str_hash, g_str_equal);
    g_cond_init(&jobs->freed);
    return jobs;
}

void
vpJobsFree(vpJobs *jobs)
{
    if (!jobs)
        return;
    g_hash_table_destroy(jobs->held);
    g_cond_clear(&jobs->freed);
    g_free(jobs);
}

void
vpJobsSetEnterFunc(vpJobs *jobs, void (*func)(const char *name, gpointer data), gpointer data)
{
    jobs->entered = func;
    jobs->entered_data = data;
}

/* Waits for name's job to end, until end (monotonic us); FALSE when it still holds. */
static bool
waitFree(vpJobs *jobs, const char *name, gint64 end)
{
    while (g_hash_table_contains(jobs->held, name)) {
        if (!g_cond_wait_until(&jobs->freed, jobs->lock, end))
            return !g_hash_table_contains(jobs->held, name);
    }
    return true;
}

vpJob *
vpJobBegin(vpJobs *jobs, const char *name, const char *what, guint wait_ms, GError **error)
{
    gint64 end = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    if (!waitFree(jobs, name, end)) {
        const vpJob *holder = g_hash_table_lookup(jobs->held, name);
        g_set_error(error, VP_ERROR, VP_ERROR_BUSY,
                    "domain %s: busy with its %s (for %" G_GINT64_FORMAT " ms); %s not done", name,
                    holder->what, (g_get_monotonic_time() - holder->since) / 1000, what);
        return NULL;
    }
    vpJob *job = g_new0(vpJob, 1);
    job->jobs = jobs;
    job->name = g_strdup(name);
    job->what = what;
    job->since = g_get_monotonic_time();
    job->current = true;
    g_hash_table_insert(jobs->held, job->name, job);
    return job;
}

void
vpJobEnd(vpJob *job)
{
    if (!job)
        return;
    g_hash_table_remove(job->jobs->held, job->name);
    g_cond_broadcast(&job->jobs->freed);
    g_free(job->name);
    g_free(job);
}

const char *
vpJobName(const vpJob *job)
{
    return job->name;
}

void
vpJobEnter(vpJob *job)
{
    job->serial = serialOf(job->jobs, job->name);
    g_mutex_unlock(job->jobs->lock);
    if (job->jobs->entered)
        job->jobs->entered(job->name, job->jobs->entered_data);
}

bool
vpJobExit(vpJob *job)
{
    g_mutex_lock(job->jobs->lock);
    if (job->current && serialOf(job->jobs, job->name) != job->serial) {
        job->current = false;
        vpLogDomain(G_LOG_LEVEL_INFO, job->name,
                    "released while its %s waited on libvirt: what it decided is dropped",
                    job->what);
    }
    return job->current;
}

bool
vpJobCurrent(const vpJob *job)
{
    return job->current;
}
