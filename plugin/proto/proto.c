/*
 * JSON-lines encoding and the blocking client. The client runs one deadline across
 * connect, send and receive with a non-blocking socket, because the hook's whole budget
 * is a few hundred milliseconds and GSocket's own timeouts count whole seconds.
 */
#include "proto/proto.h"

#include "core/codec/jsonkeys.h"
#include "core/codec/jsonparse.h"

#include <gio/gunixsocketaddress.h>
#include <string.h>

GQuark
vpClientErrorQuark(void)
{
    return g_quark_from_static_string("vp-client-error-quark");
}

char *
vpProtoEncode(JsonNode *node, gsize *len)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, node);
    gsize n = 0;
    g_autofree char *text = json_generator_to_data(gen, &n);
    /* json-glib writes strings as they are, and some carry bytes cut from outside input
     * (a parser's message quoting a truncated token): a peer must always get UTF-8, or the
     * hook would read a refusal as a broken daemon and fail open. The generator's own
     * syntax is ASCII, so replacing bad bytes only touches string contents. */
    if (!g_utf8_validate(text, n, NULL)) {
        char *valid = g_utf8_make_valid(text, n);
        g_free(text);
        text = valid;
        n = strlen(text);
    }
    char *line = g_malloc(n + 2);
    memcpy(line, text, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    if (len)
        *len = n + 1;
    return line;
}

JsonObject *
vpProtoDecodeObject(const char *line, gsize len, GError **error)
{
    if (len == 0) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL, "empty message");
        return NULL;
    }
    if (memchr(line, '\0', len)) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "message contains a NUL byte");
        return NULL;
    }
    g_autoptr(GError) err = NULL;
    JsonObject *obj = vpJsonParseObject(line, len, &err);
    if (!obj)
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL, "invalid JSON: %s",
                    err->message);
    return obj;
}

gboolean
vpProtoIsHookOp(const char *op)
{
    static const char *const hook_ops[] = {"reserve", "started", "release", "reconnect"};
    for (gsize i = 0; i < G_N_ELEMENTS(hook_ops); i++)
        if (strcmp(op, hook_ops[i]) == 0)
            return TRUE;
    return FALSE;
}

JsonNode *
vpProtoReplyOk(JsonObject **object)
{
    JsonObject *obj = json_object_new();
    json_object_set_boolean_member(obj, "ok", TRUE);
    json_object_set_int_member(obj, "format", VP_JSON_FORMAT);
    JsonNode *node = json_node_init_object(json_node_alloc(), obj);
    if (object)
        *object = obj;
    json_object_unref(obj);
    return node;
}

JsonNode *
vpProtoReplyError(const char *message, gboolean refused)
{
    JsonObject *obj = json_object_new();
    json_object_set_boolean_member(obj, "ok", FALSE);
    json_object_set_string_member(obj, "error", message);
    json_object_set_boolean_member(obj, "refused", refused);
    json_object_set_int_member(obj, "format", VP_JSON_FORMAT);
    JsonNode *node = json_node_init_object(json_node_alloc(), obj);
    json_object_unref(obj);
    return node;
}

const char *
vpProtoGetString(JsonObject *obj, const char *member, gboolean required, GError **error)
{
    JsonNode *node = json_object_get_member(obj, member);
    if (!node) {
        if (required)
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL, "member '%s' is missing",
                        member);
        return NULL;
    }
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL, "member '%s' is not a string",
                    member);
        return NULL;
    }
    return json_node_get_string(node);
}

/* Waits for cond until the deadline (monotonic us). */
static gboolean
waitFor(GSocket *sock, GIOCondition cond, gint64 deadline, const char *what, const char *path,
        GError **error)
{
    gint64 left = deadline - g_get_monotonic_time();
    g_autoptr(GError) err = NULL;
    if (left <= 0 || !g_socket_condition_timed_wait(sock, cond, left, NULL, &err)) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE,
                    "no %s from vcpuplaced at %s within the time limit%s%s", what, path,
                    err ? ": " : "", err ? err->message : "");
        return FALSE;
    }
    return TRUE;
}

static GSocket *
clientConnect(const char *path, gint64 deadline, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GSocket) sock =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &err);
    if (!sock) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE, "socket: %s",
                    err->message);
        return NULL;
    }
    g_socket_set_blocking(sock, FALSE);
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    if (!g_socket_connect(sock, addr, NULL, &err)) {
        if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_PENDING)) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE,
                        "cannot connect to vcpuplaced at %s: %s", path, err->message);
            return NULL;
        }
        g_clear_error(&err);
        if (!waitFor(sock, G_IO_OUT, deadline, "connection", path, error))
            return NULL;
        if (!g_socket_check_connect_result(sock, &err)) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE,
                        "cannot connect to vcpuplaced at %s: %s", path, err->message);
            return NULL;
        }
    }
    return g_steal_pointer(&sock);
}

static gboolean
clientSend(GSocket *sock, const char *data, gsize len, gint64 deadline, const char *path,
           GError **error)
{
    gsize done = 0;
    while (done < len) {
        g_autoptr(GError) err = NULL;
        gssize n = g_socket_send(sock, data + done, len - done, NULL, &err);
        if (n < 0 && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            if (!waitFor(sock, G_IO_OUT, deadline, "room to send", path, error))
                return FALSE;
            continue;
        }
        if (n < 0) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE,
                        "cannot send to vcpuplaced at %s: %s", path, err->message);
            return FALSE;
        }
        done += n;
    }
    return TRUE;
}

/* Reads one line (without its newline) within the deadline and the size bound. */
static GByteArray *
clientReceive(GSocket *sock, gint64 deadline, const char *path, GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    char chunk[16384];
    for (;;) {
        g_autoptr(GError) err = NULL;
        gssize n = g_socket_receive(sock, chunk, sizeof(chunk), NULL, &err);
        if (n < 0 && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            if (!waitFor(sock, G_IO_IN, deadline, "reply", path, error))
                return NULL;
            continue;
        }
        if (n < 0) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_UNREACHABLE,
                        "cannot read from vcpuplaced at %s: %s", path, err->message);
            return NULL;
        }
        if (n == 0) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                        "vcpuplaced at %s closed the connection without a reply", path);
            return NULL;
        }
        const char *nl = memchr(chunk, '\n', n);
        g_byte_array_append(buf, (const guint8 *)chunk, nl ? (guint)(nl - chunk) : (guint)n);
        if (buf->len >= VP_PROTO_MAX_MESSAGE) {
            g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                        "reply from vcpuplaced exceeds %d bytes", VP_PROTO_MAX_MESSAGE);
            return NULL;
        }
        if (nl)
            return g_steal_pointer(&buf);
    }
}

/* One connection, one request; *retry says the daemon was full for now. */
static JsonNode *
clientCallOnce(const char *socket, const char *line, gsize len, gint64 deadline, gboolean *retry,
               GError **error)
{
    *retry = FALSE;
    g_autoptr(GSocket) sock = clientConnect(socket, deadline, error);
    if (!sock)
        return NULL;
    /* The daemon may answer and close before reading a word (a peer that is not root, too
     * many connections): its reply, waiting in our receive buffer, says more than EPIPE. */
    g_autoptr(GError) send_err = NULL;
    gboolean sent = clientSend(sock, line, len, deadline, socket, &send_err);
    g_autoptr(GByteArray) buf = clientReceive(sock, deadline, socket, sent ? error : NULL);
    if (!buf) {
        if (!sent)
            g_propagate_error(error, g_steal_pointer(&send_err));
        return NULL;
    }

    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) reply = vpProtoDecodeObject((const char *)buf->data, buf->len, &err);
    if (!reply) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "bad reply from vcpuplaced: %s", err->message);
        return NULL;
    }
    JsonNode *ok = json_object_get_member(reply, "ok");
    if (!ok || json_node_get_value_type(ok) != G_TYPE_BOOLEAN) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "bad reply from vcpuplaced: member 'ok' is missing or not a boolean");
        return NULL;
    }
    if (!json_node_get_boolean(ok)) {
        const char *msg = vpProtoGetString(reply, "error", FALSE, NULL);
        JsonNode *again = json_object_get_member(reply, "retry");
        *retry = again && json_node_get_value_type(again) == G_TYPE_BOOLEAN &&
                 json_node_get_boolean(again);
        gboolean refused =
            json_object_has_member(reply, "refused") &&
            json_node_get_value_type(json_object_get_member(reply, "refused")) == G_TYPE_BOOLEAN &&
            json_object_get_boolean_member(reply, "refused");
        g_set_error_literal(error, VP_CLIENT_ERROR,
                            refused ? VP_CLIENT_ERROR_REFUSED : VP_CLIENT_ERROR_FAILED,
                            msg ? msg : "vcpuplaced reported an error without a message");
        return NULL;
    }
    return json_node_init_object(json_node_alloc(), reply);
}

/* A daemon with every slot taken says "retry": as the hook does, the request is made again,
 * a little later each time, until the deadline. */
JsonNode *
vpClientCallTimeout(const char *socket, JsonObject *req, int timeout_ms, GError **error)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_autoptr(JsonNode) reqnode = json_node_init_object(json_node_alloc(), req);
    gsize len = 0;
    g_autofree char *line = vpProtoEncode(reqnode, &len);
    if (len > VP_PROTO_MAX_MESSAGE) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "request of %zu bytes exceeds the protocol limit of %d", len,
                    VP_PROTO_MAX_MESSAGE);
        return NULL;
    }
    guint pause_ms = 1;
    for (;;) {
        g_autoptr(GError) err = NULL;
        gboolean retry;
        JsonNode *reply = clientCallOnce(socket, line, len, deadline, &retry, &err);
        if (reply || !retry || g_get_monotonic_time() + pause_ms * 1000 >= deadline) {
            if (!reply)
                g_propagate_error(error, g_steal_pointer(&err));
            return reply;
        }
        g_usleep(pause_ms * 1000);
        pause_ms = MIN(pause_ms * 2, 16);
    }
}

JsonNode *
vpClientCall(const char *socket, JsonObject *req, GError **error)
{
    return vpClientCallTimeout(socket, req, VP_CLIENT_TIMEOUT_MS, error);
}
