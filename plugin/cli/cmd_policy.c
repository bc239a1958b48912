/*
 * vcpuplace policy DOMAIN|GLOB... [--smt=... ...] [--dry-run]: shows or changes the
 * vcpuplace policy of one domain, several, or every domain a glob matches (for operator
 * scripts). The policy lives in the domain's <metadata> and is written through libvirt
 * (virDomainSetMetadata), live and persistent, like `virsh metadata` would, then read back
 * so that what is printed is what libvirt holds. A running domain keeps its placement
 * until its next start.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "core/model/policy.h"
#include "libvirt/connection.h"
#include "libvirt/domxml.h"

#include <json-glib/json-glib.h>
#include <fnmatch.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
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

typedef struct {
    const char *field;
    const char *value;
} vpAttr;

/* The policy's attributes in the schema's order, each with its value (group: NULL when
 * none), so that the text and the JSON name them alike. */
#define VP_POLICY_NFIELDS 7
static void
policyFields(const vpPolicy *p, vpAttr fields[VP_POLICY_NFIELDS])
{
    fields[0] = (vpAttr){"smt", vpSmtName(p->smt)};
    fields[1] = (vpAttr){"group", p->group};
    fields[2] = (vpAttr){"coresched", vpCoreschedName(p->coresched)};
    fields[3] = (vpAttr){"locality", vpLocalityName(p->locality)};
    fields[4] = (vpAttr){"emulator", vpEmulatorName(p->emulator)};
    fields[5] = (vpAttr){"rebalance", vpRebalanceName(p->rebalance)};
    fields[6] = (vpAttr){"unmet", vpUnmetName(p->unmet)};
}

static JsonNode *
policyJson(const char *name, const vpPolicy *p, gboolean found, gboolean written)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    vpAttr fields[VP_POLICY_NFIELDS];

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "domain");
    json_builder_add_string_value(b, name);
    json_builder_set_member_name(b, "metadata");
    json_builder_add_boolean_value(b, found);
    json_builder_set_member_name(b, "written");
    json_builder_add_boolean_value(b, written);
    json_builder_set_member_name(b, "policy");
    json_builder_begin_object(b);
    policyFields(p, fields);
    for (gsize i = 0; i < G_N_ELEMENTS(fields); i++) {
        json_builder_set_member_name(b, fields[i].field);
        if (fields[i].value)
            json_builder_add_string_value(b, fields[i].value);
        else
            json_builder_add_null_value(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static void
printPolicy(const char *name, const vpPolicy *p, gboolean found)
{
    vpAttr fields[VP_POLICY_NFIELDS];

    policyFields(p, fields);
    printf("%s:", name);
    for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
        printf(" %s=%s", fields[i].field, fields[i].value ? fields[i].value : "-");
    printf("%s\n",
           found ? "" : " (no vcpuplace metadata: built-in defaults, the daemon's may differ)");
}

typedef struct {
    const vpAttr *changes;
    gsize nchanges;
    gboolean change; /* any change asked for */
    gboolean only_live, only_config, dry_run, json;
} vpPolicyRun;

/* One domain: show its policy, or change it (or say what would change). The result goes
 * to stdout as text, or into out as JSON. */
static int
policyOne(virDomainPtr dom, const vpPolicyRun *run, JsonArray *out)
{
    const char *name = virDomainGetName(dom);
    g_autoptr(GError) err = NULL;
    int active = virDomainIsActive(dom);
    int persistent = virDomainIsPersistent(dom);
    unsigned flags = 0;
    if (run->only_live || (!run->only_config && active == 1))
        flags |= VIR_DOMAIN_AFFECT_LIVE;
    if (run->only_config || (!run->only_live && persistent == 1))
        flags |= VIR_DOMAIN_AFFECT_CONFIG;
    /* Read from where we write: the running definition when it is among the targets. */
    unsigned readflags =
        flags & VIR_DOMAIN_AFFECT_LIVE ? VIR_DOMAIN_AFFECT_LIVE : VIR_DOMAIN_AFFECT_CONFIG;
    g_auto(vpPolicy) policy = {0};
    gboolean found = FALSE, written = FALSE;
    if (!readPolicy(dom, readflags, &policy, &found, &err))
        return vpLiveFail("policy", err);
    for (gsize i = 0; i < run->nchanges; i++) {
        if (run->changes[i].value &&
            !vpPolicySetAttr(&policy, run->changes[i].field, run->changes[i].value, &err))
            return vpLiveFail("policy", err);
    }
    if (run->change && !run->dry_run) {
        g_autofree char *xml = vpDomXMLFormatPolicy(&policy);
        if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, VP_XML_PREFIX, VP_XML_NS,
                                 flags) < 0) {
            vpVirSetError(&err, "domain '%s': cannot write its metadata", name);
            return vpLiveFail("policy", err);
        }
        vpPolicyClear(&policy);
        if (!readPolicy(dom, readflags, &policy, &found, &err))
            return vpLiveFail("policy", err);
        written = TRUE;
    }
    if (run->json) {
        json_array_add_element(out, policyJson(name, &policy, found || run->change, written));
        return VP_EXIT_OK;
    }
    printPolicy(name, &policy, found || run->change);
    if (!run->change)
        return VP_EXIT_OK;
    printf("%s the %s%s%s definition%s\n", written ? "  written to" : "  dry run: would write to",
           flags & VIR_DOMAIN_AFFECT_LIVE ? "running" : "",
           (flags & VIR_DOMAIN_AFFECT_LIVE) && (flags & VIR_DOMAIN_AFFECT_CONFIG) ? " and " : "",
           flags & VIR_DOMAIN_AFFECT_CONFIG ? "persistent" : "",
           active == 1 ? "; the placement changes at the next start" : "");
    return VP_EXIT_OK;
}

static void
domainUnref(gpointer dom)
{
    virDomainFree(dom);
}

static int
compareDomains(const void *a, const void *b)
{
    return strcmp(virDomainGetName(*(virDomainPtr const *)a),
                  virDomainGetName(*(virDomainPtr const *)b));
}

/* The domains the arguments name, in order, each once: a name as it is, a glob (*, ?,
 * [...]) as every domain it matches in name order, which must be at least one. */
static GPtrArray *
resolveDomains(virConnectPtr conn, char **args, int nargs, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(domainUnref);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    virDomainPtr *all = NULL;
    int nall = -1;

    for (int i = 0; i < nargs; i++) {
        if (!strpbrk(args[i], "*?[")) {
            virDomainPtr dom = vpLiveDomain(conn, args[i], error);
            if (!dom)
                goto fail;
            if (!g_hash_table_add(seen, g_strdup(args[i])))
                virDomainFree(dom);
            else
                g_ptr_array_add(out, dom);
            continue;
        }
        if (nall < 0) {
            if ((nall = virConnectListAllDomains(conn, &all, 0)) < 0) {
                vpVirSetError(error, "cannot list the domains");
                goto fail;
            }
            qsort(all, nall, sizeof(*all), compareDomains);
        }
        gboolean matched = FALSE;
        for (int d = 0; d < nall; d++) {
            const char *name = virDomainGetName(all[d]);
            if (fnmatch(args[i], name, 0) != 0)
                continue;
            matched = TRUE;
            if (g_hash_table_add(seen, g_strdup(name)) && virDomainRef(all[d]) == 0)
                g_ptr_array_add(out, all[d]);
        }
        if (!matched) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "no domain matches '%s'", args[i]);
            goto fail;
        }
    }
    for (int d = 0; d < nall; d++)
        virDomainFree(all[d]);
    free(all);
    return g_steal_pointer(&out);
fail:
    for (int d = 0; d < nall; d++)
        virDomainFree(all[d]);
    free(all);
    return NULL;
}

int
vpCmdPolicy(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    g_autofree char *smt = NULL, *group = NULL, *coresched = NULL, *locality = NULL;
    g_autofree char *emulator = NULL, *rebalance = NULL, *unmet = NULL, *cpus = NULL;
    g_autofree char *ratio = NULL;
    vpPolicyRun run = {0};
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
        {"cpus", 0, 0, G_OPTION_ARG_STRING, &cpus, "dedicated | shared", "KIND"},
        {"ratio", 0, 0, G_OPTION_ARG_STRING, &ratio, "vCPUs per CPU for shared (e.g. 4)", "R"},
        {"live", 0, 0, G_OPTION_ARG_NONE, &run.only_live, "change the running domain only", NULL},
        {"persistent", 0, 0, G_OPTION_ARG_NONE, &run.only_config,
         "change the persistent definition only", NULL},
        {"dry-run", 'n', 0, G_OPTION_ARG_NONE, &run.dry_run,
         "show what would be written, write nothing", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &run.json,
         "print the policy as JSON (in \"domains\" with several domains or a glob)", NULL},
        G_OPTION_ENTRY_NULL,
    };
    int rc =
        vpLiveParseOptions("policy", "DOMAIN|GLOB... - show or set the vcpuplace policy of domains",
                           entries, &live, &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (argc < 2) {
        fprintf(stderr, "vcpuplace policy: expected a DOMAIN (or several, or a glob)\n");
        return VP_EXIT_ERROR;
    }
    const vpAttr changes[] = {
        {"smt", smt},           {"group", group},       {"coresched", coresched},
        {"locality", locality}, {"emulator", emulator}, {"rebalance", rebalance},
        {"unmet", unmet},       {"cpus", cpus},         {"ratio", ratio},
    };
    run.changes = changes;
    run.nchanges = G_N_ELEMENTS(changes);
    for (gsize i = 0; i < G_N_ELEMENTS(changes); i++)
        run.change |= changes[i].value != NULL;

    g_autoptr(GError) err = NULL;
    g_autoptr(virConnect) conn = vpLiveConnect(&live, &err);
    if (!conn)
        return vpLiveFail("policy", err);
    g_autoptr(GPtrArray) doms = resolveDomains(conn, argv + 1, argc - 1, &err);
    if (!doms)
        return vpLiveFail("policy", err);
    /* One plain name gives the domain's object itself, as older scripts read it. */
    gboolean many = argc > 2 || strpbrk(argv[1], "*?[") != NULL;
    g_autoptr(JsonArray) out = json_array_new();
    int status = VP_EXIT_OK;
    for (guint i = 0; i < doms->len; i++) {
        rc = policyOne(doms->pdata[i], &run, out);
        if (rc != VP_EXIT_OK && status == VP_EXIT_OK)
            status = rc;
    }
    if (run.json && (many || json_array_get_length(out) > 0)) {
        g_autoptr(JsonObject) all = json_object_new();
        g_autoptr(JsonNode) root = json_node_new(JSON_NODE_OBJECT);
        json_object_set_array_member(all, "domains", json_array_ref(out));
        json_node_set_object(root, all);
        vpCliPrintJson(many ? root : json_array_get_element(out, 0));
    }
    return status;
}
