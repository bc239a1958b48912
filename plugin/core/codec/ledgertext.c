/*
 * The ledger as JSON and as the text of its file (host/ledgerfile.c writes it): written
 * domain by domain in name order, read back through vpLedgerAdd() so that a file can never
 * double-book a CPU.
 */
#include "core/model/ledger.h"
#include "core/codec/jsonkeys.h"
#include "core/codec/jsonparse.h"

#include <string.h>

/* plans: vpPlan, in name order. */
static JsonNode *
plansToJson(const vpTopology *topo, const GPtrArray *plans)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format");
    json_builder_add_int_value(b, VP_JSON_FORMAT);
    json_builder_set_member_name(b, "domains");
    json_builder_begin_array(b);
    for (guint i = 0; i < plans->len; i++)
        json_builder_add_value(b, vpPlanToJson(plans->pdata[i], topo));
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

JsonNode *
vpLedgerToJson(const vpLedger *ledger)
{
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++)
        names->pdata[i] = (gpointer)vpLedgerLookup(ledger, names->pdata[i]);
    return plansToJson(vpLedgerTopology(ledger), names);
}

vpLedger *
vpLedgerFromJson(const vpTopology *topo, JsonNode *node, GError **error)
{
    static const char *const keys[] = {"format", "domains", NULL};
    static const char *const legacy_keys[] = {"version", "domains", NULL};
    const char *format;
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    JsonObject *obj;
    JsonNode *member;
    JsonArray *domains;
    guint i;

    if (!node || !JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger is not a JSON object");
        return NULL;
    }
    obj = json_node_get_object(node);
    /* Ledgers before the common JSON vocabulary said "version": 1, and their plans "pu" for
     * a CPU and -1 for none: the plan reader takes both spellings, so an upgrade keeps it. */
    format = json_object_has_member(obj, "version") && !json_object_has_member(obj, "format")
                 ? "version"
                 : "format";
    member = json_object_get_member(obj, format);
    if (!member || !JSON_NODE_HOLDS_VALUE(member) ||
        json_node_get_value_type(member) != G_TYPE_INT64 ||
        json_node_get_int(member) != VP_JSON_FORMAT) {
        g_autofree char *shown = member ? json_to_string(member, FALSE) : g_strdup("missing");

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s=%.40s is not supported (this build reads format %d)", format, shown,
                    VP_JSON_FORMAT);
        return NULL;
    }
    member = json_object_get_member(obj, "domains");
    if (!member || !JSON_NODE_HOLDS_ARRAY(member)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domains is missing or not an array");
        return NULL;
    }
    if (!vpJsonCheckKeys(obj, "ledger", strcmp(format, "format") ? legacy_keys : keys, error))
        return NULL;

    domains = json_node_get_array(member);
    for (i = 0; i < json_array_get_length(domains); i++) {
        g_autoptr(GError) local = NULL;
        g_autoptr(vpPlan) plan = vpPlanFromJson(json_array_get_element(domains, i), &local);

        if (!plan || !vpLedgerAdd(ledger, plan, &local)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domains[%u]: %s", i, local->message);
            return NULL;
        }
    }
    return g_steal_pointer(&ledger);
}

static char *
jsonToText(JsonNode *root)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}

char *
vpLedgerToText(const vpLedger *ledger)
{
    g_autoptr(JsonNode) root = vpLedgerToJson(ledger);

    return jsonToText(root);
}

char *
vpLedgerPlansToText(const vpTopology *topo, const GPtrArray *plans)
{
    g_autoptr(JsonNode) root = plansToJson(topo, plans);

    return jsonToText(root);
}

vpLedger *
vpLedgerFromText(const vpTopology *topo, const char *text, gsize len, const char *name,
                 GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(JsonNode) root = NULL;
    vpLedger *ledger;

    if (len == 0 || strspn(text, " \t\r\n") >= len) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "ledger %s is empty (truncated?); remove it to start from an empty ledger",
                    name);
        return NULL;
    }
    if (!(root = vpJsonParse(text, len, &local))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger %s is corrupt: %s", name,
                    local->message);
        return NULL;
    }
    if (!(ledger = vpLedgerFromJson(topo, root, &local))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "ledger %s: %s", name, local->message);
        return NULL;
    }
    return ledger;
}
