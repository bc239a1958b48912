/*
 * Prometheus text format writer. Names are checked (a bad one is a programming error);
 * label values and HELP text are escaped as the format says: backslash, newline, and in
 * label values the double quote.
 */
#include "daemon/metrics.h"
#include "core/place/capacity.h"
#include "core/place/flavor.h"
#include "core/balance/pressure.h"

#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

typedef struct {
    const char *name;
    GString *samples;
} vpFamily;

struct _vpMetrics {
    GArray *families;  /* vpFamily, in declaration order */
    GHashTable *index; /* name -> index + 1 */
};

static void
familyClear(gpointer data)
{
    vpFamily *f = data;
    g_string_free(f->samples, TRUE);
}

vpMetrics *
vpMetricsNew(void)
{
    vpMetrics *m = g_new0(vpMetrics, 1);
    m->families = g_array_new(FALSE, FALSE, sizeof(vpFamily));
    g_array_set_clear_func(m->families, familyClear);
    m->index = g_hash_table_new(g_str_hash, g_str_equal);
    return m;
}

void
vpMetricsFree(vpMetrics *m)
{
    if (!m)
        return;
    g_array_free(m->families, TRUE);
    g_hash_table_destroy(m->index);
    g_free(m);
}

static gboolean
validName(const char *name)
{
    if (!name || !(g_ascii_isalpha(*name) || *name == '_' || *name == ':'))
        return FALSE;
    for (const char *c = name + 1; *c; c++) {
        if (!(g_ascii_isalnum(*c) || *c == '_' || *c == ':'))
            return FALSE;
    }
    return TRUE;
}

/* HELP text: backslash and newline; label values: also the double quote. */
static void
appendEscaped(GString *out, const char *text, gboolean quote)
{
    for (const char *c = text; *c; c++) {
        if (*c == '\\')
            g_string_append(out, "\\\\");
        else if (*c == '\n')
            g_string_append(out, "\\n");
        else if (quote && *c == '"')
            g_string_append(out, "\\\"");
        else
            g_string_append_c(out, *c);
    }
}

void
vpMetricsDeclare(vpMetrics *m, const char *name, const char *type, const char *help)
{
    g_return_if_fail(validName(name));
    g_return_if_fail(g_strcmp0(type, "gauge") == 0 || g_strcmp0(type, "counter") == 0);
    if (g_hash_table_contains(m->index, name))
        return;
    vpFamily f = {name, g_string_new(NULL)};
    g_string_append_printf(f.samples, "# HELP %s ", name);
    appendEscaped(f.samples, help, FALSE);
    g_string_append_printf(f.samples, "\n# TYPE %s %s\n", name, type);
    g_array_append_val(m->families, f);
    g_hash_table_insert(m->index, (gpointer)name, GUINT_TO_POINTER(m->families->len));
}

static void
appendValue(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (isnan(v))
        g_string_append(out, "NaN");
    else if (isinf(v))
        g_string_append(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)v);
    else
        g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.6g", v));
}

void
vpMetricsAdd(vpMetrics *m, const char *name, double value, ...)
{
    guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(m->index, name));
    g_return_if_fail(idx > 0);
    GString *out = g_array_index(m->families, vpFamily, idx - 1).samples;
    va_list ap;
    const char *label;
    gboolean first = TRUE;

    g_string_append(out, name);
    va_start(ap, value);
    while ((label = va_arg(ap, const char *))) {
        const char *v = va_arg(ap, const char *);
        g_warn_if_fail(validName(label) && v);
        g_string_append_printf(out, "%s%s=\"", first ? "{" : ",", label);
        appendEscaped(out, v ? v : "", TRUE);
        g_string_append_c(out, '"');
        first = FALSE;
    }
    va_end(ap);
    g_string_append(out, first ? " " : "} ");
    appendValue(out, value);
    g_string_append_c(out, '\n');
}

char *
vpMetricsText(const vpMetrics *m)
{
    GString *text = g_string_new(NULL);
    for (guint i = 0; i < m->families->len; i++)
        g_string_append(text, g_array_index(m->families, vpFamily, i).samples->str);
    return g_string_free(text, FALSE);
}

/* The unit's UMask=0077 would leave the file root's 0600, which the node exporter (user
 * prometheus on Debian) cannot read: the mode is set after the umask took its share. */
gboolean
vpMetricsWriteFile(const char *path, const char *text, GError **error)
{
    if (!g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, error))
        return FALSE;
    if (g_chmod(path, 0644) == 0)
        return TRUE;
    int e = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "chmod %s: %s", path,
                g_strerror(e));
    return FALSE;
}

/* ---- vcpuplaced's families ------------------------------------------------------------ */

/* Series are keyed by what stays (domain, vCPU, CPU, shape): what changes, such as the CPU a
 * vCPU runs on, is a value, so that a move starts no new series. */

static const char *const refusalNames[VP_REFUSAL_LAST] = {
    [VP_REFUSAL_POLICY] = "policy",
    [VP_REFUSAL_INVALID] = "invalid",
    [VP_REFUSAL_FAILURE] = "failure",
};

const char *
vpRefusalName(vpRefusal r)
{
    return r < VP_REFUSAL_LAST ? refusalNames[r] : NULL;
}

static void
declareFamilies(vpMetrics *m)
{
    vpMetricsDeclare(m, "vcpuplace_vcpu_wait_ratio", "gauge",
                     "Smoothed fraction of wall time the vCPU thread was runnable but waited "
                     "for a CPU");
    vpMetricsDeclare(m, "vcpuplace_vcpu_run_ratio", "gauge",
                     "Smoothed fraction of wall time the vCPU thread ran");
    vpMetricsDeclare(m, "vcpuplace_vcpu_wakeups_per_second", "gauge",
                     "Smoothed wakeups of the vCPU thread per second (its voluntary switches)");
    vpMetricsDeclare(m, "vcpuplace_vcpu_wait_seconds_total", "counter",
                     "Time the vCPU thread was runnable but waited for a CPU (run delay, "
                     "schedstat), measured since vcpuplaced first saw it");
    vpMetricsDeclare(m, "vcpuplace_vcpu_cpu", "gauge",
                     "The host CPU (Linux number) the vCPU's plan pins it to; absent while "
                     "unpinned");
    vpMetricsDeclare(m, "vcpuplace_vcpu_moves_total", "counter",
                     "Moves of the vCPU by the rebalancer since vcpuplaced started");
    vpMetricsDeclare(m, "vcpuplace_domain_wait_ratio", "gauge",
                     "Smoothed wait fraction of the domain's vCPUs, mean");
    vpMetricsDeclare(m, "vcpuplace_domain_info", "gauge",
                     "One per managed domain: its state and the policy it was placed with");
    vpMetricsDeclare(m, "vcpuplace_domain_degraded", "gauge",
                     "1 when the domain's placement relaxed its policy");
    vpMetricsDeclare(m, "vcpuplace_domain_cookie", "gauge",
                     "One per domain the last core-scheduling pass saw: the state of its "
                     "threads' cookies (ok, none, mismatch, failed, unsupported...)");
    vpMetricsDeclare(m, "vcpuplace_cpu_busy_ratio", "gauge", "Smoothed busy fraction of the CPU");
    vpMetricsDeclare(m, "vcpuplace_cpu_wait_ratio", "gauge",
                     "Smoothed sum of the wait fractions of the vCPUs pinned to the CPU");
    vpMetricsDeclare(m, "vcpuplace_cpu_hot", "gauge",
                     "1 while the CPU is a hotspot (hot for the configured persistence)");
    vpMetricsDeclare(m, "vcpuplace_cpu_vcpus", "gauge", "vCPUs the ledger pins to the CPU");
    vpMetricsDeclare(m, "vcpuplace_usable_cpus", "gauge", "CPUs vcpuplace may hand out");
    vpMetricsDeclare(m, "vcpuplace_domains", "gauge", "Managed domains by state");
    vpMetricsDeclare(m, "vcpuplace_monitored_threads", "gauge", "vCPU threads measured");
    vpMetricsDeclare(m, "vcpuplace_intervals_total", "counter", "Intervals measured");
    vpMetricsDeclare(m, "vcpuplace_moves_total", "counter", "vCPU moves committed, by reason");
    vpMetricsDeclare(m, "vcpuplace_move_failures_total", "counter",
                     "Move decisions libvirt did not take, by reason");
    vpMetricsDeclare(m, "vcpuplace_refusals_total", "counter",
                     "Starts the hook's reserve refused, by reason (policy: the placer; "
                     "invalid: the domain XML or metadata; failure: anything else)");
    vpMetricsDeclare(m, "vcpuplace_reloads_total", "counter", "Configuration reloads");
    vpMetricsDeclare(m, "vcpuplace_libvirt_connected", "gauge", "1 while libvirt is connected");
    vpMetricsDeclare(m, "vcpuplace_interval_seconds", "gauge", "Sampling interval");
    vpMetricsDeclare(m, "vcpuplace_tick_seconds", "gauge",
                     "Time the last interval's sampling and pass took");
    vpMetricsDeclare(m, "vcpuplace_build_info", "gauge", "1, labelled with vcpuplaced's version");
    vpMetricsDeclare(m, "vcpuplace_capacity_vms", "gauge",
                     "How many more VMs of the shape (vcpus, smt) the host takes now, by "
                     "repeated placement on a copy of the ledger (as vcpuplace capacity)");
    vpMetricsDeclare(m, "vcpuplace_capacity_node_vms", "gauge",
                     "Of vcpuplace_capacity_vms, those that fit within the NUMA node (Linux "
                     "number)");
    vpMetricsDeclare(m, "vcpuplace_capacity_spanning_vms", "gauge",
                     "Of vcpuplace_capacity_vms, those that fit only over several NUMA nodes");
    vpMetricsDeclare(m, "vcpuplace_capacity_flavor_vms", "gauge",
                     "VMs of each flavor of capacity_flavors (vCPUs, memory, huge pages, policy) "
                     "that still fit on the host, as vcpuplace capacity counts them");
    vpMetricsDeclare(m, "vcpuplace_capacity_flavor_node_vms", "gauge",
                     "Of vcpuplace_capacity_flavor_vms, those that fit within the NUMA node "
                     "(Linux node number)");
    vpMetricsDeclare(m, "vcpuplace_capacity_flavor_spanning_vms", "gauge",
                     "Of vcpuplace_capacity_flavor_vms, those that fit only over several NUMA "
                     "nodes");
}

static void
addVcpus(vpMetrics *m, const vpMetricsSources *src)
{
    const vpPressure *p = vpBalancePressure(src->balance);
    char vcpu[24];

    g_autoptr(GPtrArray) vcpus = vpPressureVcpus(p);
    for (guint i = 0; i < vcpus->len; i++) {
        const vpVcpuPressure *v = vcpus->pdata[i];
        g_snprintf(vcpu, sizeof(vcpu), "%d", v->vcpu);
        vpMetricsAdd(m, "vcpuplace_vcpu_wait_ratio", v->wait, "domain", v->domain, "vcpu", vcpu,
                     NULL);
        vpMetricsAdd(m, "vcpuplace_vcpu_run_ratio", v->run, "domain", v->domain, "vcpu", vcpu,
                     NULL);
        vpMetricsAdd(m, "vcpuplace_vcpu_wakeups_per_second", v->wakeups, "domain", v->domain,
                     "vcpu", vcpu, NULL);
        vpMetricsAdd(m, "vcpuplace_vcpu_wait_seconds_total", v->wait_seconds, "domain", v->domain,
                     "vcpu", vcpu, NULL);
        vpMetricsAdd(m, "vcpuplace_vcpu_moves_total",
                     vpBalanceMoves(src->balance, v->domain, v->vcpu), "domain", v->domain, "vcpu",
                     vcpu, NULL);
    }
}

static void
addDomains(vpMetrics *m, const vpMetricsSources *src)
{
    const vpPressure *p = vpBalancePressure(src->balance);
    g_autoptr(GPtrArray) names = vpManagerNames(src->mgr);
    guint count[VP_DOM_LAST] = {0};
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        const vpDomRecord *rec = vpManagerRecord(src->mgr, name);
        const vpPlan *plan = vpManagerPlan(src->mgr, name);
        const vpDomainPressure *dp = vpPressureDomain(p, name);
        count[rec->state]++;
        if (dp)
            vpMetricsAdd(m, "vcpuplace_domain_wait_ratio", dp->wait, "domain", name, NULL);
        vpMetricsAdd(m, "vcpuplace_domain_info", 1, "domain", name, "state",
                     vpDomStateName(rec->state), "smt", plan ? vpSmtName(plan->policy.smt) : "",
                     "coresched", plan ? vpCoreschedName(plan->policy.coresched) : "", "rebalance",
                     plan ? vpRebalanceName(plan->policy.rebalance) : "", NULL);
        vpMetricsAdd(m, "vcpuplace_domain_degraded", plan && plan->degraded, "domain", name, NULL);
        for (unsigned v = 0; plan && v < plan->nvcpus; v++) {
            char vcpu[24];

            if (plan->vcpu_pu[v] < 0)
                continue;
            g_snprintf(vcpu, sizeof(vcpu), "%u", v);
            vpMetricsAdd(m, "vcpuplace_vcpu_cpu", plan->vcpu_pu[v], "domain", name, "vcpu", vcpu,
                         NULL);
        }
        const char *cstate = vpCookiesDomainState(src->cookies, name);
        if (cstate)
            vpMetricsAdd(m, "vcpuplace_domain_cookie", 1, "domain", name, "state", cstate, NULL);
    }
    for (int s = 0; s < VP_DOM_LAST; s++)
        vpMetricsAdd(m, "vcpuplace_domains", count[s], "state", vpDomStateName(s), NULL);
}

static void
addCpus(vpMetrics *m, const vpMetricsSources *src)
{
    const vpTopology *topo = vpManagerTopology(src->mgr);
    const vpLedger *ledger = vpManagerLedger(src->mgr);
    const vpPressure *p = vpBalancePressure(src->balance);
    char cpu[24];

    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        const vpPUPressure *pp = vpPressurePU(p, pu);
        g_snprintf(cpu, sizeof(cpu), "%u", vpTopologyPU(topo, pu)->os);
        vpMetricsAdd(m, "vcpuplace_cpu_busy_ratio", pp->busy, "cpu", cpu, NULL);
        vpMetricsAdd(m, "vcpuplace_cpu_wait_ratio", pp->wait, "cpu", cpu, NULL);
        vpMetricsAdd(m, "vcpuplace_cpu_hot", vpPressurePUHot(p, pu), "cpu", cpu, NULL);
        vpMetricsAdd(m, "vcpuplace_cpu_vcpus",
                     vpLedgerNOwners(ledger, pu) * (vpLedgerOwner(ledger, pu).kind == VP_OWN_VCPU),
                     "cpu", cpu, NULL);
    }
}

/* The daemon's own figures: failed ledger saves and the socket's refusals. */
static void
addDaemon(vpMetrics *m, const vpMetricsSources *src)
{
    const vpServerStats *st = &src->socket;

    vpMetricsDeclare(m, "vcpuplace_ledger_save_failures", "gauge",
                     "Consecutive failed ledger saves (retried with backoff); 0 once one works");
    vpMetricsAdd(m, "vcpuplace_ledger_save_failures", src->save_failures, NULL);
    vpMetricsDeclare(m, "vcpuplace_config_last_reload_successful", "gauge",
                     "0 while the configuration file is refused and the daemon runs on its last "
                     "good one (vcpuplace status says why)");
    vpMetricsAdd(m, "vcpuplace_config_last_reload_successful", !src->config_error, NULL);
    vpMetricsDeclare(m, "vcpuplace_enforcing", "gauge",
                     "1 in [daemon] mode=enforce, 0 in mode=report (nothing pinned or refused)");
    vpMetricsAdd(m, "vcpuplace_enforcing", src->cfg->mode == VP_MODE_ENFORCE, NULL);
    vpMetricsDeclare(m, "vcpuplace_reported_domains", "gauge",
                     "Running domains reported, not placed (mode=report, or adopt_running=no)");
    vpMetricsAdd(m, "vcpuplace_reported_domains", src->reported, NULL);
    vpMetricsDeclare(m, "vcpuplace_socket_refused_total", "counter",
                     "Connections to the socket refused, by reason");
    vpMetricsAdd(m, "vcpuplace_socket_refused_total", st->refused_full, "reason", "full", NULL);
    vpMetricsAdd(m, "vcpuplace_socket_refused_total", st->refused_peer, "reason", "peer", NULL);
    vpMetricsAdd(m, "vcpuplace_socket_refused_total", st->refused_long, "reason", "too_long", NULL);
    vpMetricsDeclare(m, "vcpuplace_socket_idle_closed_total", "counter",
                     "Connections closed by the idle timeout");
    vpMetricsAdd(m, "vcpuplace_socket_idle_closed_total", st->closed_idle, NULL);
}

struct _vpCapacityCache {
    /* What the figures were computed from: the ledger's generation (a ledger is bound to
     * its topology, and a reload makes a new ledger, so the topology is covered too), the
     * defaults a request without a policy gets, and the vCPU counts. */
    guint64 generation;
    char *inputs;
    vpCapacity *cap;
    guint64 computations;
};

vpCapacityCache *
vpCapacityCacheNew(void)
{
    return g_new0(vpCapacityCache, 1);
}

void
vpCapacityCacheFree(vpCapacityCache *cache)
{
    if (!cache)
        return;
    g_free(cache->inputs);
    vpCapacityFree(cache->cap);
    g_free(cache);
}

struct _vpCapacityJob {
    guint64 generation; /* of the ledger copied */
    char *inputs;
    const vpTopology *topo;
    vpLedger *ledger; /* the copy the placements run on */
    vpPolicy defaults;
    GArray *flavors; /* the shapes of the counts, then the configuration's flavors */
    vpCapacity *cap; /* once run */
};

void
vpCapacityJobFree(vpCapacityJob *job)
{
    if (!job)
        return;
    g_free(job->inputs);
    vpLedgerFree(job->ledger);
    vpPolicyClear(&job->defaults);
    if (job->flavors)
        g_array_unref(job->flavors);
    vpCapacityFree(job->cap);
    g_free(job);
}

vpCapacityJob *
vpCapacityCacheBegin(const vpCapacityCache *cache, const vpTopology *topo, const vpLedger *ledger,
                     const vpPolicy *defaults, const char *shapes, const char *flavors,
                     GError **error)
{
    g_autoptr(vpCapacityJob) job = g_new0(vpCapacityJob, 1);
    g_autoptr(GArray) counts = NULL;

    job->generation = vpLedgerGeneration(ledger);
    job->inputs =
        g_strdup_printf("%s|%s %s %s %s %s %s %s", shapes, flavors ? flavors : "",
                        vpSmtName(defaults->smt), defaults->group ? defaults->group : "",
                        vpCoreschedName(defaults->coresched), vpLocalityName(defaults->locality),
                        vpEmulatorName(defaults->emulator), vpRebalanceName(defaults->rebalance));
    if (cache->cap && cache->generation == job->generation &&
        strcmp(cache->inputs, job->inputs) == 0)
        return NULL;
    job->flavors = vpFlavorArrayNew();
    if (!(counts = vpCapacityParseVcpus(shapes, error)))
        return NULL;
    vpCapacityCountFlavors(job->flavors, counts, defaults);
    if ((flavors &&
         !vpFlavorParseList("capacity_flavors", flavors, defaults, job->flavors, error)) ||
        !(job->ledger = vpLedgerCopy(ledger, topo, error)))
        return NULL;
    job->topo = topo;
    vpPolicyCopy(&job->defaults, defaults);
    return g_steal_pointer(&job);
}

gboolean
vpCapacityJobRun(vpCapacityJob *job, GError **error)
{
    job->cap = vpCapacityComputeFlavors(job->topo, job->ledger, job->flavors, error);
    return job->cap != NULL;
}

const vpCapacity *
vpCapacityCacheFinish(vpCapacityCache *cache, vpCapacityJob *job)
{
    vpCapacityFree(cache->cap);
    cache->cap = g_steal_pointer(&job->cap);
    cache->generation = job->generation;
    g_free(cache->inputs);
    cache->inputs = g_steal_pointer(&job->inputs);
    cache->computations++;
    vpCapacityJobFree(job);
    return cache->cap;
}

const vpCapacity *
vpCapacityCacheGet(vpCapacityCache *cache, const vpTopology *topo, const vpLedger *ledger,
                   const vpPolicy *defaults, const char *shapes, const char *flavors, GMutex *lock,
                   GError **error)
{
    GError *local = NULL;
    g_autoptr(vpCapacityJob) job =
        vpCapacityCacheBegin(cache, topo, ledger, defaults, shapes, flavors, &local);
    gboolean ran;

    if (!job) {
        if (!local)
            return cache->cap;
        g_propagate_error(error, local);
        return NULL;
    }
    if (lock)
        g_mutex_unlock(lock);
    ran = vpCapacityJobRun(job, error);
    if (lock)
        g_mutex_lock(lock);
    return ran ? vpCapacityCacheFinish(cache, g_steal_pointer(&job)) : NULL;
}

guint64
vpCapacityCacheComputations(const vpCapacityCache *cache)
{
    return cache->computations;
}

static void
addShapeCapacity(vpMetrics *m, const vpTopology *topo, const vpCapacity *cap,
                 const vpCapacityShape *s)
{
    char vcpus[24], numa[24];

    g_snprintf(vcpus, sizeof(vcpus), "%u", s->vcpus);
    vpMetricsAdd(m, "vcpuplace_capacity_vms", s->host, "vcpus", vcpus, "smt", vpSmtName(s->smt),
                 NULL);
    vpMetricsAdd(m, "vcpuplace_capacity_spanning_vms", s->spanning, "vcpus", vcpus, "smt",
                 vpSmtName(s->smt), NULL);
    for (int n = 0; n < cap->nnodes; n++) {
        const vpGroup *g = vpTopologyGroup(topo, VP_LEVEL_NUMA, n);

        if (g->made_up)
            continue;
        g_snprintf(numa, sizeof(numa), "%u", g->os);
        vpMetricsAdd(m, "vcpuplace_capacity_node_vms", s->nodes[n], "vcpus", vcpus, "smt",
                     vpSmtName(s->smt), "numa", numa, NULL);
    }
}

/* A flavor's series are keyed by its name alone: its vCPUs, memory and policy are the
 * configuration's to say. */
static void
addFlavorCapacity(vpMetrics *m, const vpTopology *topo, const vpCapacity *cap,
                  const vpCapacityShape *s)
{
    char numa[24];

    vpMetricsAdd(m, "vcpuplace_capacity_flavor_vms", s->host, "flavor", s->flavor, NULL);
    vpMetricsAdd(m, "vcpuplace_capacity_flavor_spanning_vms", s->spanning, "flavor", s->flavor,
                 NULL);
    for (int n = 0; n < cap->nnodes; n++) {
        const vpGroup *g = vpTopologyGroup(topo, VP_LEVEL_NUMA, n);

        if (g->made_up)
            continue;
        g_snprintf(numa, sizeof(numa), "%u", g->os);
        vpMetricsAdd(m, "vcpuplace_capacity_flavor_node_vms", s->nodes[n], "flavor", s->flavor,
                     "numa", numa, NULL);
    }
}

/* The capacity gauges, from core/place/capacity.c as `vcpuplace capacity` computes them, for the
 * configuration's vCPU counts ([daemon] capacity_vcpus) and flavors (capacity_flavors). A failure
 * leaves the family without samples and is logged. */
static void
addCapacity(vpMetrics *m, const vpMetricsSources *src)
{
    const vpTopology *topo = vpManagerTopology(src->mgr);
    g_autoptr(vpCapacityCache) once = src->capacity ? NULL : vpCapacityCacheNew();
    const char *shapes =
        src->cfg && src->cfg->capacity_vcpus ? src->cfg->capacity_vcpus : VP_CAPACITY_DEFAULT_VCPUS;
    g_autoptr(GError) err = NULL;
    const vpCapacity *cap =
        vpCapacityCacheGet(src->capacity ? src->capacity : once, topo, vpManagerLedger(src->mgr),
                           vpManagerDefaults(src->mgr), shapes,
                           src->cfg ? src->cfg->capacity_flavors : NULL, src->lock, &err);

    if (!cap) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "VCPUPLACE_EVENT", "metrics", "MESSAGE",
                         "capacity gauges not computed: %s", err->message);
        return;
    }
    for (guint i = 0; i < cap->nshapes; i++) {
        const vpCapacityShape *s = &cap->shapes[i];

        if (s->flavor)
            addFlavorCapacity(m, topo, cap, s);
        else
            addShapeCapacity(m, topo, cap, s);
    }
}

char *
vpMetricsCollect(const vpMetricsSources *src)
{
    g_autoptr(vpMetrics) m = vpMetricsNew();
    const vpTopology *topo = vpManagerTopology(src->mgr);
    vpBalanceFigures fig = vpBalanceGetFigures(src->balance);

    declareFamilies(m);
    addVcpus(m, src);
    addDomains(m, src);
    addCpus(m, src);
    vpMetricsAdd(m, "vcpuplace_usable_cpus", hwloc_bitmap_weight(vpTopologyUsableSet(topo)), NULL);
    vpMetricsAdd(m, "vcpuplace_monitored_threads", fig.monitored, NULL);
    vpMetricsAdd(m, "vcpuplace_intervals_total", fig.intervals, NULL);
    vpMetricsAdd(m, "vcpuplace_moves_total", fig.moves_total, "reason", "rebalance", NULL);
    vpMetricsAdd(m, "vcpuplace_move_failures_total", fig.failed_total, "reason", "rebalance", NULL);
    vpMetricsAdd(m, "vcpuplace_moves_total", src->admission_moves, "reason", "admission", NULL);
    vpMetricsAdd(m, "vcpuplace_move_failures_total", src->admission_failures, "reason", "admission",
                 NULL);
    for (int r = 0; r < VP_REFUSAL_LAST; r++)
        vpMetricsAdd(m, "vcpuplace_refusals_total", src->refusals ? src->refusals[r] : 0, "reason",
                     vpRefusalName(r), NULL);
    vpMetricsAdd(m, "vcpuplace_reloads_total", fig.reloads, NULL);
    vpMetricsAdd(m, "vcpuplace_libvirt_connected", src->connected, NULL);
    vpMetricsAdd(m, "vcpuplace_interval_seconds", src->cfg->interval_ms / 1000.0, NULL);
    vpMetricsAdd(m, "vcpuplace_tick_seconds", fig.tick_us / 1e6, NULL);
    vpMetricsAdd(m, "vcpuplace_build_info", 1, "version", PROJECT_VERSION, NULL);
    addCapacity(m, src);
    addDaemon(m, src);
    return vpMetricsText(m);
}

void
vpMetricsExport(const vpMetricsSources *src, gboolean *warned)
{
    const char *path = src->cfg->metrics_textfile;
    if (!path)
        return;
    g_autofree char *text = vpMetricsCollect(src);
    g_autoptr(GError) err = NULL;
    if (!vpMetricsWriteFile(path, text, &err)) {
        if (!*warned)
            g_log_structured(
                G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "VCPUPLACE_EVENT", "metrics", "MESSAGE",
                "cannot write the metrics textfile (said once until it works): %s", err->message);
        *warned = TRUE;
        return;
    }
    *warned = FALSE;
}
