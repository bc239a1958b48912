/*
 * Shared plumbing of the live commands (status, policy, pin-config).
 */
#include "cli/live.h"
#include "cli/commands.h"
#include "conf/conf.h"
#include "core/error.h"
#include "proto/proto.h"
#include "libvirt/connection.h"

#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>

void
vpLiveAddOptions(GOptionContext *ctx, vpLiveOptions *o)
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

gboolean
vpLiveResolve(vpLiveOptions *o, GError **error)
{
    if (o->socket && o->uri)
        return TRUE;
    /* The daemon's reader: the CLI refuses the files vcpuplaced refuses. */
    char *why = NULL;
    vpConf *conf = vpConfLoad(o->config ? o->config : VP_DEFAULT_CONFIG, o->config == NULL, &why);
    if (!conf) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, why ? why : "out of memory");
        free(why);
        return FALSE;
    }
    if (!o->socket)
        o->socket = g_strdup(vpConfGet(conf, "daemon", "socket"));
    if (!o->uri)
        o->uri = g_strdup(vpConfGet(conf, "daemon", "uri"));
    vpConfFree(conf);
    return TRUE;
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
