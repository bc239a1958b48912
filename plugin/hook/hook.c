/*
 * vcpuplace-hook: libvirt's QEMU hook (/etc/libvirt/hooks/qemu.d/vcpuplace).
 *
 * libvirt runs it synchronously as `vcpuplace DOMAIN OP SUBOP EXTRA` with the domain XML
 * on stdin and waits, holding the domain, so it must be quick and must never call libvirt.
 * It forwards the few events vcpuplaced cares about over the socket and maps the answer
 * to an exit status: non-zero refuses a start, and libvirt shows our stderr in the error.
 * At restore and migrate begin it prints the XML vcpuplaced rewrote, which libvirt then
 * uses (pins applied where the domain ran before are taken out).
 * Everything else, including arguments it does not understand, exits 0: a placement
 * helper must not break unrelated libvirt operations.
 *
 * Settings come from [daemon] in vcpuplaced.conf (socket, hook_failure, hook_timeout_ms);
 * libvirt clears the environment, so VCPUPLACE_CONFIG and VCPUPLACE_HOOK_FAILURE only
 * matter when the hook is run by hand. Its inputs are read in input.c.
 */
#include "proto/proto.h"
#include "hook/input.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* A rewrite that fails leaves the XML as it is: the domain then keeps the pins it comes
 * with, and the reserve that follows decides whether it may start. */
static int
keepXML(const char *domain, const char *why)
{
    g_autofree char *msg =
        g_strdup_printf("vcpuplace: %s: %s; its XML goes on unchanged", domain, why);
    report(msg);
    return 0;
}

static int
rewrite(const vpHookCall *hc, JsonNode *reply, const GError *err)
{
    if (!reply)
        return keepXML(hc->domain, err->message);
    JsonNode *xml = json_object_get_member(json_node_get_object(reply), "xml");
    if (xml && JSON_NODE_HOLDS_VALUE(xml) && json_node_get_value_type(xml) == G_TYPE_STRING)
        fputs(json_node_get_string(xml), stdout);
    return 0;
}

static int
call(const vpHookConfig *cfg, const vpHookCall *hc, const char *xml)
{
    g_autoptr(JsonObject) req = vpHookRequest(hc, xml);
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) reply = vpClientCallTimeout(cfg->socket, req, cfg->timeout_ms, &err);
    if (hc->rewrites)
        return rewrite(hc, reply, err);
    if (reply)
        return 0;
    if (g_error_matches(err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_REFUSED)) {
        fprintf(stderr, "vcpuplace: refusing to start %s: %s\n", hc->domain, err->message);
        return 1;
    }
    return failure(cfg, hc->domain, hc->is_start, err->message);
}

/* No setlocale(): messages are not translated, and loading locale files costs a start. */
int
main(int argc, char **argv)
{
    vpHookCall hc;
    g_autofree char *why = NULL;
    if (argc == 2 && strcmp(argv[1], "--version") == 0)
        return printf("vcpuplace-hook %s\n", PROJECT_VERSION) < 0;
    if (!vpHookParseArgs(argc, argv, &hc, &why)) {
        if (why)
            fprintf(stderr, "%s\n", why);
        return 0;
    }

    const char *path = g_getenv("VCPUPLACE_CONFIG");
    g_auto(vpHookConfig) cfg = {0};
    g_autofree char *warning = NULL;
    vpHookConfigLoad(&cfg, path ? path : VP_DEFAULT_CONFIG, &warning);
    if (warning)
        fprintf(stderr, "%s\n", warning);

    g_autofree char *xml = NULL;
    if (hc.wants_xml) {
        gsize len = 0;
        /* Half the message bound: JSON escaping may grow the text. */
        xml = vpHookReadXML(STDIN_FILENO, VP_PROTO_MAX_MESSAGE / 2, &len, &why);
        if (!xml && hc.rewrites)
            return keepXML(hc.domain, why);
        if (!xml)
            return failure(&cfg, hc.domain, TRUE, why);
    }
    return call(&cfg, &hc, xml);
}
