/*
 * vcpuplace rebalance [--dry-run]: asks vcpuplaced for a rebalancing pass now, from its
 * current pressure figures, and prints each move with its reason and each hotspot left
 * alone with why. With --dry-run nothing moves.
 */
#include "cli/commands.h"
#include "cli/live.h"
#include "proto/proto.h"

#include <stdio.h>

static void
printMoves(GPtrArray *moves, gboolean dry)
{
    for (guint i = 0; i < moves->len; i++) {
        JsonObject *m = moves->pdata[i];
        const char *error = json_object_get_string_member_with_default(m, "error", NULL);
        gboolean applied = json_object_get_boolean_member_with_default(m, "applied", FALSE);
        printf("%s: %s vCPU %" G_GINT64_FORMAT ": CPU %" G_GINT64_FORMAT " -> CPU %" G_GINT64_FORMAT
               "\n  why: %s\n",
               dry       ? "would move"
               : applied ? "moved"
                         : "NOT moved",
               json_object_get_string_member_with_default(m, "domain", "?"),
               json_object_get_int_member_with_default(m, "vcpu", -1),
               json_object_get_int_member_with_default(m, "from", -1),
               json_object_get_int_member_with_default(m, "to", -1),
               json_object_get_string_member_with_default(m, "reason", "?"));
        if (error)
            printf("  error: %s\n", error);
    }
}

int
vpCmdRebalance(int argc, char **argv)
{
    g_auto(vpLiveOptions) live = {0};
    gboolean json = FALSE, dry = FALSE;
    GOptionEntry entries[] = {
        {"dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry, "only say what would move and why", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the daemon's JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    int rc = vpLiveParseOptions("rebalance",
                                "- move waiting vCPUs now, from vcpuplaced's current pressure",
                                entries, &live, &argc, &argv);
    if (rc != VP_EXIT_OK)
        return rc;
    if (!vpCliNoArguments("rebalance", argc, argv))
        return VP_EXIT_ERROR;

    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "op", "rebalance");
    json_object_set_boolean_member(req, "dry_run", dry);
    g_autoptr(JsonNode) reply = vpClientCall(live.socket, req, &err);
    if (!reply)
        return vpLiveFail("rebalance", err);
    JsonObject *o = json_node_get_object(reply);
    g_autoptr(GPtrArray) moves = vpLiveEntries(o, "moves");
    JsonArray *notes = vpLiveArray(o, "notes");
    guint failed = 0;
    for (guint i = 0; !dry && i < moves->len; i++)
        failed += !json_object_get_boolean_member_with_default(moves->pdata[i], "applied", FALSE);
    if (json) {
        json_object_remove_member(o, "ok");
        vpCliPrintJson(reply);
        return failed ? VP_EXIT_ERROR : VP_EXIT_OK;
    }
    if (moves->len == 0)
        printf("%s\n", dry ? "nothing would move" : "nothing moved");
    printMoves(moves, dry);
    for (guint i = 0; notes && i < json_array_get_length(notes); i++) {
        JsonNode *n = json_array_get_element(notes, i);
        if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
            printf("left alone: %s\n", json_node_get_string(n));
    }
    return failed ? VP_EXIT_ERROR : VP_EXIT_OK;
}
