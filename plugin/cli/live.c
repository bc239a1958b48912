/*
 * Shared plumbing of the live commands (status, policy, pin-config, and topology and
 * capacity with --live).
 */
#include "cli/live.h"
#include "cli/commands.h"
#include "conf/conf.h"
#include "core/model/error.h"
#include "core/model/request.h"
#include "host/hwtopo.h"
#include "proto/proto.h"
#include "libvirt/connection.h"

#include <libvirt/virterror.h>
#include <stdio.h>

static void
addOptions(GOptionContext *ctx, vpLiveOptions *o)
{
    GOptionEntry entries[] = {
        {"config", 0, 0, G_OPTION_ARG_FILENAME, &o->config,
         "vcpuplaced configuration to take the socket and URI from (default " VP_DEFAULT_CONFIG ")",
         "FILE"},
        {"socket", 0, 0, G_OPTION_ARG_FILENAME, &o->socket, "vcpuplaced's socket", "PATH"},
        {"connect", 'c', 0, G_OPTION_ARG_STRING, &o->uri, "libvirt URI", "URI"},
        G_OPTION_ENTRY_NULL,
    };
    g_option_context_add_main_entries(ctx, entries, NULL);
}

static gboolean
resolve(vpLiveOptions *o, GError **error)
{
    if (o->socket && o->uri)
        return TRUE;
    vpConf *conf =
        vpCliConfLoad(o->config ? o->config : VP_DEFAULT_CONFIG, o->config == NULL, error);
    if (!conf)
        return FALSE;
    if (!o->socket)
        o->socket = g_strdup(vpConfGet(conf, "daemon", "socket"));
    if (!o->uri)
        o->uri = g_strdup(vpConfGet(conf, "daemon", "uri"));
    vpConfFree(conf);
    return TRUE;
}

int
vpLiveParseOptions(const char *cmd, const char *parameters, const GOptionEntry *entries,
                   vpLiveOptions *o, int *argc, char ***argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(parameters);
    g_autoptr(GError) error = NULL;

    if (entries)
        g_option_context_add_main_entries(ctx, entries, NULL);
    addOptions(ctx, o);
    if (!g_option_context_parse(ctx, argc, argv, &error) || !resolve(o, &error))
        return vpLiveFail(cmd, error);
    return VP_EXIT_OK;
}

void
vpLiveClear(vpLiveOptions *o)
{
    g_clear_pointer(&o->config, g_free);
    g_clear_pointer(&o->socket, g_free);
    g_clear_pointer(&o->uri, g_free);
}

virConnectPtr
vpLiveConnect(const vpLiveOptions *o, GError **error)
{
    vpVirSilence();
    virConnectPtr conn = virConnectOpen(o->uri);
    if (!conn)
        vpVirSetError(error, "cannot connect to libvirt at %s", o->uri);
    return conn;
}

virDomainPtr
vpLiveDomain(virConnectPtr conn, const char *name, GError **error)
{
    virDomainPtr dom = virDomainLookupByName(conn, name);
    if (!dom)
        vpVirSetError(error, "domain '%s'", name);
    return dom;
}

static hwloc_bitmap_t
replySet(JsonObject *o, const char *member, GError **error)
{
    JsonNode *n = json_object_get_member(o, member);

    if (!n || JSON_NODE_HOLDS_NULL(n))
        return NULL;
    if (json_node_get_value_type(n) != G_TYPE_STRING) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "daemon reply: %s is not a CPU list",
                    member);
        return NULL;
    }
    return vpCpuListParse(member, json_node_get_string(n), error);
}

/* The daemon's view: its topology source and CPU sets, loaded here the same way, and its
 * ledger read through the same strict reader as a file. */
gboolean
vpCliLoadLive(const vpCliOptions *opts, const char *socket, vpTopology **topo, vpLedger **ledger,
              GError **error)
{
    g_auto(vpLiveOptions) live = {.config = g_strdup(opts->config), .socket = g_strdup(socket)};
    g_autoptr(JsonObject) req = json_object_new();
    g_autoptr(JsonNode) reply = NULL;
    g_autoptr(vpBitmap) host = NULL;
    g_autoptr(vpBitmap) hk = NULL;
    JsonObject *o;
    JsonNode *lnode;

    if (!resolve(&live, error))
        return FALSE;
    json_object_set_string_member(req, "op", "topology");
    if (!(reply = vpClientCall(live.socket, req, error)))
        return FALSE;
    o = json_node_get_object(reply);
    if (!json_object_has_member(o, "source") || !(lnode = json_object_get_member(o, "ledger"))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "daemon reply lacks source or ledger");
        return FALSE;
    }
    host = replySet(o, "host_cpus", error);
    if (error && *error)
        return FALSE;
    hk = replySet(o, "housekeeping_cpus", error);
    if (error && *error)
        return FALSE;
    if (!(*topo = vpHwtopoLoad(json_object_get_string_member(o, "source"), host, hk, error)))
        return FALSE;
    if (!(*ledger = vpLedgerFromJson(*topo, lnode, error))) {
        g_prefix_error(error, "daemon ledger: ");
        return FALSE;
    }
    return TRUE;
}

static void
addHeldOptions(GOptionContext *ctx, vpCliHeldOptions *o)
{
    GOptionEntry entries[] = {
        {"ledger", 'l', 0, G_OPTION_ARG_FILENAME, &o->ledger,
         "ledger (JSON) of the CPUs already held", "FILE"},
        {"live", 0, 0, G_OPTION_ARG_NONE, &o->live,
         "the running daemon's topology and ledger (socket from --config or --socket)", NULL},
        {"socket", 's', 0, G_OPTION_ARG_FILENAME, &o->socket, "the daemon's socket (with --live)",
         "PATH"},
        G_OPTION_ENTRY_NULL,
    };
    g_option_context_add_main_entries(ctx, entries, NULL);
}

void
vpCliHeldOptionsClear(vpCliHeldOptions *o)
{
    g_clear_pointer(&o->ledger, g_free);
    g_clear_pointer(&o->socket, g_free);
}

static gboolean
heldCheck(const char *cmd, const vpCliOptions *opts, const vpCliHeldOptions *o)
{
    if (!o->live || !(o->ledger || opts->topology || opts->host_cpus || opts->housekeeping))
        return TRUE;
    fprintf(stderr,
            "vcpuplace %s: --live takes the topology, CPU sets and ledger from the daemon; "
            "drop --ledger, --topology, --host-cpus, --housekeeping\n",
            cmd);
    return FALSE;
}

gboolean
vpCliParseHeldOptions(GOptionContext *ctx, const GOptionEntry *entries, vpCliOptions *opts,
                      vpCliHeldOptions *o, const char *cmd, int *argc, char ***argv)
{
    addHeldOptions(ctx, o);
    return vpCliParseOptions(ctx, entries, opts, cmd, argc, argv) &&
           vpCliNoArguments(cmd, *argc, *argv) && heldCheck(cmd, opts, o);
}

int
vpCliLoadHeld(const char *cmd, const vpCliOptions *opts, const vpCliHeldOptions *o,
              vpTopology **topo, vpLedger **ledger)
{
    g_autoptr(GError) error = NULL;

    if (o->live)
        return vpCliLoadLive(opts, o->socket, topo, ledger, &error) ? VP_EXIT_OK
                                                                    : vpLiveFail(cmd, error);
    if (!(*topo = vpCliLoadTopology(opts, &error)) ||
        !(*ledger = vpCliLoadLedger(*topo, o->ledger, &error))) {
        vpCliError(cmd, error);
        return VP_EXIT_ERROR;
    }
    return VP_EXIT_OK;
}

int
vpLiveFail(const char *cmd, const GError *error)
{
    fprintf(stderr, "vcpuplace %s: %s\n", cmd, error->message);
    if (error->domain == VP_CLIENT_ERROR && error->code == VP_CLIENT_ERROR_REFUSED)
        return VP_EXIT_REFUSED;
    if (error->domain == VP_CLIENT_ERROR && error->code == VP_CLIENT_ERROR_UNREACHABLE)
        return VP_EXIT_UNREACHABLE;
    return VP_EXIT_ERROR;
}

JsonArray *
vpLiveArray(JsonObject *o, const char *member)
{
    JsonNode *n = json_object_get_member(o, member);
    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

GPtrArray *
vpLiveEntries(JsonObject *o, const char *member)
{
    JsonArray *a = vpLiveArray(o, member);
    GPtrArray *out = g_ptr_array_new();

    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        if (JSON_NODE_HOLDS_OBJECT(n))
            g_ptr_array_add(out, json_node_get_object(n));
    }
    return out;
}

JsonObject *
vpLiveObject(JsonObject *o, const char *member)
{
    JsonNode *n = json_object_get_member(o, member);
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

char *
vpLiveIntText(JsonObject *o, const char *member)
{
    JsonNode *n = json_object_get_member(o, member);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
        return g_strdup("-");
    return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(n));
}
