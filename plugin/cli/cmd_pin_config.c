/*
 * vcpuplace pin-config DOMAIN: writes the domain's placement into its persistent
 * <cputune> (virDomainPinVcpuFlags / PinEmulator with VIR_DOMAIN_AFFECT_CONFIG), so that
 * libvirt applies it itself before the guest runs, with no window of default affinity.
 * The placement is the one vcpuplaced holds for a running domain, else the one it would
 * choose now. From then on the domain carries its own pins, which vcpuplace respects.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "core/model/plan.h"
#include "proto/proto.h"
#include "libvirt/connection.h"
#include "libvirt/pinning.h"

#include <stdio.h>
#include <string.h>

/* The plan vcpuplaced holds for name, or NULL without error when it holds none. */
static vpPlan *
heldPlan(const char *socket, const char *name, GError **error)
{
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "status");
    json_object_set_string_member(req, "name", name);
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) reply = vpClientCall(socket, req, &err);
    if (!reply) {
        if (g_error_matches(err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_FAILED))
            return NULL;
        g_propagate_error(error, g_steal_pointer(&err));
        return NULL;
    }
    JsonNode *dn = json_object_get_member(json_node_get_object(reply), "domains");
    if (!dn || !JSON_NODE_HOLDS_ARRAY(dn) || json_array_get_length(json_node_get_array(dn)) != 1)
        return NULL;
    JsonNode *en = json_array_get_element(json_node_get_array(dn), 0);
    JsonNode *pn = JSON_NODE_HOLDS_OBJECT(en)
                       ? json_object_get_member(json_node_get_object(en), "plan")
                       : NULL;
    return pn ? vpPlanFromJson(pn, error) : NULL;
}

static vpPlan *
proposedPlan(const char *socket, virDomainPtr dom, GError **error)
{
    g_autofree char *xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
    if (!xml) {
        vpVirSetError(error, "domain '%s': cannot read its XML", virDomainGetName(dom));
        return NULL;
    }
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "plan");
    json_object_set_string_member(req, "xml", xml);
    g_autoptr(JsonNode) reply = vpClientCall(socket, req, error);
    if (!reply)
        return NULL;
    JsonNode *pn = json_object_get_member(json_node_get_object(reply), "plan");
    if (!pn) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "vcpuplaced's plan reply has no member 'plan'");
        return NULL;
    }
    return vpPlanFromJson(pn, error);
}

/* --json: {"domain", "written", "own_pins", "vcpus": [{"vcpu", "cpu"}], "emulator"}; plan
 * NULL when the domain carries its own pins and nothing was written. */
static void
describeJson(const char *name, const vpPlan *plan, gboolean done)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "domain");
    json_builder_add_string_value(b, name);
    json_builder_set_member_name(b, "written");
    json_builder_add_boolean_value(b, done);
    json_builder_set_member_name(b, "own_pins");
    json_builder_add_boolean_value(b, plan == NULL);
    json_builder_set_member_name(b, "vcpus");
    json_builder_begin_array(b);
    for (unsigned i = 0; plan && i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] < 0)
            continue;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, i);
        json_builder_set_member_name(b, "cpu");
        json_builder_add_int_value(b, plan->vcpu_pu[i]);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "emulator");
    if (plan && plan->emulator && !hwloc_bitmap_iszero(plan->emulator)) {
        g_autofree char *list = vpCpuListFormat(plan->emulator);
        json_builder_add_string_value(b, list);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    vpCliPrintJson(root);
}

static void
describe(const char *name, const vpPlan *plan, gboolean done)
{
    printf("%s: %s persistent <cputune>:\n", name, done ? "wrote" : "would write");
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0)
            printf("  <vcpupin vcpu='%u' cpuset='%d'/>\n", i, plan->vcpu_pu[i]);
    }
    if (plan->emulator && !hwloc_bitmap_iszero(plan->emulator)) {
        g_autofree char *list = vpCpuListFormat(plan->emulator);
        printf("  <emulatorpin cpuset='%s'/>  (iothreads alike)\n", list);
    }
}

int
vpCmdPinConfig(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    gboolean dry_run = FALSE, json = FALSE;
    GOptionEntry entries[] = {
        {"dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run, "show the pins, write nothing", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the pins as JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    int rc = vpLiveParseOptions("pin-config",
                                "DOMAIN - write the placement into the persistent <cputune>",
                                entries, &live, &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (!vpCliOneArgument("pin-config", "DOMAIN", argc))
        return VP_EXIT_ERROR;
    const char *name = argv[1];

    g_autoptr(GError) err = NULL;
    g_autoptr(virConnect) conn = vpLiveConnect(&live, &err);
    if (!conn)
        return vpLiveFail("pin-config", err);
    g_autoptr(virDomain) dom = vpLiveDomain(conn, name, &err);
    if (!dom)
        return vpLiveFail("pin-config", err);
    if (virDomainIsPersistent(dom) != 1) {
        fprintf(stderr,
                "vcpuplace pin-config: domain '%s' is transient: it has no persistent "
                "definition to write\n",
                name);
        return VP_EXIT_ERROR;
    }

    g_autoptr(vpPlan) plan = heldPlan(live.socket, name, &err);
    if (!plan && !err)
        plan = proposedPlan(live.socket, dom, &err);
    if (!plan)
        return vpLiveFail("pin-config", err);
    if (plan->how == VP_HOW_PINNED) {
        if (json)
            describeJson(name, NULL, FALSE);
        else
            printf("%s: already carries its own <cputune> pins; nothing to write\n", name);
        return VP_EXIT_OK;
    }
    if (!dry_run && !vpVirPinsApply(dom, plan, VIR_DOMAIN_AFFECT_CONFIG, &err))
        return vpLiveFail("pin-config", err);
    (json ? describeJson : describe)(name, plan, !dry_run);
    return VP_EXIT_OK;
}
