/*
 * vcpuplace policy DOMAIN [--smt=... ...]: shows or changes a domain's vcpuplace policy,
 * which lives in the domain's <metadata> and is written through libvirt
 * (virDomainSetMetadata), live and persistent, like `virsh metadata` would. A running
 * domain keeps its placement until its next start.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "core/policy.h"
#include "libvirt/connection.h"
#include "libvirt/domxml.h"

#include <json-glib/json-glib.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpPolicy, vpPolicyClear)

/* The domain's policy: its metadata over built-in defaults (*found: it had metadata). */
static gboolean
readPolicy(virDomainPtr dom, unsigned flags, vpPolicy *policy, gboolean *found, GError **error)
{
    vpPolicyInitDefaults(policy);
    g_autofree char *xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VP_XML_NS, flags);
    *found = xml != NULL;
    if (!xml) {
        virErrorPtr e = virGetLastError();
        if (e && e->code == VIR_ERR_NO_DOMAIN_METADATA)
            return TRUE;
        vpVirSetError(error, "domain '%s': cannot read its metadata", virDomainGetName(dom));
        return FALSE;
    }
    if (!vpDomXMLParsePolicy(xml, strlen(xml), policy, error)) {
        g_prefix_error(error, "domain '%s': its vcpuplace metadata: ", virDomainGetName(dom));
        return FALSE;
    }
    return TRUE;
}

static void
printPolicy(const char *name, const vpPolicy *p, gboolean found, gboolean json)
{
    if (json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "domain");
        json_builder_add_string_value(b, name);
        json_builder_set_member_name(b, "metadata");
        json_builder_add_boolean_value(b, found);
        json_builder_set_member_name(b, "policy");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "smt");
        json_builder_add_string_value(b, vpSmtName(p->smt));
        json_builder_set_member_name(b, "group");
        if (p->group)
            json_builder_add_string_value(b, p->group);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "coresched");
        json_builder_add_string_value(b, vpCoreschedName(p->coresched));
        json_builder_set_member_name(b, "locality");
        json_builder_add_string_value(b, vpLocalityName(p->locality));
        json_builder_set_member_name(b, "emulator");
        json_builder_add_string_value(b, vpEmulatorName(p->emulator));
        json_builder_set_member_name(b, "rebalance");
        json_builder_add_string_value(b, vpRebalanceName(p->rebalance));
        json_builder_set_member_name(b, "unmet");
        json_builder_add_string_value(b, vpUnmetName(p->unmet));
        json_builder_end_object(b);
        json_builder_end_object(b);
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *text = json_to_string(root, TRUE);
        printf("%s\n", text);
        return;
    }
    printf("%s: smt=%s group=%s coresched=%s locality=%s emulator=%s rebalance=%s unmet=%s%s\n",
           name, vpSmtName(p->smt), p->group ? p->group : "-", vpCoreschedName(p->coresched),
           vpLocalityName(p->locality), vpEmulatorName(p->emulator), vpRebalanceName(p->rebalance),
           vpUnmetName(p->unmet),
           found ? "" : " (no vcpuplace metadata: built-in defaults, the daemon's may differ)");
}

int
vpCmdPolicy(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    g_autofree char *smt = NULL, *group = NULL, *coresched = NULL, *locality = NULL;
    g_autofree char *emulator = NULL, *rebalance = NULL, *unmet = NULL;
    gboolean only_live = FALSE, only_config = FALSE, json = FALSE;
    GOptionEntry entries[] = {
        {"smt", 0, 0, G_OPTION_ARG_STRING, &smt, "isolate | pack | spread | share", "MODE"},
        {"group", 0, 0, G_OPTION_ARG_STRING, &group, "trust group", "NAME"},
        {"coresched", 0, 0, G_OPTION_ARG_STRING, &coresched, "vm | group | off", "MODE"},
        {"locality", 0, 0, G_OPTION_ARG_STRING, &locality, "auto | l3 | numa | package | host",
         "LEVEL"},
        {"emulator", 0, 0, G_OPTION_ARG_STRING, &emulator, "housekeeping | vcpus | dedicated",
         "WHERE"},
        {"rebalance", 0, 0, G_OPTION_ARG_STRING, &rebalance, "auto | off", "MODE"},
        {"unmet", 0, 0, G_OPTION_ARG_STRING, &unmet, "refuse | degrade", "MODE"},
        {"live", 0, 0, G_OPTION_ARG_NONE, &only_live, "change the running domain only", NULL},
        {"persistent", 0, 0, G_OPTION_ARG_NONE, &only_config,
         "change the persistent definition only", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the policy as JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("DOMAIN - show or set a domain's vcpuplace policy");
    g_option_context_add_main_entries(ctx, entries, NULL);
    vpLiveAddOptions(ctx, &live);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || !vpLiveResolve(&live, &err))
        return vpLiveFail("policy", err);
    if (argc != 2) {
        fprintf(stderr, "vcpuplace policy: expected one DOMAIN\n");
        return VP_EXIT_ERROR;
    }
    const char *name = argv[1];
    const struct {
        const char *field;
        const char *value;
    } changes[] = {
        {"smt", smt},           {"group", group},       {"coresched", coresched},
        {"locality", locality}, {"emulator", emulator}, {"rebalance", rebalance},
        {"unmet", unmet},
    };
    gboolean change = FALSE;
    for (gsize i = 0; i < G_N_ELEMENTS(changes); i++)
        change |= changes[i].value != NULL;

    g_autoptr(virConnect) conn = vpLiveConnect(&live, &err);
    if (!conn)
        return vpLiveFail("policy", err);
    g_autoptr(virDomain) dom = vpLiveDomain(conn, name, &err);
    if (!dom)
        return vpLiveFail("policy", err);
    int active = virDomainIsActive(dom);
    int persistent = virDomainIsPersistent(dom);
    unsigned flags = 0;
    if (only_live || (!only_config && active == 1))
        flags |= VIR_DOMAIN_AFFECT_LIVE;
    if (only_config || (!only_live && persistent == 1))
        flags |= VIR_DOMAIN_AFFECT_CONFIG;
    /* Read from where we write: the running definition when it is among the targets. */
    unsigned readflags =
        flags & VIR_DOMAIN_AFFECT_LIVE ? VIR_DOMAIN_AFFECT_LIVE : VIR_DOMAIN_AFFECT_CONFIG;
    g_auto(vpPolicy) policy = {0};
    gboolean found = FALSE;
    if (!readPolicy(dom, readflags, &policy, &found, &err))
        return vpLiveFail("policy", err);
    if (!change) {
        printPolicy(name, &policy, found, json);
        return VP_EXIT_OK;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(changes); i++) {
        if (changes[i].value && !vpPolicySetAttr(&policy, changes[i].field, changes[i].value, &err))
            return vpLiveFail("policy", err);
    }
    g_autofree char *xml = vpDomXMLFormatPolicy(&policy);
    if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, VP_XML_PREFIX, VP_XML_NS,
                             flags) < 0) {
        vpVirSetError(&err, "domain '%s': cannot write its metadata", name);
        return vpLiveFail("policy", err);
    }
    printPolicy(name, &policy, TRUE, json);
    if (!json)
        printf(
            "written to the %s%s%s definition%s\n", flags & VIR_DOMAIN_AFFECT_LIVE ? "running" : "",
            (flags & VIR_DOMAIN_AFFECT_LIVE) && (flags & VIR_DOMAIN_AFFECT_CONFIG) ? " and " : "",
            flags & VIR_DOMAIN_AFFECT_CONFIG ? "persistent" : "",
            active == 1 ? "; the placement changes at the next start" : "");
    return VP_EXIT_OK;
}
