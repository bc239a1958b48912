/*
 * The report mode's bookkeeping. See report.h.
 */
#include "daemon/report.h"
#include "core/place/placer.h"
#include "daemon/log.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *why;
    vpPlan *plan;  /* where it would go; NULL when it would be refused */
    char *refused; /* why it would be refused */
} vpReportEntry;

struct _vpReport {
    GHashTable *entries; /* name -> vpReportEntry */
};

static void
entryFree(gpointer data)
{
    vpReportEntry *e = data;
    g_free(e->why);
    vpPlanFree(e->plan);
    g_free(e->refused);
    g_free(e);
}

vpReport *
vpReportNew(void)
{
    vpReport *r = g_new0(vpReport, 1);
    r->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entryFree);
    return r;
}

void
vpReportFree(vpReport *r)
{
    if (!r)
        return;
    g_hash_table_destroy(r->entries);
    g_free(r);
}

/* The ledger with every other reported domain's would-be plan in it. */
static vpLedger *
paperLedger(const vpReport *r, const vpManager *mgr, const char *name)
{
    vpLedger *paper = vpLedgerCopy(vpManagerLedger(mgr), vpManagerTopology(mgr), NULL);
    if (!paper)
        return NULL;
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, r->entries);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const vpReportEntry *e = value;
        /* One that no longer fits beside the ledger (it changed since) is left out. */
        if (e->plan && strcmp(key, name) != 0 && !vpLedgerLookup(paper, key))
            vpLedgerAdd(paper, e->plan, NULL);
    }
    return paper;
}

static char *
cpusOf(const vpPlan *plan)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (unsigned i = 0; i < plan->nvcpus; i++)
        g_string_append_printf(s, "%s%d", i ? "," : "", plan->vcpu_pu[i]);
    return g_string_free(g_steal_pointer(&s), FALSE);
}

void
vpReportDomain(vpReport *r, const vpManager *mgr, const char *name, const vpRequest *req,
               const char *why)
{
    g_autoptr(vpLedger) paper = paperLedger(r, mgr, name);
    g_autoptr(GError) err = NULL;
    vpReportEntry *e = g_new0(vpReportEntry, 1);
    e->why = g_strdup(why);
    e->plan = paper ? vpPlace(vpManagerTopology(mgr), paper, req, &err) : NULL;
    if (!e->plan)
        e->refused = g_strdup(err ? err->message : "out of memory");
    g_autofree char *cpus = e->plan ? cpusOf(e->plan) : NULL;
    const vpReportEntry *was = g_hash_table_lookup(r->entries, name);
    g_autofree char *wascpus = was && was->plan ? cpusOf(was->plan) : NULL;
    if (!was || g_strcmp0(cpus, wascpus) != 0 || g_strcmp0(e->refused, was->refused) != 0) {
        if (e->plan)
            vpLogDomain(G_LOG_LEVEL_INFO, name, "%s: not pinned; would be placed %s on CPUs %s",
                        why, vpHowName(e->plan->how), cpus);
        else
            vpLogDomain(G_LOG_LEVEL_INFO, name, "%s: not refused; would be refused: %s", why,
                        e->refused);
    }
    g_hash_table_insert(r->entries, g_strdup(name), e);
}

gboolean
vpReportInstead(vpReport *r, const vpManager *mgr, const vpConfig *cfg, const char *name,
                const vpRequest *req, const GError *err)
{
    /* A domain's own <cputune> pins are recorded in any mode: nothing is pinned for that,
     * and the CPUs they name are then kept from others, reported or placed. */
    gboolean own = req && req->has_pins;
    if (vpManagerRecord(mgr, name) || own) {
        /* Placed while enforcing: report mode keeps its record and pins as they are. */
        if (!own && cfg->mode == VP_MODE_REPORT)
            return TRUE;
        vpReportForget(r, name);
        return FALSE;
    }
    if (cfg->mode == VP_MODE_ENFORCE && cfg->adopt_running)
        return FALSE;
    if (!req) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "not reported: %s", err->message);
        return TRUE;
    }
    vpReportDomain(r, mgr, name, req,
                   cfg->mode == VP_MODE_REPORT
                       ? "mode=report"
                       : "running before vcpuplaced admitted it (adopt_running=no)");
    return TRUE;
}

void
vpReportForget(vpReport *r, const char *name)
{
    g_hash_table_remove(r->entries, name);
}

void
vpReportReset(vpReport *r)
{
    g_hash_table_remove_all(r->entries);
}

guint
vpReportCount(const vpReport *r)
{
    return g_hash_table_size(r->entries);
}

static void
entryJson(JsonBuilder *b, const char *name, const vpReportEntry *e, const vpTopology *topo)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "domain");
    json_builder_add_string_value(b, name);
    json_builder_set_member_name(b, "why");
    json_builder_add_string_value(b, e->why);
    json_builder_set_member_name(b, "plan");
    if (e->plan)
        json_builder_add_value(b, vpPlanToJson(e->plan, topo));
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "refused");
    if (e->refused)
        json_builder_add_string_value(b, e->refused);
    else
        json_builder_add_null_value(b);
    json_builder_end_object(b);
}

static int
cmpStr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

JsonNode *
vpReportJson(const vpReport *r, const vpManager *mgr, const char *name)
{
    guint n = 0;
    g_autofree gpointer *names = g_hash_table_get_keys_as_array(r->entries, &n);
    qsort(names, n, sizeof(*names), cmpStr);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_array(b);
    for (guint i = 0; i < n; i++) {
        if (name && strcmp(name, names[i]) != 0)
            continue;
        entryJson(b, names[i], g_hash_table_lookup(r->entries, names[i]), vpManagerTopology(mgr));
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}
