/*
 * The daemon's cookie passes: observe, decide (core/place/cookieplan.h), act, observe again.
 *
 * A pass covers every running domain at once, because a trust group's cookie and the rule
 * "no two untrusted VMs share a cookie" are about several domains together. Threads are
 * found the way libvirt starts QEMU (host/threads.h: pidfile, thread names), so a driver
 * without QEMU processes (the test driver) has no threads to cookie. Cookie ids read 0
 * until the kernel's random pool is ready: such domains are "pending" and the pass is
 * retried a bounded number of times; failures too.
 */
#include "daemon/cookies.h"
#include "daemon/log.h"
#include "core/place/cookieplan.h"
#include "host/cookieapply.h"
#include "libvirt/domxml.h"

#include <libvirt/virterror.h>
#include <string.h>

#define VP_COOKIE_PENDING_RETRY_MS 500
#define VP_COOKIE_PENDING_TRIES 20
#define VP_COOKIE_FAILED_RETRY_MS 1000
#define VP_COOKIE_FAILED_TRIES 3

/* One domain as the last pass saw it. */
typedef struct {
    char *name;
    vpCoresched coresched;
    char *group;
    gboolean emulator_own;
    vpCookieProcess proc; /* pid 0: no QEMU process found */
    vpCookieDomain in;    /* what the last observation saw */
    char *set;
    vpCookieScope scope;
    vpCookieState state;
    uint64_t cookie;
    gboolean kept;
    char *error;  /* what failed: observing, acting, or the check afterwards */
    char *logged; /* the last outcome logged, so that a steady state is logged once */
} vpDomCookies;

struct _vpCookies {
    GMutex *lock;
    const vpConfig *cfg;
    vpManager *mgr;
    vpVirConn *vc;
    vpCoreschedStatus kernel;
    char *kernel_reason;
    vpSchedCore libvirt;
    char *qemu_conf_error; /* last qemu.conf problem logged */
    GHashTable *doms;      /* name -> vpDomCookies */
    guint idle_id;
    guint retry_id;
    guint pending_tries;
    guint failed_tries;
};

static void
domFree(gpointer data)
{
    vpDomCookies *dc = data;
    g_free(dc->name);
    g_free(dc->group);
    if (dc->proc.threads)
        g_array_free(dc->proc.threads, TRUE);
    g_free(dc->set);
    g_free(dc->error);
    g_free(dc->logged);
    g_free(dc);
}

static char *
hexId(uint64_t id)
{
    return g_strdup_printf("%#" G_GINT64_MODIFIER "x", (guint64)id);
}

/* ---- observing ------------------------------------------------------------------------ */

static void
readQemuConf(vpCookies *c)
{
    const char *path = c->cfg->qemu_conf;
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    vpSchedCore mode = VP_SCHED_CORE_NONE;

    if (!g_file_get_contents(path, &text, &len, &err)) {
        if (g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            /* no file: libvirt runs on its defaults, sched_core none */
            c->libvirt = VP_SCHED_CORE_NONE;
            g_clear_pointer(&c->qemu_conf_error, g_free);
            return;
        }
        mode = VP_SCHED_CORE_UNKNOWN;
    } else if (!vpSchedCoreParse(text, len, path, &mode, &err)) {
        mode = VP_SCHED_CORE_UNKNOWN;
    }
    c->libvirt = mode;
    if (mode != VP_SCHED_CORE_UNKNOWN) {
        g_clear_pointer(&c->qemu_conf_error, g_free);
        return;
    }
    if (g_strcmp0(c->qemu_conf_error, err->message) != 0)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "libvirt's sched_core unknown (%s): going by the cookies QEMU threads "
                         "carry",
                         err->message);
    g_free(c->qemu_conf_error);
    c->qemu_conf_error = g_strdup(err->message);
}

/* The domain's policy: from its plan, or, for a running domain vcpuplace could not place,
 * from its XML. */
static gboolean
domPolicy(vpCookies *c, const char *name, vpDomCookies *dc)
{
    const vpPlan *plan = vpManagerPlan(c->mgr, name);
    virConnectPtr conn = vpVirConnGet(c->vc);

    if (plan) {
        g_autoptr(vpBitmap) held = vpPlanHeld(plan);
        dc->coresched = plan->policy.coresched;
        dc->group = g_strdup(plan->policy.group);
        dc->emulator_own =
            !hwloc_bitmap_iszero(plan->emulator) && hwloc_bitmap_isincluded(plan->emulator, held);
        return TRUE;
    }
    if (!conn)
        return FALSE;
    g_mutex_unlock(c->lock);
    virDomainPtr dom = virDomainLookupByName(conn, name);
    g_autofree char *xml = dom ? virDomainGetXMLDesc(dom, 0) : NULL;
    if (dom)
        virDomainFree(dom);
    g_mutex_lock(c->lock);
    if (!xml)
        return FALSE;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(c->mgr), &err);
    if (!req)
        return FALSE;
    dc->coresched = req->policy.coresched;
    dc->group = g_strdup(req->policy.group);
    return TRUE;
}

/* Reads each thread's cookie; a refusal by the kernel is the domain's error. */
static void
observe(vpCookies *c, vpDomCookies *dc)
{
    g_autoptr(GError) err = NULL;

    g_clear_pointer(&dc->error, g_free);
    memset(&dc->in, 0, sizeof(dc->in));
    dc->in.seen = VP_COOKIE_NO_THREADS;
    if (c->kernel == VP_CORESCHED_OK && !vpCookieObserve(&dc->proc, &dc->in, &err)) {
        dc->in.seen = VP_COOKIE_NO_THREADS;
        dc->error = g_strdup(err->message);
    }
}

static gboolean
act(vpCookies *c, const vpCookieAction *a, GError **error)
{
    const vpDomCookies *dc = g_hash_table_lookup(c->doms, a->domain);
    const vpDomCookies *from = a->from ? g_hash_table_lookup(c->doms, a->from) : NULL;

    return vpCookieApply(a, &dc->proc, from ? &from->proc : NULL, error);
}

/* ---- a pass ------------------------------------------------------------------------------ */

static void
decideAll(vpCookies *c, GPtrArray *names, vpCookiePlan **out)
{
    g_autofree vpCookieDomain *in = g_new0(vpCookieDomain, MAX(names->len, 1));
    for (guint i = 0; i < names->len; i++) {
        vpDomCookies *dc = g_hash_table_lookup(c->doms, names->pdata[i]);
        vpCookieDomain *d = &in[i];
        *d = dc->in;
        d->name = dc->name;
        d->coresched = dc->coresched;
        d->group = dc->group;
        d->emulator_own = dc->emulator_own;
    }
    vpCookieEnv env = {c->kernel == VP_CORESCHED_OK, c->libvirt};
    *out = vpCookiePlanDecide(in, names->len, &env);
}

static void
record(vpCookies *c, GPtrArray *names, const vpCookiePlan *plan)
{
    for (guint i = 0; i < names->len; i++) {
        vpDomCookies *dc = g_hash_table_lookup(c->doms, names->pdata[i]);
        const vpCookieExpect *e = &g_array_index(plan->expect, vpCookieExpect, i);
        g_free(dc->set);
        dc->set = g_strdup(e->set);
        dc->scope = e->scope;
        dc->state = e->state;
        dc->cookie = e->cookie;
        dc->kept = e->kept;
    }
}

static const char *
outcome(const vpDomCookies *dc)
{
    return dc->error ? "failed" : vpCookieStateName(dc->state);
}

static void
logOutcome(vpCookies *c, vpDomCookies *dc)
{
    g_autofree char *id = hexId(dc->cookie);
    g_autofree char *line = NULL;
    GLogLevelFlags level = G_LOG_LEVEL_INFO;

    if (c->kernel != VP_CORESCHED_OK)
        return; /* said once, at start */
    if (dc->error) {
        line = g_strdup_printf("cookie %s on its %s threads failed: %s", dc->set ? dc->set : "-",
                               vpCookieScopeName(dc->scope), dc->error);
        level = G_LOG_LEVEL_WARNING;
    } else if (dc->state == VP_COOKIE_STATE_OK && dc->set) {
        line = g_strdup_printf("cookie %s (%s) on its %s threads", id, dc->set,
                               vpCookieScopeName(dc->scope));
    } else if (dc->state == VP_COOKIE_STATE_PENDING) {
        line = g_strdup("cookie ids read 0: the kernel's random pool is not ready; retrying");
    } else {
        return;
    }
    if (g_strcmp0(dc->logged, line) == 0)
        return;
    vpLogDomain(level, dc->name, "%s", line);
    g_free(dc->logged);
    dc->logged = g_steal_pointer(&line);
}

static gboolean retryTimeout(gpointer data);

static void
scheduleRetry(vpCookies *c, guint delay_ms)
{
    if (!c->retry_id)
        c->retry_id = g_timeout_add(delay_ms, retryTimeout, c);
}

/* The running domains of the manager, sorted; the map keeps only them. */
static GPtrArray *
collect(vpCookies *c)
{
    vpManager *mgr = c->mgr;
    g_autoptr(GPtrArray) all = vpManagerNames(mgr);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) keep = g_hash_table_new(g_str_hash, g_str_equal);

    for (guint i = 0; i < all->len; i++) {
        const char *name = all->pdata[i];
        const vpDomRecord *rec = vpManagerRecord(mgr, name);
        if (!rec || rec->state == VP_DOM_RESERVED)
            continue; /* released meanwhile, or QEMU is not there yet */
        vpDomCookies *dc = g_new0(vpDomCookies, 1);
        dc->name = g_strdup(name);
        /* domPolicy lets the state lock go: the domain may be released meanwhile. */
        if (!domPolicy(c, name, dc) || !vpManagerRecord(mgr, name)) {
            domFree(dc);
            continue;
        }
        vpDomCookies *old = g_hash_table_lookup(c->doms, name);
        if (old)
            dc->logged = g_steal_pointer(&old->logged);
        vpCookieProcessFind(&dc->proc, vpConfigQemuRunDir(c->cfg), "/proc", name);
        g_hash_table_replace(c->doms, dc->name, dc);
        g_hash_table_add(keep, dc->name);
        g_ptr_array_add(names, g_strdup(name));
    }
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, c->doms);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (!g_hash_table_contains(keep, key))
            g_hash_table_iter_remove(&it);
    }
    return names;
}

static void
pass(vpCookies *c)
{
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(vpCookiePlan) plan = NULL;
    gboolean pending = FALSE, failed = FALSE;

    readQemuConf(c);
    names = collect(c);
    for (guint i = 0; i < names->len; i++)
        observe(c, g_hash_table_lookup(c->doms, names->pdata[i]));
    decideAll(c, names, &plan);

    if (plan->actions->len) {
        for (guint i = 0; i < plan->actions->len; i++) {
            const vpCookieAction *a = &g_array_index(plan->actions, vpCookieAction, i);
            g_autoptr(GError) err = NULL;
            if (!act(c, a, &err)) {
                vpDomCookies *dc = g_hash_table_lookup(c->doms, a->domain);
                g_free(dc->error);
                dc->error = g_strdup(err->message);
            }
        }
        /* What was done is read back: the record is what the kernel says now. */
        g_autoptr(GHashTable) errors = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
        for (guint i = 0; i < names->len; i++) {
            vpDomCookies *dc = g_hash_table_lookup(c->doms, names->pdata[i]);
            if (dc->error)
                g_hash_table_insert(errors, dc->name, g_steal_pointer(&dc->error));
            observe(c, dc);
        }
        g_clear_pointer(&plan, vpCookiePlanFree);
        decideAll(c, names, &plan);
        for (guint i = 0; i < names->len; i++) {
            vpDomCookies *dc = g_hash_table_lookup(c->doms, names->pdata[i]);
            const vpCookieExpect *e = &g_array_index(plan->expect, vpCookieExpect, i);
            char *why = g_hash_table_lookup(errors, dc->name);
            if (e->state != VP_COOKIE_STATE_APPLY || dc->error)
                continue;
            dc->error =
                why ? g_strdup(why) : g_strdup("the threads' cookies still differ after applying");
        }
    }
    record(c, names, plan);
    for (guint i = 0; i < names->len; i++) {
        vpDomCookies *dc = g_hash_table_lookup(c->doms, names->pdata[i]);
        pending |= dc->state == VP_COOKIE_STATE_PENDING;
        failed |= dc->error != NULL;
        logOutcome(c, dc);
    }

    if (pending && c->pending_tries < VP_COOKIE_PENDING_TRIES) {
        c->pending_tries++;
        scheduleRetry(c, VP_COOKIE_PENDING_RETRY_MS);
    } else if (failed && c->failed_tries < VP_COOKIE_FAILED_TRIES) {
        c->failed_tries++;
        scheduleRetry(c, VP_COOKIE_FAILED_RETRY_MS);
    }
    if (!pending)
        c->pending_tries = 0;
    if (!failed)
        c->failed_tries = 0;
}

static gboolean
passIdle(gpointer data)
{
    vpCookies *c = data;
    c->idle_id = 0;
    pass(c);
    return G_SOURCE_REMOVE;
}

static gboolean
retryTimeout(gpointer data)
{
    vpCookies *c = data;
    c->retry_id = 0;
    pass(c);
    return G_SOURCE_REMOVE;
}

void
vpCookiesKick(vpCookies *c)
{
    c->pending_tries = 0;
    c->failed_tries = 0;
    if (!c->idle_id)
        c->idle_id = g_idle_add(passIdle, c);
}

gboolean
vpCookiesBusy(const vpCookies *c)
{
    return c->idle_id || c->retry_id;
}

vpCookies *
vpCookiesNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpVirConn *vc)
{
    vpCookies *c = g_new0(vpCookies, 1);
    g_autoptr(GError) err = NULL;

    c->lock = lock;
    c->cfg = cfg;
    c->mgr = mgr;
    c->vc = vc;
    c->doms = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, domFree);
    c->kernel = vpCoreschedProbe(&err);
    if (c->kernel != VP_CORESCHED_OK) {
        c->kernel_reason = g_strdup(err->message);
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "core scheduling is not available, so no VM gets a cookie: %s. vCPUs "
                         "are placed and pinned as usual; `vcpuplace status` shows each "
                         "thread's cookie as '%s'",
                         err->message, vpCoreschedStatusName(c->kernel));
    }
    return c;
}

void
vpCookiesSetConfig(vpCookies *c, const vpConfig *cfg)
{
    c->cfg = cfg;
}

void
vpCookiesFree(vpCookies *c)
{
    if (!c)
        return;
    if (c->idle_id)
        g_source_remove(c->idle_id);
    if (c->retry_id)
        g_source_remove(c->retry_id);
    g_hash_table_destroy(c->doms);
    g_free(c->kernel_reason);
    g_free(c->qemu_conf_error);
    g_free(c);
}

/* json_node_init_object() takes a reference of its own: ours goes. */
static JsonNode *
nodeTaking(JsonObject *o)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), o);
    json_object_unref(o);
    return node;
}

/* ---- status ------------------------------------------------------------------------------ */

static void
setStr(JsonObject *o, const char *member, const char *value)
{
    if (value)
        json_object_set_string_member(o, member, value);
    else
        json_object_set_null_member(o, member);
}

JsonNode *
vpCookiesSummaryJson(const vpCookies *c)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "kernel", vpCoreschedStatusName(c->kernel));
    setStr(o, "kernel_reason", c->kernel_reason);
    json_object_set_string_member(o, "qemu_conf", c->cfg->qemu_conf);
    json_object_set_string_member(o, "libvirt_sched_core", vpSchedCoreName(c->libvirt));
    setStr(o, "qemu_conf_error", c->qemu_conf_error);
    return nodeTaking(o);
}

/* Per thread: what it should carry and what it does. Threads outside the scope, and every
 * thread of a domain that wants no cookie, are vcpuplace's to leave alone. */
static JsonNode *
threadJson(const vpCookies *c, const vpDomCookies *dc, const vpCookieThread *th)
{
    JsonObject *o = json_object_new();
    gboolean in_scope = dc->set && (th->vcpu >= 0 || dc->scope == VP_COOKIE_SCOPE_PROCESS);
    const char *state;

    json_object_set_int_member(o, "tid", th->tid);
    setStr(o, "name", th->comm);
    if (th->vcpu >= 0)
        json_object_set_int_member(o, "vcpu", th->vcpu);
    else
        json_object_set_null_member(o, "vcpu");
    setStr(o, "expected", in_scope ? dc->set : NULL);
    if (in_scope && dc->cookie) {
        g_autofree char *id = hexId(dc->cookie);
        json_object_set_string_member(o, "expected_id", id);
    } else {
        json_object_set_null_member(o, "expected_id");
    }
    if (th->known) {
        g_autofree char *id = hexId(th->actual);
        json_object_set_string_member(o, "actual", id);
    } else {
        json_object_set_null_member(o, "actual");
    }
    if (c->kernel != VP_CORESCHED_OK)
        state = vpCoreschedStatusName(c->kernel);
    else if (!in_scope)
        state = "untouched";
    else if (dc->state == VP_COOKIE_STATE_PENDING || !th->known)
        state = "pending";
    else if (dc->cookie && th->actual == dc->cookie)
        state = "ok";
    else
        state = "mismatch";
    json_object_set_string_member(o, "state", state);
    return nodeTaking(o);
}

const char *
vpCookiesDomainState(const vpCookies *c, const char *name)
{
    const vpDomCookies *dc = g_hash_table_lookup(c->doms, name);
    if (!dc)
        return NULL;
    return c->kernel != VP_CORESCHED_OK                  ? vpCoreschedStatusName(c->kernel)
           : !dc->set && dc->state == VP_COOKIE_STATE_OK ? "none"
                                                         : outcome(dc);
}

JsonNode *
vpCookiesDomainJson(const vpCookies *c, const char *name)
{
    const vpDomCookies *dc = g_hash_table_lookup(c->doms, name);
    if (!dc)
        return NULL;
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "state", vpCookiesDomainState(c, name));
    setStr(o, "reason", c->kernel != VP_CORESCHED_OK ? c->kernel_reason : dc->error);
    json_object_set_string_member(o, "policy", vpCoreschedName(dc->coresched));
    setStr(o, "set", dc->set);
    json_object_set_string_member(o, "scope", vpCookieScopeName(dc->scope));
    if (dc->cookie) {
        g_autofree char *id = hexId(dc->cookie);
        json_object_set_string_member(o, "cookie", id);
    } else {
        json_object_set_null_member(o, "cookie");
    }
    json_object_set_boolean_member(o, "kept", dc->kept);
    JsonArray *threads = json_array_new();
    for (guint i = 0; i < dc->proc.threads->len; i++)
        json_array_add_element(
            threads, threadJson(c, dc, &g_array_index(dc->proc.threads, vpCookieThread, i)));
    json_object_set_array_member(o, "threads", threads);
    return nodeTaking(o);
}

void
vpCookiesAddStatus(const vpCookies *c, JsonObject *reply, JsonArray *domains)
{
    json_object_set_member(reply, "coresched", vpCookiesSummaryJson(c));
    for (guint i = 0; i < json_array_get_length(domains); i++) {
        JsonObject *dom = json_array_get_object_element(domains, i);
        JsonNode *node = vpCookiesDomainJson(c, json_object_get_string_member(dom, "domain"));
        if (node)
            json_object_set_member(dom, "coresched", node);
        else
            json_object_set_null_member(dom, "coresched");
    }
}
