/*
 * The manager's status document (op status, `vcpuplace status --json`): per recorded domain
 * its state and, when it holds a plan, where each vCPU runs. Read through manager.h only, as
 * any other reader of the manager would.
 */
#include "daemon/manager.h"

#include <string.h>

static JsonNode *
policyJson(const vpPolicy *p)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "smt", vpSmtName(p->smt));
    if (p->group)
        json_object_set_string_member(o, "group", p->group);
    else
        json_object_set_null_member(o, "group");
    json_object_set_string_member(o, "coresched", vpCoreschedName(p->coresched));
    json_object_set_string_member(o, "locality", vpLocalityName(p->locality));
    json_object_set_string_member(o, "emulator", vpEmulatorName(p->emulator));
    json_object_set_string_member(o, "rebalance", vpRebalanceName(p->rebalance));
    json_object_set_string_member(o, "unmet", vpUnmetName(p->unmet));
    /* json_node_init_object() takes a reference of its own: ours goes. */
    JsonNode *node = json_node_init_object(json_node_alloc(), o);
    json_object_unref(o);
    return node;
}

static void
setIndex(JsonObject *o, const char *member, int value)
{
    if (value < 0)
        json_object_set_null_member(o, member);
    else
        json_object_set_int_member(o, member, value);
}

/* The plan's coordinates (vpPlanLocate), so that status and plan agree on every member. */
static JsonNode *
vcpusJson(const vpPlan *plan, const vpTopology *topo)
{
    JsonArray *a = json_array_new();
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        JsonObject *o = json_object_new();
        int core, l3, numa, package;
        vpPlanLocate(topo, plan->vcpu_pu[i], &core, &l3, &numa, &package);
        json_object_set_int_member(o, "vcpu", i);
        setIndex(o, "cpu", plan->vcpu_pu[i]);
        setIndex(o, "core", core);
        setIndex(o, "l3", l3);
        setIndex(o, "numa", numa);
        setIndex(o, "package", package);
        json_array_add_object_element(a, o);
    }
    JsonNode *node = json_node_init_array(json_node_alloc(), a);
    json_array_unref(a);
    return node;
}

/* A CPU list is a string, "" when empty, as in a plan (vcpuplace-json(7)). */
static void
setCpus(JsonObject *o, const char *member, hwloc_const_bitmap_t set)
{
    g_autofree char *list = set ? vpCpuListFormat(set) : g_strdup("");
    json_object_set_string_member(o, member, list);
}

static JsonNode *
domainJson(const vpManager *m, const vpDomRecord *rec)
{
    JsonObject *o = json_object_new();
    gint64 now = g_get_monotonic_time();
    json_object_set_string_member(o, "domain", rec->name);
    json_object_set_string_member(o, "state", vpDomStateName(rec->state));
    json_object_set_double_member(o, "state_age_s", (now - rec->since) / 1e6);
    if (rec->error)
        json_object_set_string_member(o, "error", rec->error);
    else
        json_object_set_null_member(o, "error");
    const vpPlan *plan = vpManagerPlan(m, rec->name);
    if (plan) {
        json_object_set_string_member(o, "how", vpHowName(plan->how));
        json_object_set_member(o, "policy", policyJson(&plan->policy));
        json_object_set_string_member(o, "level", vpLevelName(plan->level));
        json_object_set_boolean_member(o, "degraded", plan->degraded);
        if (plan->degraded_reason)
            json_object_set_string_member(o, "degraded_reason", plan->degraded_reason);
        else
            json_object_set_null_member(o, "degraded_reason");
        if (plan->beside_others)
            json_object_set_int_member(o, "beside_others", plan->beside_others);
        json_object_set_member(o, "vcpus", vcpusJson(plan, vpManagerTopology(m)));
        setCpus(o, "emulator", plan->emulator);
        setCpus(o, "reserved", plan->reserved);
        json_object_set_member(o, "plan", vpPlanToJson(plan, vpManagerTopology(m)));
    }
    JsonNode *node = json_node_init_object(json_node_alloc(), o);
    json_object_unref(o);
    return node;
}

JsonNode *
vpManagerStatusJson(const vpManager *m, const char *name)
{
    JsonArray *a = json_array_new();
    g_autoptr(GPtrArray) names = vpManagerNames(m);
    for (guint i = 0; i < names->len; i++) {
        if (name && strcmp(name, names->pdata[i]) != 0)
            continue;
        json_array_add_element(a, domainJson(m, vpManagerRecord(m, names->pdata[i])));
    }
    JsonNode *node = json_node_init_array(json_node_alloc(), a);
    json_array_unref(a);
    return node;
}
