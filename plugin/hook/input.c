/*
 * The hook's inputs. See input.h.
 */
#include "hook/input.h"
#include "proto/proto.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

gboolean
vpHookParseArgs(int argc, char **argv, vpHookCall *call, char **why)
{
    *why = NULL;
    if (argc != 5) {
        *why = g_strdup_printf("vcpuplace: hook called with %d arguments, expected 4 (DOMAIN OP "
                               "SUBOP EXTRA); ignored",
                               argc - 1);
        return FALSE;
    }
    const char *op = argv[2], *subop = argv[3];
    memset(call, 0, sizeof(*call));
    call->domain = argv[1];
    if (strcmp(op, "prepare") == 0 && strcmp(subop, "begin") == 0) {
        call->request = "reserve";
        call->wants_xml = TRUE;
        call->is_start = TRUE;
    } else if ((strcmp(op, "restore") == 0 || strcmp(op, "migrate") == 0) &&
               strcmp(subop, "begin") == 0) {
        call->request = "rewrite";
        call->wants_xml = TRUE;
        call->rewrites = TRUE;
    } else if (strcmp(op, "started") == 0 && strcmp(subop, "begin") == 0) {
        call->request = "started";
    } else if ((strcmp(op, "stopped") == 0 || strcmp(op, "release") == 0) &&
               strcmp(subop, "end") == 0) {
        call->request = "release";
    } else if (strcmp(op, "reconnect") == 0 && strcmp(subop, "begin") == 0) {
        call->request = "reconnect";
    } else {
        return FALSE;
    }
    /* The name goes into a JSON string: the daemon refuses what is not UTF-8 anyway. */
    if (!*call->domain || !g_utf8_validate(call->domain, -1, NULL)) {
        *why = g_strdup("vcpuplace: hook called with an empty or non-UTF-8 domain name; ignored");
        return FALSE;
    }
    return TRUE;
}

void
vpHookConfigLoad(vpHookConfig *cfg, const char *path, char **warning)
{
    *warning = NULL;
    cfg->socket = g_strdup(VP_DEFAULT_SOCKET);
    cfg->fail_closed = FALSE;
    cfg->timeout_ms = VP_HOOK_TIMEOUT_DEFAULT_MS;

    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) err = NULL;
    if (g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &err)) {
        g_autofree char *sock = g_key_file_get_string(kf, "daemon", "socket", NULL);
        g_autofree char *mode = g_key_file_get_string(kf, "daemon", "hook_failure", NULL);
        g_autofree char *timeout = g_key_file_get_string(kf, "daemon", "hook_timeout_ms", NULL);
        if (sock && *sock) {
            g_free(cfg->socket);
            cfg->socket = g_steal_pointer(&sock);
        }
        if (mode)
            cfg->fail_closed = strcmp(mode, "closed") == 0;
        guint64 ms;
        if (timeout && g_ascii_string_to_unsigned(timeout, 10, 1, 60000, &ms, NULL))
            cfg->timeout_ms = (int)ms;
    } else if (!g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
        *warning =
            g_strdup_printf("vcpuplace: cannot read %s (%s); using defaults", path, err->message);
    }
    const char *env = g_getenv("VCPUPLACE_HOOK_FAILURE");
    if (env)
        cfg->fail_closed = strcmp(env, "closed") == 0;
}

void
vpHookConfigClear(vpHookConfig *cfg)
{
    g_clear_pointer(&cfg->socket, g_free);
}

char *
vpHookReadXML(int fd, gsize limit, gsize *len, char **why)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[65536];
    *why = NULL;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *why = g_strdup_printf("cannot read the domain XML on stdin: %s", g_strerror(errno));
            return NULL;
        }
        if (n == 0)
            break;
        if (buf->len + (gsize)n > limit) {
            *why = g_strdup_printf("domain XML on stdin exceeds %" G_GSIZE_FORMAT " bytes", limit);
            return NULL;
        }
        g_byte_array_append(buf, chunk, n);
    }
    if (buf->len == 0 || memchr(buf->data, '\0', buf->len) ||
        !g_utf8_validate((const char *)buf->data, buf->len, NULL)) {
        *why = g_strdup("no usable domain XML on stdin (empty, NUL bytes or not UTF-8)");
        return NULL;
    }
    *len = buf->len;
    g_byte_array_append(buf, (const guint8 *)"", 1);
    return (char *)g_byte_array_free(g_steal_pointer(&buf), FALSE);
}

JsonObject *
vpHookRequest(const vpHookCall *call, const char *xml)
{
    JsonObject *req = json_object_new();
    json_object_set_string_member(req, "op", call->request);
    json_object_set_string_member(req, "name", call->domain);
    if (xml)
        json_object_set_string_member(req, "xml", xml);
    return req;
}
