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
 * Settings come from [daemon] in vcpuplaced.conf (socket, hook_failure, hook_timeout_ms,
 * domains, hook, mode), read with the daemon's own reader. A file the daemon refuses does
 * not make the hook refuse anything: vcpuplaced runs on its last good configuration and
 * answers as before, so the hook asks it, with the [daemon] lines that are right on their
 * own, and says (stderr, syslog) that the file is wrong. A domain outside domains= is never
 * vcpuplace's business, and in report mode nothing is refused.
 * libvirt clears the environment, so VCPUPLACE_CONFIG and VCPUPLACE_HOOK_FAILURE only
 * matter when the hook is run by hand. Its inputs are read in input.c.
 *
 * libc, jansson and plugin/conf only, and nothing read for operations it does not
 * handle: libvirt runs it three times per start.
 */
#include "conf/conf.h"
#include "hook/input.h"
#include "proto/hookclient.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

/* stderr reaches libvirt: in the error of a refused start, and in libvirtd's debug log
 * otherwise, which few hosts keep. A start that goes on unplaced also goes to syslog (the
 * journal, where there is one), so that an operator can find out why. */
static void __attribute__((format(printf, 2, 3))) report(bool log, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", msg);
    if (log) {
        openlog("vcpuplace-hook", LOG_PID, LOG_DAEMON);
        syslog(LOG_WARNING, "%s", msg);
        closelog();
    }
}

/* The daemon could not decide: the configured failure mode does. */
static int
failure(const vpHookConfig *cfg, const char *domain, bool is_start, const char *why)
{
    if (is_start && cfg->fail_closed && !cfg->report) {
        report(true,
               "vcpuplace: refusing to start %s: %s (hook_failure=closed: no start without "
               "vcpuplaced)",
               domain, why);
        return 1;
    }
    report(true, "vcpuplace: %s: %s; %s (hook_failure=open)", domain, why,
           is_start ? "starting it without vcpuplace placement" : "notification lost");
    return 0;
}

/* A rewrite that fails leaves the XML as it is: the domain then keeps the pins it comes
 * with, and the reserve that follows decides whether it may start. */
static int
keepXML(const char *domain, const char *why)
{
    report(true, "vcpuplace: %s: %s; its XML goes on unchanged", domain, why);
    return 0;
}

/* The domain's own XML is past what vcpuplaced reads: the tenant who writes its metadata
 * could otherwise make it start unplaced, over everyone's CPUs, by padding it. (A domain
 * vcpuplaced does not manage never gets this far.) */
static int
tooLarge(const vpHookConfig *cfg, const vpHookCall *hc, const char *why)
{
    if (hc->rewrites)
        return keepXML(hc->domain, why);
    if (cfg->report) {
        report(true, "vcpuplace: %s: %s; not refused (mode=report)", hc->domain, why);
        return 0;
    }
    report(true, "vcpuplace: refusing to start %s: %s", hc->domain, why);
    return 1;
}

static int
call(const vpHookConfig *cfg, const vpHookCall *hc, const char *xml)
{
    char why[512];
    size_t len = 0;
    char *line = vpHookRequest(hc, xml, &len, why, sizeof(why));
    if (!line)
        return hc->rewrites ? keepXML(hc->domain, why)
                            : failure(cfg, hc->domain, hc->is_start, why);
    vpHookReply reply;
    vpHookCallDaemon(cfg->socket, line, len, cfg->timeout_ms, &reply);
    free(line);
    int rc = 0;
    if (hc->rewrites) {
        if (reply.status != VP_HOOK_OK)
            rc = keepXML(hc->domain, reply.what);
        else if (reply.xml)
            fputs(reply.xml, stdout);
    } else if (reply.status == VP_HOOK_REFUSED) {
        report(false, "vcpuplace: refusing to start %s: %s", hc->domain, reply.what);
        rc = 1;
    } else if (reply.status != VP_HOOK_OK) {
        rc = failure(cfg, hc->domain, hc->is_start, reply.what);
    }
    vpHookReplyClear(&reply);
    return rc;
}

/* No setlocale(): messages are not translated, and loading locale files costs a start. */
int
main(int argc, char **argv)
{
    vpHookCall hc;
    char why[512];
    if (argc == 2 && strcmp(argv[1], "--version") == 0)
        return printf("vcpuplace-hook %s\n", PROJECT_VERSION) < 0;
    if (!vpHookParseArgs(argc, argv, &hc, why, sizeof(why))) {
        if (*why)
            fprintf(stderr, "%s\n", why);
        return 0;
    }

    const char *path = getenv("VCPUPLACE_CONFIG");
    vpHookConfig cfg;
    char *error = NULL;
    if (!vpHookConfigLoad(&cfg, path ? path : VP_DEFAULT_CONFIG, path == NULL, &error)) {
        report(true, "vcpuplace: %s: %s; %s goes on untouched", hc.domain,
               error ? error : "out of memory", hc.request);
        free(error);
        vpHookConfigClear(&cfg);
        return 0;
    }

    /* Disabled in the configuration rather than by deleting a packaged file, which an
     * upgrade would put back. */
    if (cfg.off || !vpConfManages(cfg.domains, hc.domain)) {
        vpHookConfigClear(&cfg);
        return 0;
    }
    if (cfg.bad && hc.is_start)
        report(true, "vcpuplace: %s: %s; vcpuplaced answers on its last good configuration",
               hc.domain, cfg.bad);
    char *xml = NULL;
    int rc;
    if (hc.wants_xml) {
        size_t len = 0;
        bool too_large = false;
        xml = vpHookReadXML(STDIN_FILENO, VP_HOOK_MAX_XML, &len, &too_large, why, sizeof(why));
        if (!xml) {
            rc = too_large     ? tooLarge(&cfg, &hc, why)
                 : hc.rewrites ? keepXML(hc.domain, why)
                               : failure(&cfg, hc.domain, true, why);
            vpHookConfigClear(&cfg);
            return rc;
        }
    }
    rc = call(&cfg, &hc, xml);
    free(xml);
    vpHookConfigClear(&cfg);
    return rc;
}
