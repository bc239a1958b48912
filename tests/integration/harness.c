#include "harness.h"

#include <glib/gstdio.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char *tmpdir;
char *confpath;

void
setupTmp(void)
{
    tmpdir = g_dir_make_tmp("vp-integration-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmpdir);
    confpath = g_build_filename(tmpdir, "vcpuplaced.conf", NULL);
}

void
teardownTmp(void)
{
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    g_clear_pointer(&tmpdir, g_free);
    g_clear_pointer(&confpath, g_free);
}

void
writeConfig(const char *uri, const char *topology, const char *extra)
{
    g_autofree char *text =
        g_strdup_printf("[daemon]\nmode=enforce\nadopt_running=yes\nuri=%s\ntopology=%s\n"
                        "socket=%s/sock\nstate=%s/state/ledger.json\n%s",
                        uri, topology, tmpdir, tmpdir, extra ? extra : "");
    ck_assert(g_file_set_contents(confpath, text, -1, NULL));
}

GLogWriterOutput
quietWriter(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
        return g_log_writer_standard_streams(level, fields, n, data);
    return G_LOG_WRITER_HANDLED;
}

void
waitIdle(vpDaemon *d)
{
    /* Check's per-test timeout bounds a daemon that never settles. */
    while (vpDaemonBusy(d))
        g_main_context_iteration(NULL, TRUE);
    while (g_main_context_iteration(NULL, FALSE))
        ;
    while (vpDaemonBusy(d))
        g_main_context_iteration(NULL, TRUE);
}

vpDaemon *
startDaemonWith(vpDaemonDomainFunc listener, gpointer data)
{
    g_autoptr(GError) err = NULL;
    vpConfig *cfg = vpConfigLoad(confpath, &err);
    ck_assert_msg(cfg, "config: %s", err ? err->message : "");
    vpDaemon *d = vpDaemonNew(cfg, &err);
    ck_assert_msg(d, "daemon: %s", err ? err->message : "");
    if (listener)
        vpDaemonOnDomain(d, listener, data);
    vpDaemonStart(d);
    ck_assert(vpDaemonConnected(d));
    waitIdle(d);
    return d;
}

vpDaemon *
startDaemon(void)
{
    return startDaemonWith(NULL, NULL);
}

char *
domainXML(const char *name, unsigned vcpus, const char *policy, const char *cputune)
{
    return g_strdup_printf(
        "<domain type='test'><name>%s</name><memory>65536</memory>"
        "<vcpu>%u</vcpu><os><type>hvm</type></os>%s%s%s%s</domain>",
        name, vcpus, policy ? "<metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS "' " : "",
        policy ? policy : "", policy ? "/></metadata>" : "", cputune ? cputune : "");
}

virDomainPtr
define(virConnectPtr conn, const char *xml)
{
    virDomainPtr dom = virDomainDefineXML(conn, xml);
    ck_assert_msg(dom, "define: %s", virGetLastErrorMessage());
    return dom;
}

typedef struct {
    gboolean done;
    int status;
    char *out;
    char *err;
} vpRun;

static void
runDone(GObject *src, GAsyncResult *res, gpointer data)
{
    vpRun *r = data;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(
        g_subprocess_communicate_utf8_finish(G_SUBPROCESS(src), res, &r->out, &r->err, &err),
        "communicate: %s", err->message);
    r->status = g_subprocess_get_if_exited(G_SUBPROCESS(src))
                    ? g_subprocess_get_exit_status(G_SUBPROCESS(src))
                    : 128 + g_subprocess_get_term_sig(G_SUBPROCESS(src));
    r->done = TRUE;
}

int
run(const char *const *argv, const char *input, char **out, char **errout)
{
    /* stdin from a file: a program that exits without reading it (as the hook does for
     * operations it ignores) must not turn into a broken pipe here. */
    g_autofree char *inpath = g_build_filename(tmpdir, "stdin", NULL);
    ck_assert(g_file_set_contents(inpath, input ? input : "", -1, NULL));
    g_autoptr(GSubprocessLauncher) l =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_set_stdin_file_path(l, inpath);
    g_subprocess_launcher_setenv(l, "VCPUPLACE_CONFIG", confpath, TRUE);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, argv, &err);
    ck_assert_msg(p, "spawn %s: %s", argv[0], err ? err->message : "");
    vpRun r = {0};
    g_subprocess_communicate_utf8_async(p, NULL, NULL, runDone, &r);
    while (!r.done)
        g_main_context_iteration(NULL, TRUE);
    if (r.status != 0 && !errout)
        fprintf(stderr, "%s: %s", argv[0], r.err);
    if (out)
        *out = g_steal_pointer(&r.out);
    if (errout)
        *errout = g_steal_pointer(&r.err);
    g_free(r.out);
    g_free(r.err);
    return r.status;
}

int
runNow(const char *const *argv, const char *input, char **errout)
{
    /* stdin from a file of its own, as in run(): the hook exits without reading it for a
     * release, and a pipe would then fail the write whenever the hook is quicker. Callers
     * may run at once on two threads, hence a fresh file. */
    g_autoptr(GError) err = NULL;
    g_autofree char *inpath = NULL;
    int fd = g_file_open_tmp("vp-run-XXXXXX", &inpath, &err);

    ck_assert_msg(fd >= 0, "stdin file: %s", err ? err->message : "");
    close(fd);
    ck_assert(g_file_set_contents(inpath, input ? input : "", -1, NULL));
    g_autoptr(GSubprocessLauncher) l =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_set_stdin_file_path(l, inpath);
    g_subprocess_launcher_setenv(l, "VCPUPLACE_CONFIG", confpath, TRUE);
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, argv, &err);
    ck_assert_msg(p, "spawn %s: %s", argv[0], err ? err->message : "");
    /* The synchronous form runs a main context of its own, not the daemon's. */
    ck_assert_msg(g_subprocess_communicate_utf8(p, NULL, NULL, NULL, errout, &err),
                  "communicate: %s", err ? err->message : "");
    g_unlink(inpath);
    return g_subprocess_get_exit_status(p);
}
