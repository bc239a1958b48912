/*
 * vcpuplace top: vcpuplaced's per-vCPU pressure, refreshed each of its intervals (or once),
 * as a table or as JSON (one object per refresh, a line each unless --once).
 * vcpuplace metrics: the daemon's Prometheus text exposition.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "proto/proto.h"

#include <glib-unix.h>
#include <stdio.h>
#include <unistd.h>

static double
dbl(JsonObject *o, const char *member)
{
    JsonNode *n = json_object_get_member(o, member);
    if (!n || !JSON_NODE_HOLDS_VALUE(n))
        return 0;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_DOUBLE)
        return json_node_get_double(n);
    if (t == G_TYPE_INT64)
        return json_node_get_int(n);
    return 0;
}
static void
printTable(JsonObject *o)
{
    printf("vcpuplaced: mode %s, interval %.1f s, %" G_GINT64_FORMAT
           " intervals measured, %" G_GINT64_FORMAT " moves\n",
           json_object_get_string_member_with_default(o, "mode", "?"), dbl(o, "interval_s"),
           (gint64)dbl(o, "intervals"), (gint64)dbl(o, "moves_total"));
    g_autoptr(GPtrArray) vcpus = vpLiveEntries(o, "vcpus");
    printf("%-24s %4s %4s %8s %6s %6s %9s %5s\n", "DOMAIN", "VCPU", "CPU", "TID", "RUN%", "WAIT%",
           "WAKEUPS/S", "MOVES");
    for (guint i = 0; i < vcpus->len; i++) {
        JsonObject *e = vcpus->pdata[i];
        g_autofree char *vcpu = vpLiveIntText(e, "vcpu");
        g_autofree char *cpu = vpLiveIntText(e, "cpu");
        g_autofree char *tid = vpLiveIntText(e, "tid");
        g_autofree char *moves = vpLiveIntText(e, "moves");
        printf("%-24s %4s %4s %8s %6.1f %6.1f %9.0f %5s%s\n",
               json_object_get_string_member_with_default(e, "domain", "?"), vcpu, cpu, tid,
               dbl(e, "run") * 100, dbl(e, "wait") * 100, dbl(e, "wakeups"), moves,
               dbl(e, "time_shared") > 1 ? "  (CPU time-shared)" : "");
    }
    if (vcpus->len == 0)
        printf("(no vCPU measured yet)\n");
    g_autoptr(GPtrArray) cpus = vpLiveEntries(o, "cpus");
    printf("%-4s %6s %6s  %s\n", "CPU", "BUSY%", "WAIT%", "STATE");
    for (guint i = 0; i < cpus->len; i++) {
        JsonObject *e = cpus->pdata[i];
        g_autofree char *cpu = vpLiveIntText(e, "cpu");
        const char *state = json_object_get_boolean_member_with_default(e, "hot", FALSE)    ? "hot"
                            : json_object_get_boolean_member_with_default(e, "idle", FALSE) ? "idle"
                                                                                            : "-";
        printf("%-4s %6.1f %6.1f  %s%s\n", cpu, dbl(e, "busy") * 100, dbl(e, "wait") * 100, state,
               json_object_get_boolean_member_with_default(e, "usable", TRUE) ? ""
                                                                              : " (not usable)");
    }
}

typedef struct {
    const char *socket;
    gboolean json;
    GMainLoop *loop;
    int status;
    gboolean tty;
    double interval_s; /* the daemon's, from its last answer */
} vpTop;

static JsonNode *
fetch(const char *socket, GError **error)
{
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "top");
    return vpClientCall(socket, req, error);
}

/* One refresh; FALSE when the daemon did not answer (the error is printed). */
static gboolean
show(vpTop *t, gboolean once)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) reply = fetch(t->socket, &err);
    if (!reply) {
        t->status = vpLiveFail("top", err);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(reply);
    json_object_remove_member(o, "ok");
    t->interval_s = dbl(o, "interval_s");
    if (t->json) {
        g_autofree char *text = vpCliJsonText(reply, once);
        printf("%s\n", text);
    } else {
        if (!once)
            printf(t->tty ? "\033[H\033[2J" : "\n");
        printTable(o);
    }
    fflush(stdout);
    return TRUE;
}

static gboolean
onRefresh(gpointer data)
{
    vpTop *t = data;
    if (show(t, FALSE))
        return G_SOURCE_CONTINUE;
    g_main_loop_quit(t->loop);
    return G_SOURCE_REMOVE;
}

static gboolean
onStop(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_CONTINUE;
}

int
vpCmdTop(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    gboolean json = FALSE, once = FALSE;
    GOptionEntry entries[] = {
        {"once", 0, 0, G_OPTION_ARG_NONE, &once, "print once and exit", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "the daemon's JSON (pretty with --once, else one line per refresh)", NULL},
        G_OPTION_ENTRY_NULL,
    };
    int rc = vpLiveParseOptions("top", "- vcpuplaced's per-vCPU run, wait and wakeups, live",
                                entries, &live, &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (!vpCliNoArguments("top", argc, argv))
        return VP_EXIT_ERROR;

    vpTop t = {.socket = live.socket, .json = json, .tty = isatty(STDOUT_FILENO)};
    if (!show(&t, once))
        return t.status;
    if (once)
        return VP_EXIT_OK;

    /* Refresh at the daemon's own pace: a faster one would show the same averages. */
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    t.loop = loop;
    guint timer =
        g_timeout_add(t.interval_s > 0 ? (guint)(t.interval_s * 1000) : 1000, onRefresh, &t);
    guint intr = g_unix_signal_add(SIGINT, onStop, loop);
    guint term = g_unix_signal_add(SIGTERM, onStop, loop);
    g_main_loop_run(loop);
    if (!t.status)
        g_source_remove(timer);
    g_source_remove(intr);
    g_source_remove(term);
    return t.status;
}

int
vpCmdMetrics(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    int rc = vpLiveParseOptions("metrics", "- vcpuplaced's metrics in Prometheus text format", NULL,
                                &live, &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (!vpCliNoArguments("metrics", argc, argv))
        return VP_EXIT_ERROR;
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "metrics");
    g_autoptr(JsonNode) reply = vpClientCall(live.socket, req, &err);
    if (!reply)
        return vpLiveFail("metrics", err);
    const char *text =
        json_object_get_string_member_with_default(json_node_get_object(reply), "text", NULL);
    if (!text) {
        fprintf(stderr, "vcpuplace metrics: the daemon's reply has no text\n");
        return VP_EXIT_ERROR;
    }
    fputs(text, stdout);
    return VP_EXIT_OK;
}
