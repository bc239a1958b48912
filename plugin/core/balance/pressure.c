/*
 * The pressure model. Each interval: turn deltas into fractions of wall time, fold them
 * into exponential moving averages, attribute vCPUs to the PUs the ledger pins them to,
 * then score PUs and cores and count how long each condition has lasted. An interval
 * counts towards a hotspot when the average is at or above hot_wait and the interval
 * itself shows the condition (at least cool_wait): the average's echo of a burst that has
 * ended does not count. The streak ends when the average falls below cool_wait and holds
 * in between, so that intermittent contention adds up while a value hovering at one line
 * neither flaps nor restarts its count.
 */
#include "core/balance/pressure.h"
#include "core/model/trust.h"

#include <math.h>
#include <string.h>

typedef struct {
    vpVcpuPressure pub;
    char *domain;
    bool fresh;
    guint64 seen;
    double run_raw; /* newest interval, for the co-run estimate */
} VcpuState;

typedef struct {
    vpPUPressure pub;
    bool fresh;
} PUState;

typedef struct {
    vpCorePressure pub;
    bool fresh;
} CoreState;

struct _vpPressure {
    const vpTopology *topo;
    vpPressureConfig cfg;
    int npus;
    int ncores;
    PUState *pus;
    CoreState *cores;
    GHashTable *vcpus;   /* VcpuState -> itself, keyed by (domain, vcpu) */
    GHashTable *domains; /* domain -> vpDomainPressure */
    guint64 generation;
};

/* Per-PU figures of the newest interval, before smoothing. */
typedef struct {
    double wait, run, forceidle;
    double load;  /* busy fraction */
    double owned; /* part of load that belongs to the PU's holder */
    double host;  /* part of load that belongs to nobody we know */
    int nvcpus;
} PURaw;

void
vpPressureConfigInit(vpPressureConfig *cfg)
{
    cfg->alpha = 0.3;
    cfg->hot_wait = 0.10;
    cfg->cool_wait = 0.05;
    cfg->hot_corun = 0.20;
    cfg->idle_busy = 0.10;
    cfg->persistence = 5;
}

static bool
checkRange(const char *field, double v, double lo, bool lo_open, double hi, GError **error)
{
    if (isnan(v) || v < lo || (lo_open && v == lo) || v > hi) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s=%g is outside %c%g, %g]", field, v,
                    lo_open ? '(' : '[', lo, hi);
        return false;
    }
    return true;
}

bool
vpPressureConfigValidate(const vpPressureConfig *cfg, GError **error)
{
    if (!checkRange("alpha", cfg->alpha, 0, true, 1, error) ||
        !checkRange("hot_wait", cfg->hot_wait, 0, true, 1, error) ||
        !checkRange("cool_wait", cfg->cool_wait, 0, false, 1, error) ||
        !checkRange("hot_corun", cfg->hot_corun, 0, true, 8, error) ||
        !checkRange("idle_busy", cfg->idle_busy, 0, false, 1, error) ||
        !checkRange("persistence", cfg->persistence, 1, false, 3600, error))
        return false;
    if (cfg->cool_wait > cfg->hot_wait) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "cool_wait=%g is above hot_wait=%g; it must not be", cfg->cool_wait,
                    cfg->hot_wait);
        return false;
    }
    return true;
}

/* --- model --- */

static guint
vcpuHash(gconstpointer key)
{
    const VcpuState *st = key;

    return g_str_hash(st->domain) * 31 + (guint)st->pub.vcpu;
}

static gboolean
vcpuEqual(gconstpointer a, gconstpointer b)
{
    const VcpuState *x = a, *y = b;

    return x->pub.vcpu == y->pub.vcpu && strcmp(x->domain, y->domain) == 0;
}

static void
vcpuStateFree(gpointer data)
{
    VcpuState *st = data;

    g_free(st->domain);
    g_free(st);
}

vpPressure *
vpPressureNew(const vpTopology *topo, const vpPressureConfig *cfg)
{
    vpPressure *p = g_new0(vpPressure, 1);

    p->topo = topo;
    if (cfg)
        p->cfg = *cfg;
    else
        vpPressureConfigInit(&p->cfg);
    p->npus = vpTopologyNPUs(topo);
    p->ncores = vpTopologyNCores(topo);
    p->pus = g_new0(PUState, p->npus);
    p->cores = g_new0(CoreState, p->ncores);
    for (int i = 0; i < p->npus; i++)
        p->pus[i].fresh = true;
    for (int i = 0; i < p->ncores; i++)
        p->cores[i].fresh = true;
    p->vcpus = g_hash_table_new_full(vcpuHash, vcpuEqual, vcpuStateFree, NULL);
    p->domains = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return p;
}

void
vpPressureFree(vpPressure *p)
{
    if (!p)
        return;
    g_hash_table_unref(p->vcpus);
    g_hash_table_unref(p->domains);
    g_free(p->pus);
    g_free(p->cores);
    g_free(p);
}

static void
smooth(double *avg, double x, double alpha, bool fresh)
{
    *avg = fresh ? x : *avg + alpha * (x - *avg);
}

static void
smoothIf(double *avg, double x, double alpha, bool fresh, bool present)
{
    if (present)
        smooth(avg, x, alpha, fresh);
    else if (fresh)
        *avg = 0;
}

static double
fraction(guint64 part, guint64 whole)
{
    return whole ? MIN(1.0, (double)part / (double)whole) : 0;
}

static VcpuState *
vcpuLookup(const vpPressure *p, const char *domain, int vcpu)
{
    VcpuState key = {.pub.vcpu = vcpu, .domain = (char *)domain};

    return g_hash_table_lookup(p->vcpus, &key);
}

static int
pinnedPU(const vpPressure *p, const vpLedger *ledger, const char *domain, int vcpu)
{
    const vpPlan *plan = vpLedgerLookup(ledger, domain);

    if (!plan || vcpu < 0 || (unsigned)vcpu >= plan->nvcpus || plan->vcpu_pu[vcpu] < 0)
        return -1;
    return vpTopologyPUByOS(p->topo, plan->vcpu_pu[vcpu]);
}

static void
foldVcpu(vpPressure *p, const vpLedger *ledger, const vpPressureSample *s, PURaw *raw)
{
    VcpuState *st = vcpuLookup(p, s->domain, s->vcpu);
    double secs = s->interval_ns / 1e9;
    double run = 0, wait = 0, wakeups = 0, forceidle = 0;
    double a = p->cfg.alpha;
    int pu;

    if (!st) {
        st = g_new0(VcpuState, 1);
        st->domain = g_strdup(s->domain);
        st->pub.domain = st->domain;
        st->pub.vcpu = s->vcpu;
        st->fresh = true;
        g_hash_table_add(p->vcpus, st);
    }
    if (s->have & VP_HAVE_SCHEDSTAT) {
        run = fraction(s->run_ns, s->interval_ns);
        wait = fraction(s->wait_ns, s->interval_ns);
        st->pub.wait_seconds += s->wait_ns / 1e9;
    }
    if (s->have & VP_HAVE_SWITCHES)
        wakeups = s->voluntary / secs;
    if (s->have & VP_HAVE_FORCEIDLE)
        forceidle = fraction(s->forceidle_ns, s->interval_ns);
    /* a counter this sample lacks (degraded monitor) leaves its average alone */
    smoothIf(&st->pub.run, run, a, st->fresh, s->have & VP_HAVE_SCHEDSTAT);
    smoothIf(&st->pub.wait, wait, a, st->fresh, s->have & VP_HAVE_SCHEDSTAT);
    smoothIf(&st->pub.wakeups, wakeups, a, st->fresh, s->have & VP_HAVE_SWITCHES);
    smoothIf(&st->pub.forceidle, forceidle, a, st->fresh, s->have & VP_HAVE_FORCEIDLE);
    st->pub.last_wait = wait;
    st->pub.have = s->have;
    st->pub.intervals++;
    st->run_raw = run;
    st->seen = p->generation;

    pu = pinnedPU(p, ledger, s->domain, s->vcpu);
    st->pub.pu = pu;
    if (pu >= 0) {
        raw[pu].wait += wait;
        raw[pu].run += run;
        raw[pu].forceidle += forceidle;
        raw[pu].nvcpus++;
    }
}

static gboolean
vcpuUnseen(gpointer key, gpointer value, gpointer data)
{
    const VcpuState *st = key;
    const vpPressure *p = data;

    return st->seen != p->generation;
}

static void
foldPU(vpPressure *p, int pu, const PURaw *raw)
{
    PUState *st = &p->pus[pu];
    const vpPressureConfig *cfg = &p->cfg;
    double a = cfg->alpha;

    smooth(&st->pub.wait, raw->wait, a, st->fresh);
    smooth(&st->pub.run, raw->run, a, st->fresh);
    smooth(&st->pub.busy, raw->load, a, st->fresh);
    smooth(&st->pub.other, raw->host, a, st->fresh);
    st->pub.nvcpus = raw->nvcpus;
    st->fresh = false;

    if (st->pub.wait >= cfg->hot_wait && raw->wait >= cfg->cool_wait)
        st->pub.hot_streak++;
    else if (st->pub.wait < cfg->cool_wait)
        st->pub.hot_streak = 0;

    if (st->pub.busy < cfg->idle_busy)
        st->pub.idle_streak++;
    else
        st->pub.idle_streak = 0;
}

/* Splits a PU's load between its holder and the host, from what the ledger says it is. */
static void
splitLoad(const vpLedger *ledger, int pu, PURaw *raw, bool measured)
{
    vpOwner o = vpLedgerOwner(ledger, pu);

    switch (o.kind) {
    case VP_OWN_VCPU:
        raw->owned = MIN(raw->run, raw->load);
        raw->host = measured ? MAX(0, raw->load - raw->run) : 0;
        break;
    case VP_OWN_EMULATOR:
        raw->owned = raw->load;
        raw->host = 0;
        break;
    default:
        raw->owned = 0;
        raw->host = raw->load;
        break;
    }
}

/* Whether the load of PU b's holder is foreign to PU a's: a stranger or a share domain to it
 * (model/trust.h), whose cookie forces the other idle or whose threads compete with its. Group
 * mates at coresched=vm carry a cookie each: foreign to each other, as the placer has them. */
static bool
foreignLoad(const vpLedger *ledger, int a, int b)
{
    vpOwner oa = vpLedgerOwner(ledger, a), ob = vpLedgerOwner(ledger, b);

    return !oa.domain || !ob.domain ||
           vpTrustHolder(ledger, vpLedgerLookup(ledger, oa.domain), ob.domain) > VP_TRUST_GROUP;
}

/* Load on the siblings of pu that is foreign to pu's holder. */
static double
foreignAround(const vpPressure *p, const vpLedger *ledger, int pu, const PURaw *raw)
{
    const vpCore *core = vpTopologyCore(p->topo, vpTopologyPU(p->topo, pu)->core);
    double f = 0;

    for (int i = 0; i < core->npus; i++) {
        int b = core->pus[i];

        if (b == pu)
            continue;
        f += raw[b].host + (foreignLoad(ledger, pu, b) ? raw[b].owned : 0);
    }
    return f;
}

static void
foldCore(vpPressure *p, const vpLedger *ledger, int c, const PURaw *raw)
{
    const vpCore *core = vpTopologyCore(p->topo, c);
    CoreState *st = &p->cores[c];
    const vpPressureConfig *cfg = &p->cfg;
    double busy = 0, corun = 0, forceidle = 0;

    for (int i = 0; i < core->npus; i++) {
        const PURaw *x = &raw[core->pus[i]];

        busy += x->load;
        forceidle += x->forceidle;
        for (int j = i + 1; j < core->npus; j++) {
            const PURaw *y = &raw[core->pus[j]];
            bool foreign = foreignLoad(ledger, core->pus[i], core->pus[j]);

            /* host load against host load is nobody's business here */
            corun += x->owned * y->host + x->host * y->owned + (foreign ? x->owned * y->owned : 0);
        }
    }
    smooth(&st->pub.busy, busy, cfg->alpha, st->fresh);
    smooth(&st->pub.corun_foreign, corun, cfg->alpha, st->fresh);
    smooth(&st->pub.forceidle, forceidle, cfg->alpha, st->fresh);
    st->fresh = false;

    if (st->pub.corun_foreign + st->pub.forceidle >= cfg->hot_corun &&
        corun + forceidle >= cfg->hot_corun / 2)
        st->pub.contended_streak++;
    else if (st->pub.corun_foreign + st->pub.forceidle < cfg->hot_corun / 2)
        st->pub.contended_streak = 0;
}

static void
foldDomains(vpPressure *p)
{
    GHashTableIter it;
    gpointer key;

    g_hash_table_remove_all(p->domains);
    g_hash_table_iter_init(&it, p->vcpus);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        const VcpuState *st = key;
        vpDomainPressure *d = g_hash_table_lookup(p->domains, st->domain);

        if (!d) {
            d = g_new0(vpDomainPressure, 1);
            g_hash_table_insert(p->domains, g_strdup(st->domain), d);
        }
        d->nvcpus++;
        d->wakeups += st->pub.wakeups;
        d->wait += st->pub.wait;
    }
    g_hash_table_iter_init(&it, p->domains);
    while (g_hash_table_iter_next(&it, NULL, &key)) {
        vpDomainPressure *d = key;

        d->wakeups /= d->nvcpus;
        d->wait /= d->nvcpus;
    }
}

void
vpPressureUpdate(vpPressure *p, const vpLedger *ledger, const vpPressureInput *in)
{
    g_autofree PURaw *raw = g_new0(PURaw, p->npus);
    g_autofree bool *measured = g_new0(bool, p->npus);
    GHashTableIter it;
    gpointer key;

    p->generation++;
    for (guint i = 0; i < in->vcpus->len; i++) {
        const vpPressureSample *s = &g_array_index(in->vcpus, vpPressureSample, i);

        if (s->domain && s->interval_ns > 0)
            foldVcpu(p, ledger, s, raw);
    }
    g_hash_table_foreach_remove(p->vcpus, vcpuUnseen, p);

    for (guint i = 0; i < in->cpus->len; i++) {
        const vpCpuSample *c = &g_array_index(in->cpus, vpCpuSample, i);
        int pu = vpTopologyPUByOS(p->topo, c->cpu);

        if (pu < 0 || c->interval_ns == 0)
            continue;
        raw[pu].load = fraction(c->busy_ns, c->interval_ns);
        measured[pu] = true;
    }
    for (int pu = 0; pu < p->npus; pu++) {
        if (!measured[pu])
            raw[pu].load = MIN(1.0, raw[pu].run);
        splitLoad(ledger, pu, &raw[pu], measured[pu]);
        p->pus[pu].pub.measured = measured[pu];
        foldPU(p, pu, &raw[pu]);
    }
    for (int c = 0; c < p->ncores; c++)
        foldCore(p, ledger, c, raw);

    g_hash_table_iter_init(&it, p->vcpus);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        VcpuState *st = key;
        double corun = 0;

        if (st->pub.pu >= 0)
            corun = st->run_raw * foreignAround(p, ledger, st->pub.pu, raw);
        smooth(&st->pub.corun_foreign, corun, p->cfg.alpha, st->fresh);
        st->fresh = false;
    }
    foldDomains(p);
}

void
vpPressureForgetPU(vpPressure *p, int pu)
{
    int c;

    g_return_if_fail(pu >= 0 && pu < p->npus);
    memset(&p->pus[pu].pub, 0, sizeof(p->pus[pu].pub));
    p->pus[pu].fresh = true;
    c = vpTopologyPU(p->topo, pu)->core;
    memset(&p->cores[c].pub, 0, sizeof(p->cores[c].pub));
    p->cores[c].fresh = true;
}

void
vpPressureForgetVcpu(vpPressure *p, const char *domain, int vcpu)
{
    VcpuState *st = vcpuLookup(p, domain, vcpu);

    if (!st)
        return;
    st->fresh = true;
    st->pub.intervals = 0;
}

const vpPressureConfig *
vpPressureGetConfig(const vpPressure *p)
{
    return &p->cfg;
}

const vpTopology *
vpPressureTopology(const vpPressure *p)
{
    return p->topo;
}

guint64
vpPressureIntervals(const vpPressure *p)
{
    return p->generation;
}

const vpVcpuPressure *
vpPressureVcpu(const vpPressure *p, const char *domain, int vcpu)
{
    VcpuState *st = vcpuLookup(p, domain, vcpu);

    return st ? &st->pub : NULL;
}

static int
vcpuCompare(gconstpointer a, gconstpointer b)
{
    const vpVcpuPressure *x = *(const vpVcpuPressure *const *)a;
    const vpVcpuPressure *y = *(const vpVcpuPressure *const *)b;
    int r = strcmp(x->domain, y->domain);

    return r ? r : (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

GPtrArray *
vpPressureVcpus(const vpPressure *p)
{
    GPtrArray *all = g_ptr_array_sized_new(g_hash_table_size(p->vcpus));
    GHashTableIter it;
    gpointer key;

    g_hash_table_iter_init(&it, p->vcpus);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(all, &((VcpuState *)key)->pub);
    g_ptr_array_sort(all, vcpuCompare);
    return all;
}

const vpPUPressure *
vpPressurePU(const vpPressure *p, int pu)
{
    g_return_val_if_fail(pu >= 0 && pu < p->npus, NULL);
    return &p->pus[pu].pub;
}

const vpCorePressure *
vpPressureCore(const vpPressure *p, int core)
{
    g_return_val_if_fail(core >= 0 && core < p->ncores, NULL);
    return &p->cores[core].pub;
}

const vpDomainPressure *
vpPressureDomain(const vpPressure *p, const char *domain)
{
    return g_hash_table_lookup(p->domains, domain);
}

bool
vpPressurePUHot(const vpPressure *p, int pu)
{
    return vpPressurePU(p, pu)->hot_streak >= p->cfg.persistence;
}

bool
vpPressurePUIdle(const vpPressure *p, int pu)
{
    return vpPressurePU(p, pu)->idle_streak >= p->cfg.persistence;
}

bool
vpPressureCoreContended(const vpPressure *p, int core)
{
    return vpPressureCore(p, core)->contended_streak >= p->cfg.persistence;
}
