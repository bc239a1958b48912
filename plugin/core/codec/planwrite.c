/*
 * A plan's JSON, in the stable form golden files compare and the ledger persists: keys come
 * out in one fixed order (its reader, which accepts nothing it would not have written, is
 * planread.c).
 */
#include "core/model/plan.h"

/* A CPU, core or node number, null where there is none (vcpuplace-json(7)). */
static void
vpPlanAddIndex(JsonBuilder *b, const char *member, int value)
{
    json_builder_set_member_name(b, member);
    if (value < 0)
        json_builder_add_null_value(b);
    else
        json_builder_add_int_value(b, value);
}

/* A string, null where there is none. */
static void
vpPlanAddString(JsonBuilder *b, const char *member, const char *value)
{
    json_builder_set_member_name(b, member);
    if (value)
        json_builder_add_string_value(b, value);
    else
        json_builder_add_null_value(b);
}

static void
vpPlanPolicyJson(JsonBuilder *b, const vpPolicy *policy)
{
    json_builder_set_member_name(b, "policy");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "smt");
    json_builder_add_string_value(b, vpSmtName(policy->smt));
    json_builder_set_member_name(b, "coresched");
    json_builder_add_string_value(b, vpCoreschedName(policy->coresched));
    json_builder_set_member_name(b, "locality");
    json_builder_add_string_value(b, vpLocalityName(policy->locality));
    json_builder_set_member_name(b, "emulator");
    json_builder_add_string_value(b, vpEmulatorName(policy->emulator));
    json_builder_set_member_name(b, "rebalance");
    json_builder_add_string_value(b, vpRebalanceName(policy->rebalance));
    json_builder_set_member_name(b, "unmet");
    json_builder_add_string_value(b, vpUnmetName(policy->unmet));
    /* only for shared VMs, so that dedicated plans keep their golden form */
    if (policy->cpus == VP_CPUS_SHARED) {
        g_autofree char *ratio = vpRatioFormat(policy->ratio);

        json_builder_set_member_name(b, "cpus");
        json_builder_add_string_value(b, vpCpusName(policy->cpus));
        json_builder_set_member_name(b, "ratio");
        json_builder_add_string_value(b, ratio);
    }
    json_builder_end_object(b);
}

static void
vpPlanVcpusJson(JsonBuilder *b, const vpPlan *plan, const vpTopology *topo)
{
    json_builder_set_member_name(b, "vcpus");
    json_builder_begin_array(b);
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        int core, l3, numa, package;

        vpPlanLocate(topo, plan->vcpu_pu[i], &core, &l3, &numa, &package);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, i);
        vpPlanAddIndex(b, "cpu", plan->vcpu_pu[i]);
        vpPlanAddIndex(b, "core", core);
        vpPlanAddIndex(b, "l3", l3);
        vpPlanAddIndex(b, "numa", numa);
        vpPlanAddIndex(b, "package", package);
        if (plan->vcpu_set) {
            g_autofree char *set = vpPlanFormatSet(plan->vcpu_set[i]);

            json_builder_set_member_name(b, "cpus");
            json_builder_add_string_value(b, set);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

static void
vpPlanGuestTopologyJson(JsonBuilder *b, const vpPlan *plan)
{
    json_builder_set_member_name(b, "guest_topology");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "sockets");
    json_builder_add_int_value(b, plan->guest_sockets);
    json_builder_set_member_name(b, "cores");
    json_builder_add_int_value(b, plan->guest_cores);
    json_builder_set_member_name(b, "threads");
    json_builder_add_int_value(b, plan->guest_threads);
    json_builder_end_object(b);
}

/* "own" and "cpuset", written only when set, so plans without them keep their golden form. */
static void
vpPlanOwnJson(JsonBuilder *b, const vpPlan *plan)
{
    if (!hwloc_bitmap_iszero(plan->own)) {
        g_autofree char *own = vpPlanFormatSet(plan->own);

        json_builder_set_member_name(b, "own");
        json_builder_add_string_value(b, own);
    }
    if (plan->cpuset) {
        g_autofree char *cpuset = vpPlanFormatSet(plan->cpuset);

        json_builder_set_member_name(b, "cpuset");
        json_builder_add_string_value(b, cpuset);
    }
}

/* "memory" per node (page_size only where a guest cell's <page> differs from the domain's),
 * then the domain's "page_size"; each only when there is one. */
static void
vpPlanMemoryJson(JsonBuilder *b, const vpPlan *plan)
{
    if (plan->nmem) {
        json_builder_set_member_name(b, "memory");
        json_builder_begin_array(b);
        for (unsigned i = 0; i < plan->nmem; i++) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "numa");
            json_builder_add_int_value(b, plan->mem[i].node);
            json_builder_set_member_name(b, "bytes");
            json_builder_add_int_value(b, (gint64)plan->mem[i].bytes);
            if (plan->mem[i].page_size != plan->page_size) {
                json_builder_set_member_name(b, "page_size");
                json_builder_add_int_value(b, (gint64)plan->mem[i].page_size);
            }
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
    }
    if (plan->page_size) {
        json_builder_set_member_name(b, "page_size");
        json_builder_add_int_value(b, (gint64)plan->page_size);
    }
}

static void
vpPlanGuestCellsJson(JsonBuilder *b, const vpGuestCells *cells)
{
    json_builder_set_member_name(b, "guest_cells");
    json_builder_begin_array(b);
    for (unsigned i = 0; i < cells->ncells; i++) {
        g_autofree char *list = vpCpuListFormat(cells->cells[i].vcpus);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "cell");
        json_builder_add_int_value(b, cells->cells[i].id);
        json_builder_set_member_name(b, "vcpus");
        json_builder_add_string_value(b, list);
        json_builder_set_member_name(b, "numa");
        json_builder_add_int_value(b, cells->cells[i].node);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* Written only when there are moves, so plans without them keep their golden form. */
static void
vpPlanMovesJson(JsonBuilder *b, const vpPlan *plan)
{
    if (!plan->nmoves)
        return;
    json_builder_set_member_name(b, "moves");
    json_builder_begin_array(b);
    for (unsigned i = 0; i < plan->nmoves; i++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "domain");
        json_builder_add_string_value(b, plan->moves[i].domain);
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, plan->moves[i].vcpu);
        json_builder_set_member_name(b, "from");
        json_builder_add_int_value(b, plan->moves[i].from);
        json_builder_set_member_name(b, "to");
        json_builder_add_int_value(b, plan->moves[i].to);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, plan->moves[i].reason ? plan->moves[i].reason : "");
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

JsonNode *
vpPlanToJson(const vpPlan *plan, const vpTopology *topo)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autofree char *emulator = vpPlanFormatSet(plan->emulator);
    g_autofree char *reserved = vpPlanFormatSet(plan->reserved);
    g_autoptr(vpGuestCells) cells = NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "domain");
    json_builder_add_string_value(b, plan->domain);
    vpPlanAddString(b, "group", plan->policy.group);
    vpPlanPolicyJson(b, &plan->policy);
    json_builder_set_member_name(b, "how");
    json_builder_add_string_value(b, vpHowName(plan->how));
    vpPlanVcpusJson(b, plan, topo);
    json_builder_set_member_name(b, "emulator");
    json_builder_add_string_value(b, emulator);
    json_builder_set_member_name(b, "reserved");
    json_builder_add_string_value(b, reserved);
    if (plan->vcpu_set) {
        g_autofree char *shared = vpPlanFormatSet(plan->shared);

        json_builder_set_member_name(b, "shared");
        json_builder_add_string_value(b, shared);
    }
    json_builder_set_member_name(b, "level");
    json_builder_add_string_value(b, vpLevelName(plan->level));
    vpPlanAddIndex(b, "level_index", plan->level_index);
    if (plan->guest_threads)
        vpPlanGuestTopologyJson(b, plan);
    json_builder_set_member_name(b, "topology_mismatch");
    json_builder_add_boolean_value(b, plan->topology_mismatch);
    vpPlanOwnJson(b, plan);
    vpPlanMemoryJson(b, plan);
    if (plan->overcommit) {
        json_builder_set_member_name(b, "overcommit");
        json_builder_add_boolean_value(b, TRUE);
    }
    if (plan->beside_others) {
        json_builder_set_member_name(b, "beside_others");
        json_builder_add_int_value(b, plan->beside_others);
    }
    json_builder_set_member_name(b, "degraded");
    json_builder_add_boolean_value(b, plan->degraded);
    vpPlanAddString(b, "degraded_reason", plan->degraded_reason);
    if ((cells = vpPlanGuestCells(plan, topo)))
        vpPlanGuestCellsJson(b, cells);
    vpPlanMovesJson(b, plan);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}
