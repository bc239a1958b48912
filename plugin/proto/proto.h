/*
 * The vcpuplaced socket protocol, and a client for it.
 *
 * JSON lines over a Unix stream socket: one request object per line, one reply per
 * request, in order. A request is {"op": NAME, ...}; a reply is {"ok": true, ...} or
 * {"ok": false, "error": TEXT, "refused": BOOL}, refused meaning "the policy cannot be met"
 * as opposed to "something is wrong". Operations, request members beside op and the
 * reply's beside ok (plugin/daemon/ops.c holds the table this list is checked against):
 *
 *   reserve    {name, xml}  hook, prepare begin: place and hold PUs, or refuse
 *              -> {plan}
 *   started    {name}       hook, started begin: pin now (after the reply)
 *              -> {}
 *   release    {name}       hook, stopped/release end: free the domain's PUs
 *              -> {}
 *   reconnect  {name}       hook, reconnect begin: resynchronise the domain
 *              -> {}
 *   rewrite    {name, xml}  hook, restore/migrate begin: the XML without vcpuplace's pins
 *              -> {xml?}
 *   status     {name?}      what each domain holds and why
 *              -> {uri, connected, mode, adopt_running, hook, config_error, domains, reported, ...}
 *   plan       {xml}        where the domain would go now, nothing recorded
 *              -> {plan}
 *   topology   {}           the host and who holds each CPU
 *              -> {source, host_cpus, housekeeping_cpus, ledger, owners}
 *   top        {}           the pressure figures per vCPU and CPU
 *              -> {mode, interval_s, intervals, vcpus: [...], cpus: [...]}
 *   rebalance  {dry_run?}   a rebalancing pass now, whatever the mode
 *              -> {dry_run, moves: [...], notes: [...]}
 *   metrics    {}           Prometheus text exposition
 *              -> {text}
 *
 * This library (GIO and json-glib) serves the daemon and the CLI; the hook has its own
 * client without GLib, hookclient.h.
 */
#pragma once

#include "conf/conf.h" /* VP_DEFAULT_SOCKET, VP_DEFAULT_CONFIG */

#include <gio/gio.h>
#include <json-glib/json-glib.h>

/* Longest line either side accepts, newline included: a domain XML of VP_DOMXML_MAX_BYTES
 * (4 MiB) escaped in JSON, where XML's quotes and line ends take two bytes each, and the
 * request around it. */
#define VP_PROTO_MAX_MESSAGE (8 * 1024 * 1024 + 65536)

/* What the CLI waits for an answer; the hook uses its own, much shorter, bound. */
#define VP_CLIENT_TIMEOUT_MS 10000

#define VP_CLIENT_ERROR vpClientErrorQuark()
GQuark vpClientErrorQuark(void);
typedef enum {
    VP_CLIENT_ERROR_UNREACHABLE, /* no daemon at the socket, or no answer in time */
    VP_CLIENT_ERROR_PROTOCOL,    /* the answer is not a reply */
    VP_CLIENT_ERROR_FAILED,      /* the daemon answered ok:false */
    VP_CLIENT_ERROR_REFUSED,     /* the daemon answered ok:false, refused:true */
} vpClientErrorCode;

/* One line of compact JSON with its newline (caller frees). */
char *vpProtoEncode(JsonNode *node, gsize *len);
/* One line without its newline -> the object it holds; errors say what is wrong. */
JsonObject *vpProtoDecodeObject(const char *line, gsize len, GError **error);

/* Whether op is one the hook asks (reserve, started, release, reconnect): the daemon keeps
 * connection slots for these, because a start waits on them. */
gboolean vpProtoIsHookOp(const char *op);

JsonNode *vpProtoReplyOk(JsonObject **object);
JsonNode *vpProtoReplyError(const char *message, gboolean refused);

/* A string member: NULL and an error naming the member when it is absent (required) or
 * not a string; NULL without error when it is absent and optional. */
const char *vpProtoGetString(JsonObject *obj, const char *member, gboolean required,
                             GError **error);

/* Sends req and waits at most timeout_ms for connect and reply together. Returns the
 * reply when it says ok:true; otherwise NULL with VP_CLIENT_ERROR. */
JsonNode *vpClientCallTimeout(const char *socket, JsonObject *req, int timeout_ms, GError **error);
JsonNode *vpClientCall(const char *socket, JsonObject *req, GError **error);
