/*
 * What the golden drivers (placer and rebalancer) share: a result as reviewed JSON text,
 * compared with expected.json, or written there when VP_REGENERATE is set (to review as
 * a diff).
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

/* Asserts that node, pretty-printed with a final newline, is the text of path (case name
 * in the message); with VP_REGENERATE set, writes it there instead. */
void vpGoldenCheck(const char *name, const char *path, JsonNode *node);
/* g_ptr_array_sort() order of case names (char *). */
gint vpGoldenCompareNames(gconstpointer a, gconstpointer b);
