/*
 * What the golden drivers (placer and rebalancer) share: a result as reviewed JSON text,
 * compared with expected.json, or written there when VP_REGENERATE is set (to review as
 * a diff); and the loop that runs one Check test over every case of a directory.
 */
#pragma once

#include <check.h>
#include <glib.h>
#include <json-glib/json-glib.h>

/* Asserts that node, pretty-printed with a final newline, is the text of path (case name
 * in the message); with VP_REGENERATE set, writes it there instead. */
void vpGoldenCheck(const char *name, const char *path, JsonNode *node);
/* The entries of dir that keep accepts (every one when keep is NULL), sorted by name. */
GPtrArray *vpGoldenCases(const char *dir, gboolean (*keep)(const char *name));
/* Runs test for each index of cases, as the one test case of a suite named suite; returns
 * the exit status (EXIT_SUCCESS when every case passed). */
int vpGoldenRun(const char *suite, const TTest *test, const GPtrArray *cases, int timeout_s);
