/*
 * vcpuplace status [DOMAIN]: what vcpuplaced holds for each managed domain, asked over its
 * socket: vCPU -> CPU with core, L3 and NUMA node; policy; how the placement came about;
 * what is degraded or failed; the last vCPU moves made to make room for a start.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "proto/proto.h"

#include <stdio.h>
#include <string.h>

static const char *
str(JsonObject *o, const char *member, const char *fallback)
{
    JsonNode *n = json_object_get_member(o, member);
    if (!n || json_node_get_value_type(n) != G_TYPE_STRING)
        return fallback;
    return json_node_get_string(n);
}

/* "admission moves: 3 made, 1 start's refused by libvirt (max 2 per start)" and the last
 * moves, newest first. */
static void
printAdmission(JsonObject *o)
{
    JsonObject *ad = vpLiveObject(o, "admission");
    if (!ad)
        return;
    g_autofree char *made = vpLiveIntText(ad, "moves_total");
    g_autofree char *failed = vpLiveIntText(ad, "failures_total");
    g_autofree char *max = vpLiveIntText(ad, "max_moves");
    printf("admission moves: %s made, %s starts' moves refused by libvirt (at most %s per "
           "start)\n",
           made, failed, max);
    g_autoptr(GPtrArray) recent = vpLiveEntries(ad, "recent");
    for (guint i = 0; i < recent->len; i++) {
        JsonObject *m = recent->pdata[i];
        g_autofree char *vcpu = vpLiveIntText(m, "vcpu");
        g_autofree char *from = vpLiveIntText(m, "from");
        g_autofree char *to = vpLiveIntText(m, "to");
        gboolean applied = json_object_get_boolean_member_with_default(m, "applied", FALSE);
        printf("  for %s: %s vCPU %s CPU %s -> %s %s%s\n", str(m, "start", "?"),
               str(m, "domain", "?"), vcpu, from, to,
               applied ? "moved" : "NOT MOVED: ", applied ? "" : str(m, "error", "?"));
    }
}

static void
printPolicy(JsonObject *dom)
{
    JsonNode *pn = json_object_get_member(dom, "policy");
    if (!pn || !JSON_NODE_HOLDS_OBJECT(pn))
        return;
    JsonObject *p = json_node_get_object(pn);
    printf("  policy: smt=%s group=%s coresched=%s locality=%s emulator=%s rebalance=%s "
           "unmet=%s\n",
           str(p, "smt", "?"), str(p, "group", "-"), str(p, "coresched", "?"),
           str(p, "locality", "?"), str(p, "emulator", "?"), str(p, "rebalance", "?"),
           str(p, "unmet", "?"));
}

/* Per thread: the cookie it should carry (its set, and the id once it exists) and the one
 * it carries, as the daemon's last pass read them. */
static void
printCookies(JsonObject *dom)
{
    JsonObject *cs = vpLiveObject(dom, "coresched");
    if (!cs)
        return;
    const char *reason = str(cs, "reason", NULL);
    printf("  cookies: %s, coresched=%s, set %s on %s threads%s%s%s\n", str(cs, "state", "?"),
           str(cs, "policy", "?"), str(cs, "set", "-"), str(cs, "scope", "?"),
           str(cs, "cookie", NULL) ? ", cookie " : "", str(cs, "cookie", ""),
           json_object_get_boolean_member_with_default(cs, "kept", FALSE) ? " (kept)" : "");
    if (reason)
        printf("  cookies: %s\n", reason);
    g_autoptr(GPtrArray) threads = vpLiveEntries(cs, "threads");
    if (threads->len == 0)
        return;
    printf("  %-8s %-16s %-22s %-12s %s\n", "TID", "thread", "expected", "actual", "state");
    for (guint i = 0; i < threads->len; i++) {
        JsonObject *t = threads->pdata[i];
        g_autofree char *tid = vpLiveIntText(t, "tid");
        g_autofree char *expected = g_strdup_printf(
            "%s%s%s%s", str(t, "expected", "-"), str(t, "expected_id", NULL) ? " (" : "",
            str(t, "expected_id", ""), str(t, "expected_id", NULL) ? ")" : "");
        printf("  %-8s %-16s %-22s %-12s %s\n", tid, str(t, "name", "?"), expected,
               str(t, "actual", "-"), str(t, "state", "?"));
    }
}

/* "  " and the cells, each but the last padded to 5 */
static void
printCells(const char *const *cells, guint n)
{
    printf("  ");
    for (guint i = 0; i < n; i++)
        printf(i + 1 < n ? "%-5s " : "%s\n", cells[i]);
}

/* vCPU -> CPU with its core, L3 and NUMA node and the thread, a line each; nothing when the
 * daemon sent no "vcpus". */
static void
printVcpus(JsonObject *dom)
{
    static const char *const titles[] = {"vCPU", "CPU", "core", "L3", "NUMA", "TID"};
    static const char *const members[] = {"vcpu", "cpu", "core", "l3", "numa", "tid"};
    G_STATIC_ASSERT(G_N_ELEMENTS(titles) == G_N_ELEMENTS(members));

    if (!vpLiveArray(dom, "vcpus"))
        return;
    printCells(titles, G_N_ELEMENTS(titles));
    g_autoptr(GPtrArray) vcpus = vpLiveEntries(dom, "vcpus");
    for (guint i = 0; i < vcpus->len; i++) {
        char *cells[G_N_ELEMENTS(members)];
        for (guint k = 0; k < G_N_ELEMENTS(members); k++)
            cells[k] = vpLiveIntText(vcpus->pdata[i], members[k]);
        printCells((const char *const *)cells, G_N_ELEMENTS(cells));
        for (guint k = 0; k < G_N_ELEMENTS(cells); k++)
            g_free(cells[k]);
    }
}

static void
printDomain(JsonObject *dom)
{
    JsonNode *deg = json_object_get_member(dom, "degraded");
    gboolean degraded =
        deg && json_node_get_value_type(deg) == G_TYPE_BOOLEAN && json_node_get_boolean(deg);
    printf("%s: %s, %s%s\n", str(dom, "domain", "?"), str(dom, "state", "?"),
           str(dom, "how", "nothing held"), degraded ? ", DEGRADED" : "");
    g_autofree char *pid = vpLiveIntText(dom, "pid");
    if (strcmp(pid, "-") != 0)
        printf("  QEMU pid: %s\n", pid);
    printPolicy(dom);
    const char *level = str(dom, "level", NULL);
    if (level)
        printf("  level: %s\n", level);
    printVcpus(dom);
    printf("  emulator: %s  reserved idle: %s\n", str(dom, "emulator", "-"),
           str(dom, "reserved", "-"));
    printCookies(dom);
    gint64 beside = json_object_get_int_member_with_default(dom, "beside_others", 0);
    if (beside > 0)
        printf("  beside other cookies: %" G_GINT64_FORMAT
               " vCPU%s share a core with another cookie "
               "(smt=pack, no whole core was left)\n",
               beside, beside == 1 ? "" : "s");
    if (degraded)
        printf("  degraded: %s\n", str(dom, "degraded_reason", "?"));
    const char *error = str(dom, "error", NULL);
    if (error)
        printf("  note: %s\n", error);
}

/* Where a reported domain's vCPUs would go, from its would-be plan. */
static void
printReported(JsonObject *rep)
{
    const char *refused = str(rep, "refused", NULL);
    printf("%s: reported, not placed (%s)\n", str(rep, "domain", "?"), str(rep, "why", "?"));
    JsonObject *plan = vpLiveObject(rep, "plan");
    if (!plan) {
        printf("  would be refused: %s\n", refused ? refused : "?");
        return;
    }
    g_autoptr(GString) cpus = g_string_new(NULL);
    g_autoptr(GPtrArray) vcpus = vpLiveEntries(plan, "vcpus");
    for (guint i = 0; i < vcpus->len; i++) {
        g_autofree char *cpu = vpLiveIntText(vcpus->pdata[i], "cpu");
        g_string_append_printf(cpus, "%s%s", i ? "," : "", cpu);
    }
    printf("  would be %s on CPUs %s\n", str(plan, "how", "?"), cpus->str);
}

/* The mode first: an operator must not mistake a report for placement. */
static void
printMode(JsonObject *o)
{
    gboolean report = g_strcmp0(str(o, "mode", NULL), "report") == 0;
    printf("mode: %s%s; running domains not admitted by the hook: %s; hook %s\n",
           str(o, "mode", "?"), report ? " (nothing pinned or refused)" : "",
           json_object_get_boolean_member_with_default(o, "adopt_running", FALSE) ? "adopted"
                                                                                  : "reported",
           json_object_get_boolean_member_with_default(o, "hook", TRUE) ? "on" : "OFF");
    const char *bad = str(o, "config_error", NULL);
    if (bad)
        printf("CONFIGURATION NOT LOADED, running on the last good one: %s\n", bad);
}

int
vpCmdStatus(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the daemon's JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    int rc = vpLiveParseOptions("status", "[DOMAIN] - placement of managed domains", entries, &live,
                                &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (argc > 2) {
        fprintf(stderr, "vcpuplace status: one DOMAIN at most\n");
        return VP_EXIT_ERROR;
    }

    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "status");
    if (argc == 2)
        json_object_set_string_member(req, "name", argv[1]);
    g_autoptr(JsonNode) reply = vpClientCall(live.socket, req, &err);
    if (!reply)
        return vpLiveFail("status", err);
    JsonObject *o = json_node_get_object(reply);
    if (json) {
        json_object_remove_member(o, "ok");
        vpCliPrintJson(reply);
        return VP_EXIT_OK;
    }
    printf("vcpuplaced: libvirt %s (%s), topology %s\n", str(o, "uri", "?"),
           json_object_get_boolean_member_with_default(o, "connected", FALSE) ? "connected"
                                                                              : "DISCONNECTED",
           str(o, "topology", "?"));
    printMode(o);
    JsonObject *cs = vpLiveObject(o, "coresched");
    if (cs)
        printf("core scheduling: kernel %s%s%s; libvirt sched_core=%s (%s)\n",
               str(cs, "kernel", "?"), str(cs, "kernel_reason", NULL) ? ": " : "",
               str(cs, "kernel_reason", ""), str(cs, "libvirt_sched_core", "?"),
               str(cs, "qemu_conf", "?"));
    JsonObject *hp = vpLiveObject(o, "hotplug");
    if (hp) {
        g_autofree char *poll = vpLiveIntText(hp, "poll_ms");
        printf("vCPU hotplug: QEMU events %s; vCPU counts re-read every %s ms\n",
               str(hp, "qemu_events", "-"), poll);
    }
    printAdmission(o);
    g_autoptr(GPtrArray) doms = vpLiveEntries(o, "domains");
    if (doms->len == 0)
        printf("no managed domains\n");
    for (guint i = 0; i < doms->len; i++)
        printDomain(doms->pdata[i]);
    g_autoptr(GPtrArray) reported = vpLiveEntries(o, "reported");
    for (guint i = 0; i < reported->len; i++)
        printReported(reported->pdata[i]);
    return VP_EXIT_OK;
}
