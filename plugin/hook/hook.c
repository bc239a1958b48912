/*
 * vcpuplace-hook: libvirt's QEMU hook (/etc/libvirt/hooks/qemu.d/vcpuplace).
 *
 * libvirt runs it synchronously as `vcpuplace DOMAIN OP SUBOP EXTRA` with the domain XML
 * on stdin and waits, holding the domain, so it must be quick and must never call libvirt.
 * It forwards the few events vcpuplaced cares about over the socket and maps the answer
 * to an exit status: non-zero refuses a start, and libvirt shows our stderr in the error.
 * Everything else, including arguments it does not understand, exits 0: a placement
 * helper must not break unrelated libvirt operations.
 *
 * Settings come from [daemon] in vcpuplaced.conf (socket, hook_failure, hook_timeout_ms);
 * libvirt clears the environment, so VCPUPLACE_CONFIG and VCPUPLACE_HOOK_FAILURE only
 * matter when the hook is run by hand.
 */
#include "daemon/proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HOOK_TIMEOUT_DEFAULT_MS 500

typedef struct {
    char *socket;
    gboolean fail_closed;
    int timeout_ms;
} vpHookConfig;

/* The hook reads only its own three keys and tolerates the rest: validating the whole
 * file is the daemon's job, and a hook that failed on it would block every start. */
static void
loadConfig(vpHookConfig *cfg)
{
    const char *path = g_getenv("VCPUPLACE_CONFIG");
    if (!path)
        path = VP_DEFAULT_CONFIG;
    cfg->socket = g_strdup(VP_DEFAULT_SOCKET);
    cfg->timeout_ms = HOOK_TIMEOUT_DEFAULT_MS;

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
        fprintf(stderr, "vcpuplace: cannot read %s (%s); using defaults\n", path, err->message);
    }
    const char *env = g_getenv("VCPUPLACE_HOOK_FAILURE");
    if (env)
        cfg->fail_closed = strcmp(env, "closed") == 0;
}

/* Reads stdin up to limit bytes; NULL (and *too_big) when it holds more. */
static char *
readStdin(gsize limit, gsize *len, gboolean *too_big)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[65536];
    *too_big = FALSE;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (buf->len + (gsize)n > limit) {
            *too_big = TRUE;
            return NULL;
        }
        g_byte_array_append(buf, chunk, n);
    }
    *len = buf->len;
    g_byte_array_append(buf, (const guint8 *)"", 1);
    return (char *)g_byte_array_free(g_steal_pointer(&buf), FALSE);
}

/* stderr reaches libvirt: in the error of a refused start, and in libvirtd's debug log
 * otherwise, which few hosts keep. A start that goes on unplaced also goes to the journal
 * where there is one, so that an operator can find out why. */
static void
report(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    if (!g_file_test("/run/systemd/journal/socket", G_FILE_TEST_EXISTS))
        return;
    const GLogField fields[] = {
        {"MESSAGE", msg, -1},
        {"PRIORITY", "4", -1},
        {"SYSLOG_IDENTIFIER", "vcpuplace-hook", -1},
    };
    g_log_writer_journald(G_LOG_LEVEL_WARNING, fields, G_N_ELEMENTS(fields), NULL);
}

/* The daemon could not decide: the configured failure mode does. */
static int
failure(const vpHookConfig *cfg, const char *domain, gboolean is_start, const char *why)
{
    g_autofree char *msg = NULL;
    if (is_start && cfg->fail_closed) {
        msg = g_strdup_printf("vcpuplace: refusing to start %s: %s (hook_failure=closed: no "
                              "start without vcpuplaced)",
                              domain, why);
        report(msg);
        return 1;
    }
    msg =
        g_strdup_printf("vcpuplace: %s: %s; %s (hook_failure=open)", domain, why,
                        is_start ? "starting it without vcpuplace placement" : "notification lost");
    report(msg);
    return 0;
}

static int
call(const vpHookConfig *cfg, const char *op, const char *domain, const char *xml)
{
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", op);
    json_object_set_string_member(req, "name", domain);
    if (xml)
        json_object_set_string_member(req, "xml", xml);
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) reply = vpClientCallTimeout(cfg->socket, req, cfg->timeout_ms, &err);
    if (reply)
        return 0;
    gboolean is_start = strcmp(op, "reserve") == 0;
    if (g_error_matches(err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_REFUSED)) {
        fprintf(stderr, "vcpuplace: refusing to start %s: %s\n", domain, err->message);
        return 1;
    }
    return failure(cfg, domain, is_start, err->message);
}

/* No setlocale(): messages are not translated, and loading locale files costs a start. */
int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr,
                "vcpuplace: hook called with %d arguments, expected 4 (DOMAIN OP SUBOP "
                "EXTRA); ignored\n",
                argc - 1);
        return 0;
    }
    const char *domain = argv[1], *op = argv[2], *subop = argv[3];
    const char *request = NULL;
    gboolean wants_xml = FALSE;
    if (strcmp(op, "prepare") == 0 && strcmp(subop, "begin") == 0) {
        request = "reserve";
        wants_xml = TRUE;
    } else if (strcmp(op, "started") == 0 && strcmp(subop, "begin") == 0) {
        request = "started";
    } else if ((strcmp(op, "stopped") == 0 || strcmp(op, "release") == 0) &&
               strcmp(subop, "end") == 0) {
        request = "release";
    } else if (strcmp(op, "reconnect") == 0 && strcmp(subop, "begin") == 0) {
        request = "reconnect";
    } else {
        return 0;
    }
    if (!*domain) {
        fprintf(stderr, "vcpuplace: hook called with an empty domain name; ignored\n");
        return 0;
    }

    vpHookConfig cfg = {0};
    loadConfig(&cfg);
    g_autofree char *socket = cfg.socket;
    g_autofree char *xml = NULL;
    if (wants_xml) {
        gsize len = 0;
        gboolean too_big = FALSE;
        /* Half the message bound: JSON escaping may grow the text. */
        xml = readStdin(VP_PROTO_MAX_MESSAGE / 2, &len, &too_big);
        if (!xml || len == 0 || memchr(xml, '\0', len) || !g_utf8_validate(xml, len, NULL)) {
            g_autofree char *why =
                too_big ? g_strdup_printf("domain XML on stdin exceeds %d bytes",
                                          VP_PROTO_MAX_MESSAGE / 2)
                        : g_strdup("no usable domain XML on stdin (empty, NUL bytes or not "
                                   "UTF-8)");
            return failure(&cfg, domain, TRUE, why);
        }
    }
    return call(&cfg, request, domain, xml);
}
