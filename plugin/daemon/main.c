/*
 * vcpuplaced: places and pins the vCPUs of libvirt's QEMU guests. See daemon.h.
 */
#include "daemon/daemon.h"
#include "proto/proto.h"
#include "host/hwtopo.h"

#include <glib-unix.h>
#include <locale.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

static gboolean verbose;

/* journald when stderr is connected to it (systemd), stderr otherwise; debug only with -v. */
static GLogWriterOutput
writer(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    if ((level & G_LOG_LEVEL_DEBUG) && !verbose)
        return G_LOG_WRITER_HANDLED;
    if (g_log_writer_is_journald(fileno(stderr)) &&
        g_log_writer_journald(level, fields, n, data) == G_LOG_WRITER_HANDLED)
        return G_LOG_WRITER_HANDLED;
    return g_log_writer_standard_streams(level, fields, n, data);
}

static gboolean
onSignal(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_CONTINUE;
}

static gboolean
onHangup(gpointer data)
{
    g_autoptr(GError) err = NULL;
    if (!vpDaemonReload(data, &err))
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "reload failed, running on as before: %s", err->message);
    return G_SOURCE_CONTINUE;
}

typedef struct {
    char *config;
    gboolean check;
} vpOptions;

/* The command line into opts; an exit status when the process is done (an error, or
 * --version), -1 to go on. */
static int
parseOptions(int *argc, char ***argv, vpOptions *opts)
{
    gboolean version = FALSE;
    GOptionEntry entries[] = {
        {"config", 'c', 0, G_OPTION_ARG_FILENAME, &opts->config,
         "configuration file (default " VP_DEFAULT_CONFIG ")", "FILE"},
        {"check-config", 0, 0, G_OPTION_ARG_NONE, &opts->check,
         "validate the configuration and the topology, then exit", NULL},
        {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "log debug messages", NULL},
        {"version", 'V', 0, G_OPTION_ARG_NONE, &version, "print the version, then exit", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(ctx, "Places the vCPUs of libvirt's QEMU guests on host CPUs.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(ctx, "Built-in defaults, for what the configuration leaves "
                                          "out:\n  socket (default " VP_DEFAULT_SOCKET ")\n"
                                          "  ledger (default " VP_DEFAULT_STATE ")\n"
                                          "  libvirt (default " VP_DEFAULT_URI ")\n");
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &err)) {
        fprintf(stderr, "vcpuplaced: %s\n", err->message);
        return 1;
    }
    if (*argc > 1) {
        fprintf(stderr, "vcpuplaced: unexpected argument '%s'\n", (*argv)[1]);
        return 1;
    }
    if (version) {
        printf("vcpuplaced %s\n", PROJECT_VERSION);
        return 0;
    }
    return -1;
}

/* --check-config: the configuration was read; the topology it names must load too. */
static int
checkConfig(const vpConfig *cfg)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpTopology) topo = vpConfigLoadTopology(cfg, &err);
    if (!topo) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "MESSAGE", "topology %s: %s",
                         cfg->topology ? cfg->topology : "host", err->message);
        return 1;
    }
    g_autofree char *list = vpCpuListFormat(vpTopologyUsableSet(topo));
    printf("configuration %s: ok; topology %s: %d PUs, %d cores, usable CPUs %s\n",
           cfg->path ? cfg->path : "(built-in defaults)", vpTopologyGetSource(topo),
           vpTopologyNPUs(topo), vpTopologyNCores(topo), list);
    return 0;
}

/* Runs the daemon on cfg (taken) until SIGTERM or SIGINT; SIGHUP reloads. */
static int
serve(vpConfig *cfg)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    g_autoptr(vpDaemon) d = vpDaemonNew(cfg, &err);
    if (!d) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "MESSAGE", "%s", err->message);
        return 1;
    }
    guint term = g_unix_signal_add(SIGTERM, onSignal, loop);
    guint intr = g_unix_signal_add(SIGINT, onSignal, loop);
    guint hup = g_unix_signal_add(SIGHUP, onHangup, d);
    vpDaemonStart(d);
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                     "vcpuplaced %s listening on %s, libvirt %s", PROJECT_VERSION,
                     vpDaemonConfig(d)->socket, vpDaemonConfig(d)->uri);
    /* The socket listens: the hook can be answered, so libvirt (ordered after us) may start.
     * Outside systemd NOTIFY_SOCKET is unset and this does nothing. */
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s", vpDaemonConfig(d)->socket);
    g_main_loop_run(loop);
    sd_notify(0, "STOPPING=1");
    g_source_remove(term);
    g_source_remove(intr);
    g_source_remove(hup);
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE", "vcpuplaced stopping");
    return 0;
}

int
main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    vpOptions opts = {0};
    int done = parseOptions(&argc, &argv, &opts);
    g_autofree char *config = opts.config;
    if (done >= 0)
        return done;
    g_log_set_writer_func(writer, NULL, NULL);

    g_autoptr(GError) err = NULL;
    vpConfig *cfg = vpConfigLoad(config, &err);
    if (!cfg) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "MESSAGE", "%s", err->message);
        return 1;
    }
    if (opts.check) {
        g_autoptr(vpConfig) owned = cfg;
        return checkConfig(owned);
    }
    return serve(cfg);
}
