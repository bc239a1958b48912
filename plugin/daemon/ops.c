/*
 * The socket operations, all from one table: dispatch, the message for an unknown
 * operation and the protocol's reference (proto/proto.h, checked against
 * vpDaemonProtocolReference() by the integration tier) come from it. The hook's
 * operations are answered on the socket thread from the manager alone, under the state
 * lock, and hand anything that needs libvirt to the main loop for after the reply
 * (libvirt may be blocked on the hook that asked), but for the moves that make room for
 * a start: those concern other domains, and the reserve waits for them, bounded
 * (daemon/admission.h). Operator commands read what the main loop owns (the rebalancer's
 * figures, the cookies) and may call libvirt: they are answered there.
 */
#include "daemon/daemonpriv.h"
#include "daemon/log.h"
#include "proto/proto.h"
#include "libvirt/domxml.h"
#include "host/threads.h"

#include <string.h>

/* What the main loop does once the hook has its reply. */
typedef struct {
    vpDaemon *d;
    char *name;         /* NULL: only save */
    gboolean sync;      /* started, reconnect: sync name */
    gboolean reconnect; /* libvirtd is back: try its socket now */
    gboolean released;  /* release: a record was freed */
} vpAfter;

static void
afterMain(vpDaemon *d, gpointer data)
{
    vpAfter *a = data;
    if (a->reconnect)
        vpVirConnPoke(d->vc);
    if (a->name && a->sync)
        vpSyncQueue(d->sync, a->name, VP_SYNC_HOOK);
    else if (a->name)
        vpSyncReleased(d->sync, a->name, a->released);
    vpDaemonScheduleSave(d);
}

static void
afterFree(gpointer data)
{
    vpAfter *a = data;
    g_free(a->name);
    g_free(a);
}

/* Socket thread, once the reply is out; without the state lock, which the main loop may
 * hold for a while: waiting for it here held up every other connection's answer. */
static void
afterRun(gpointer data)
{
    vpAfter *a = data;
    vpAfter *copy = g_memdup2(a, sizeof(*a));
    copy->name = g_strdup(a->name);
    vpDaemonHandoff(a->d, afterMain, copy, afterFree);
}

static vpAfter *
setAfter(vpServerAfter *after, vpDaemon *d, const char *name)
{
    vpAfter *a = g_new0(vpAfter, 1);
    a->d = d;
    a->name = g_strdup(name);
    after->func = afterRun;
    after->data = a;
    after->destroy = afterFree;
    return a;
}

static JsonNode *
replyFromError(const GError *err)
{
    gboolean refused =
        err->domain == VP_ERROR && (err->code == VP_ERROR_REFUSED || err->code == VP_ERROR_INVALID);
    return vpProtoReplyError(err->message, refused);
}

static vpRefusal
refusalOf(const GError *err)
{
    if (err->domain == VP_ERROR && err->code == VP_ERROR_REFUSED)
        return VP_REFUSAL_POLICY;
    if (err->domain == VP_ERROR && err->code == VP_ERROR_INVALID)
        return VP_REFUSAL_INVALID;
    return VP_REFUSAL_FAILURE;
}

/* Domain names come from libvirt's hook arguments and are echoed into logs and JSON only;
 * still, one without printable characters is nobody's domain. */
static const char *
getName(JsonObject *req, GError **error)
{
    const char *name = vpProtoGetString(req, "name", TRUE, error);
    if (!name)
        return NULL;
    if (!*name || strlen(name) > 1024 || !g_utf8_validate(name, -1, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "member 'name' is not a domain name");
        return NULL;
    }
    return name;
}

/* The configuration leaves this domain out: nothing to do, and the start goes on. */
static JsonNode *
ignored(void)
{
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_boolean_member(o, "ignored", TRUE);
    return reply;
}

/* The name and domain XML of a hook request. FALSE with *error, or with *reply set when
 * the configuration leaves the domain out. */
static gboolean
getDomainXML(vpDaemon *d, JsonObject *req, const char **name, const char **xml, JsonNode **reply,
             GError **error)
{
    *name = getName(req, error);
    *xml = *name ? vpProtoGetString(req, "xml", TRUE, error) : NULL;
    if (!*xml)
        return FALSE;
    if (!vpConfigManages(d->cfg, *name)) {
        *reply = ignored();
        return FALSE;
    }
    if (!vpDomXMLIsQemu(*xml, strlen(*xml))) {
        vpLogDomain(G_LOG_LEVEL_INFO, *name, "not a QEMU domain: left alone");
        *reply = ignored();
        return FALSE;
    }
    return TRUE;
}

/* The domain's request, parsed with the state lock let go as the job's: a large XML (4 MiB
 * at most, bounded to parse in milliseconds) must not hold up the main loop. Nothing is
 * kept across the gap but the copied defaults; a reload meanwhile is as if it came after
 * this request. */
static vpRequest *
parseRequest(vpDaemon *d, vpJob *job, const char *xml, GError **error)
{
    vpPolicy defaults = {0};
    vpPolicyCopy(&defaults, vpManagerDefaults(d->mgr));
    vpJobEnter(job);
    vpRequest *want = vpDomXMLParse(xml, strlen(xml), &defaults, error);
    vpJobExit(job);
    vpPolicyClear(&defaults);
    return want;
}

/* How long a reserve waits for another job on its domain: the same share of the hook's
 * bound as its moves get. */
static guint
jobWaitMs(const vpDaemon *d)
{
    return (guint)d->cfg->hook_timeout_ms / 2;
}

/* mode=report: the start is reported (what placing it would do), never refused. */
static JsonNode *
reportOnly(vpDaemon *d, const char *name, const vpRequest *want, GError **error)
{
    if (want)
        vpReportDomain(d->report, d->mgr, name, want, "mode=report");
    else
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "mode=report: not refused: %s", (*error)->message);
    g_clear_error(error);
    return ignored();
}

static JsonNode *
opReserve(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    const char *name, *xml;
    JsonNode *reply = NULL;
    if (!getDomainXML(d, req, &name, &xml, &reply, error))
        return reply;
    g_autoptr(vpJob) job = vpJobBegin(d->jobs, name, "reserve", jobWaitMs(d), error);
    g_autoptr(vpRequest) want = job ? parseRequest(d, job, xml, error) : NULL;
    if (d->cfg->mode == VP_MODE_REPORT)
        return reportOnly(d, name, want, error);
    vpReportForget(d->report, name);
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    bool running = rec && rec->running;
    const vpPlan *plan = want ? vpAdmissionReserve(d->admission, name, want, error) : NULL;
    /* Refused as running: if libvirt no longer runs it (a release never came), the sync
     * releases the stale record and the next start goes through. */
    setAfter(after, d, running ? name : NULL)->sync = running;
    if (!plan) {
        g_atomic_int_inc(&d->refusals[refusalOf(*error)]);
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "start refused: %s", (*error)->message);
        return NULL;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name, "reserved (%s)%s%s", vpHowName(plan->how),
                plan->degraded ? ", degraded: " : "", plan->degraded ? plan->degraded_reason : "");
    JsonObject *o;
    reply = vpProtoReplyOk(&o);
    json_object_set_member(o, "plan", vpPlanToJson(plan, vpManagerTopology(d->mgr)));
    return reply;
}

/* restore begin, migrate begin: the XML the domain comes with, without the pins vcpuplace
 * applied where it ran before; the reserve that follows places it anew. */
static JsonNode *
opRewrite(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    const char *name, *xml;
    JsonNode *reply = NULL;
    if (!getDomainXML(d, req, &name, &xml, &reply, error))
        return reply;
    g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), d->applied_key, error);
    if (!out && *error)
        return NULL;
    JsonObject *o;
    reply = vpProtoReplyOk(&o);
    if (out) {
        vpLogDomain(G_LOG_LEVEL_INFO, name,
                    "the pins vcpuplace applied where it ran before are taken out of its XML; "
                    "it is placed anew");
        json_object_set_string_member(o, "xml", out);
    }
    return reply;
}

static JsonNode *
notifyOp(vpDaemon *d, JsonObject *req, vpServerAfter *after, gboolean sync, gboolean reconnect,
         GError **error)
{
    const char *name = getName(req, error);
    if (!name)
        return NULL;
    if (!vpConfigManages(d->cfg, name))
        return ignored();
    vpAfter *a = setAfter(after, d, name);
    if (sync) {
        a->sync = TRUE;
        a->reconnect = reconnect;
    } else {
        vpReportForget(d->report, name);
        a->released = vpSyncReleaseRecord(d->sync, name);
    }
    return vpProtoReplyOk(NULL);
}

static JsonNode *
opStarted(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    return notifyOp(d, req, after, TRUE, FALSE, error);
}

static JsonNode *
opReconnect(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    return notifyOp(d, req, after, TRUE, TRUE, error);
}

static JsonNode *
opRelease(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    return notifyOp(d, req, after, FALSE, FALSE, error);
}

/* QEMU's pid and each vCPU's thread id, where they can be found (qemu:///system): what
 * /proc/PID/task/TID shows is then one look away. */
static void
addThreads(vpDaemon *d, JsonArray *doms)
{
    const char *rundir = vpConfigQemuRunDir(d->cfg);
    if (!rundir)
        return;
    for (guint i = 0; i < json_array_get_length(doms); i++) {
        JsonObject *dom = json_array_get_object_element(doms, i);
        const char *state = json_object_get_string_member(dom, "state");
        if (!json_object_has_member(dom, "vcpus") || g_strcmp0(state, "reserved") == 0)
            continue;
        g_autoptr(vpVcpuThreads) t =
            vpVcpuThreadsFind(rundir, "/proc", json_object_get_string_member(dom, "domain"), NULL);
        if (!t)
            continue;
        json_object_set_int_member(dom, "pid", t->pid);
        JsonArray *vcpus = json_object_get_array_member(dom, "vcpus");
        for (guint v = 0; v < json_array_get_length(vcpus) && v < t->nvcpus; v++) {
            if (t->tids[v])
                json_object_set_int_member(json_array_get_object_element(vcpus, v), "tid",
                                           t->tids[v]);
        }
    }
}

static JsonNode *
opStatus(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    g_autoptr(GError) err = NULL;
    const char *name = vpProtoGetString(req, "name", FALSE, &err);
    if (err) {
        g_propagate_error(error, g_steal_pointer(&err));
        return NULL;
    }
    g_autoptr(JsonNode) reported = vpReportJson(d->report, d->mgr, name);
    if (name && !vpManagerRecord(d->mgr, name) &&
        json_array_get_length(json_node_get_array(reported)) == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "domain '%s' is not managed (nor reported) by vcpuplaced", name);
        return NULL;
    }
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_string_member(o, "uri", d->cfg->uri);
    json_object_set_boolean_member(o, "connected", vpDaemonConnected(d));
    json_object_set_string_member(o, "mode", vpDaemonModeName(d->cfg->mode));
    json_object_set_boolean_member(o, "adopt_running", d->cfg->adopt_running);
    json_object_set_boolean_member(o, "hook", d->cfg->hook);
    if (d->config_error)
        json_object_set_string_member(o, "config_error", d->config_error);
    else
        json_object_set_null_member(o, "config_error");
    json_object_set_string_member(o, "topology", vpTopologyGetSource(vpManagerTopology(d->mgr)));
    JsonNode *doms = vpManagerStatusJson(d->mgr, name);
    addThreads(d, json_node_get_array(doms));
    vpCookiesAddStatus(d->cookies, o, json_node_get_array(doms));
    json_object_set_member(o, "hotplug", vpHotplugSummaryJson(d->hotplug));
    json_object_set_member(o, "admission", vpAdmissionStatusJson(d->admission));
    json_object_set_member(o, "domains", doms);
    json_object_set_member(o, "reported", g_steal_pointer(&reported));
    return reply;
}

static JsonNode *
opPlan(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    const char *xml = vpProtoGetString(req, "xml", TRUE, error);
    if (!xml)
        return NULL;
    g_autoptr(vpRequest) want = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(d->mgr), error);
    g_autoptr(vpPlan) plan = want ? vpManagerDryRun(d->mgr, want, error) : NULL;
    if (!plan)
        return NULL;
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_member(o, "plan", vpPlanToJson(plan, vpManagerTopology(d->mgr)));
    return reply;
}

static void
setCpuList(JsonObject *o, const char *member, hwloc_const_bitmap_t set)
{
    if (!set) {
        json_object_set_null_member(o, member);
        return;
    }
    g_autofree char *list = vpCpuListFormat(set);
    json_object_set_string_member(o, member, list);
}

static JsonNode *
opTopology(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    const vpTopology *topo = vpManagerTopology(d->mgr);
    const vpLedger *ledger = vpManagerLedger(d->mgr);
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_string_member(o, "source", vpTopologyGetSource(topo));
    setCpuList(o, "host_cpus", d->cfg->host_cpus);
    setCpuList(o, "housekeeping_cpus", d->cfg->housekeeping);
    json_object_set_member(o, "ledger", vpLedgerToJson(ledger));
    JsonArray *owners = json_array_new();
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        vpOwner own = vpLedgerOwner(ledger, pu);
        if (!own.domain)
            continue;
        JsonObject *e = json_object_new();
        json_object_set_int_member(e, "cpu", vpTopologyPU(topo, pu)->os);
        json_object_set_string_member(e, "domain", own.domain);
        json_object_set_string_member(e, "kind", vpOwnKindName(own.kind));
        if (own.kind == VP_OWN_VCPU)
            json_object_set_int_member(e, "vcpu", own.vcpu);
        json_array_add_object_element(owners, e);
    }
    json_object_set_array_member(o, "owners", owners);
    return reply;
}

static JsonNode *
opTop(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    return vpBalanceTopJson(d->balance);
}

static JsonNode *
opRebalance(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    return vpBalanceRebalanceJson(d->balance, req, error);
}

static JsonNode *
opMetrics(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    g_autofree char *text = vpDaemonMetricsText(d);
    json_object_set_string_member(o, "text", text);
    return reply;
}

typedef JsonNode *(*vpOpFunc)(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error);

typedef struct {
    const char *name;
    const char *args;  /* the request's members beside op */
    const char *reply; /* the reply's members beside ok */
    const char *doc;
    gboolean hook; /* socket thread, state lock held; otherwise the main loop */
    vpOpFunc run;
} vpOp;

static const vpOp ops[] = {
    {"reserve", "{name, xml}", "{plan}", "hook, prepare begin: place and hold PUs, or refuse", TRUE,
     opReserve},
    {"started", "{name}", "{}", "hook, started begin: pin now (after the reply)", TRUE, opStarted},
    {"release", "{name}", "{}", "hook, stopped/release end: free the domain's PUs", TRUE,
     opRelease},
    {"reconnect", "{name}", "{}", "hook, reconnect begin: resynchronise the domain", TRUE,
     opReconnect},
    {"rewrite", "{name, xml}", "{xml?}",
     "hook, restore/migrate begin: the XML without vcpuplace's pins", TRUE, opRewrite},
    {"status", "{name?}",
     "{uri, connected, mode, adopt_running, hook, config_error, domains, reported, ...}",
     "what each domain holds and why", FALSE, opStatus},
    {"plan", "{xml}", "{plan}", "where the domain would go now, nothing recorded", FALSE, opPlan},
    {"topology", "{}", "{source, host_cpus, housekeeping_cpus, ledger, owners}",
     "the host and who holds each CPU", FALSE, opTopology},
    {"top", "{}", "{mode, interval_s, intervals, vcpus: [...], cpus: [...]}",
     "the pressure figures per vCPU and CPU", FALSE, opTop},
    {"rebalance", "{dry_run?}", "{dry_run, moves: [...], notes: [...]}",
     "a rebalancing pass now, whatever the mode", FALSE, opRebalance},
    {"metrics", "{}", "{text}", "Prometheus text exposition", FALSE, opMetrics},
};

static const vpOp *
findOp(const char *name)
{
    for (gsize i = 0; i < G_N_ELEMENTS(ops); i++) {
        if (strcmp(ops[i].name, name) == 0)
            return &ops[i];
    }
    return NULL;
}

static char *
knownOps(void)
{
    GString *s = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(ops); i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", ops[i].name);
    return g_string_free(s, FALSE);
}

char *
vpDaemonProtocolReference(void)
{
    GString *s = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(ops); i++)
        g_string_append_printf(s, " *   %-10s %-12s %s\n *              -> %s\n", ops[i].name,
                               ops[i].args, ops[i].doc, ops[i].reply);
    return g_string_free(s, FALSE);
}

typedef struct {
    JsonObject *req;
    const vpOp *op;
    vpServerCall *call; /* NULL once answered */
} vpOperatorCall;

static void
operatorMain(vpDaemon *d, gpointer data)
{
    vpOperatorCall *oc = data;
    g_autoptr(GError) err = NULL;
    JsonNode *reply = oc->op->run(d, oc->req, NULL, &err);
    vpServerCallReply(g_steal_pointer(&oc->call), reply ? reply : replyFromError(err), NULL);
}

static void
operatorCallFree(gpointer data)
{
    vpOperatorCall *oc = data;
    if (oc->call)
        vpServerCallReply(oc->call, vpProtoReplyError("vcpuplaced is stopping", FALSE), NULL);
    json_object_unref(oc->req);
    g_free(oc);
}

JsonNode *
vpOpsHandle(JsonObject *req, vpServerCall *call, vpServerAfter *after, gpointer data)
{
    vpDaemon *d = data;
    g_autoptr(GError) err = NULL;
    const char *name = vpProtoGetString(req, "op", TRUE, &err);
    if (!name)
        return vpProtoReplyError(err->message, FALSE);
    const vpOp *op = findOp(name);
    if (!op) {
        g_autofree char *known = knownOps();
        g_set_error(&err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "unknown operation '%s' (known: %s)", name, known);
        return replyFromError(err);
    }
    if (op->hook) {
        g_mutex_lock(&d->lock);
        JsonNode *reply = op->run(d, req, after, &err);
        g_mutex_unlock(&d->lock);
        return reply ? reply : replyFromError(err);
    }
    vpOperatorCall *oc = g_new0(vpOperatorCall, 1);
    oc->req = json_object_ref(req);
    oc->op = op;
    oc->call = call;
    vpDaemonHandoff(d, operatorMain, oc, operatorCallFree);
    return NULL;
}
