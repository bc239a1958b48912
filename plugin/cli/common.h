/*
 * Options every offline command shares: where the topology comes from, which CPUs may be
 * handed out, and the policy defaults (a vcpuplaced.conf, or built-in ones).
 */
#pragma once

#include "core/ledger.h"
#include "core/policy.h"
#include "core/topology.h"

#include <json-glib/json-glib.h>

typedef struct {
    char *topology; /* hwtopo source: "host", "synthetic:...", file.xml */
    char *host_cpus;
    char *housekeeping;
    char *config;      /* vcpuplaced.conf for [policy] defaults */
    char *node_memory; /* memory of each node whose export lacks it ("64GiB") */
    gboolean json;
} vpCliOptions;

/* GOptionEntry table for the fields above (static storage bound to opts). */
GOptionGroup *vpCliOptionGroup(vpCliOptions *opts);
vpTopology *vpCliLoadTopology(const vpCliOptions *opts, GError **error);
gboolean vpCliLoadDefaults(const vpCliOptions *opts, vpPolicy *defaults, GError **error);
void vpCliOptionsClear(vpCliOptions *opts);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpCliOptions, vpCliOptionsClear)
/* The ledger named by --ledger (which must exist: an empty host in place of a mistyped
 * path would place as if nothing ran), or an empty one when path is NULL. */
vpLedger *vpCliLoadLedger(const vpTopology *topo, const char *path, GError **error);
/* Prints "vcpuplace CMD: message" to stderr. */
void vpCliError(const char *cmd, const GError *error);
/* Prints a JSON node to stdout, pretty, with a newline. */
void vpCliPrintJson(JsonNode *node);
