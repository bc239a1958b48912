/*
 * Options every offline command shares: where the topology comes from, which CPUs may be
 * handed out, and the policy defaults (a vcpuplaced.conf, or built-in ones).
 */
#pragma once

#include "conf/conf.h"
#include "core/model/ledger.h"
#include "core/model/policy.h"
#include "core/model/topology.h"

#include <json-glib/json-glib.h>

typedef struct {
    char *topology; /* hwtopo source: "host", "synthetic:...", file.xml */
    char *host_cpus;
    char *housekeeping;
    char *config;      /* vcpuplaced.conf for [policy] defaults */
    char *node_memory; /* memory of each node whose export lacks it ("64GiB") */
    gboolean json;
} vpCliOptions;

/* Adds the command's entries (NULL: none), then the options for the fields above (bound to
 * opts) to ctx, and parses argv; an error is printed as "vcpuplace CMD: message". -c is
 * --connect in every command that talks to libvirt, as in virsh, so --config has no short
 * form. */
gboolean vpCliParseOptions(GOptionContext *ctx, const GOptionEntry *entries, vpCliOptions *opts,
                           const char *cmd, int *argc, char ***argv);
/* FALSE, said for CMD, when argv still holds an argument after the command's name. */
gboolean vpCliNoArguments(const char *cmd, int argc, char **argv);
/* FALSE, said for CMD as "expected one WHAT argument", unless argv holds exactly one. */
gboolean vpCliOneArgument(const char *cmd, const char *what, int argc);
/* --max-moves is within 0..64; else says so for CMD. */
gboolean vpCliCheckMaxMoves(const char *cmd, gint max_moves);
vpTopology *vpCliLoadTopology(const vpCliOptions *opts, GError **error);
gboolean vpCliLoadDefaults(const vpCliOptions *opts, vpPolicy *defaults, GError **error);
/* vcpuplaced's own reader of its configuration file, so that the CLI refuses the files the
 * daemon refuses; NULL with error (the reader's message) when it does. */
vpConf *vpCliConfLoad(const char *path, gboolean missing_ok, GError **error);
/* A key's value in the --config file, else the table's default (caller frees; NULL with
 * error when the file is bad, NULL without when the key has no value). */
char *vpCliConfValue(const vpCliOptions *opts, const char *group, const char *key, GError **error);
void vpCliOptionsClear(vpCliOptions *opts);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpCliOptions, vpCliOptionsClear)
/* The ledger named by --ledger (which must exist: an empty host in place of a mistyped
 * path would place as if nothing ran), or an empty one when path is NULL. */
vpLedger *vpCliLoadLedger(const vpTopology *topo, const char *path, GError **error);
/* "s" after a count other than 1: "1 package", "2 packages". */
static inline const char *
vpCliPlural(gint64 n)
{
    return n == 1 ? "" : "s";
}
/* Prints "vcpuplace CMD: message" to stderr. */
void vpCliError(const char *cmd, const GError *error);
/* The text of a JSON document, with a leading "format" member (VP_JSON_FORMAT) added to an
 * object that lacks one. */
char *vpCliJsonText(JsonNode *node, gboolean pretty);
/* Prints the score's metrics object as "metrics:" and one "  name value" line each. */
void vpCliPrintMetrics(JsonNode *metrics);
/* Prints a JSON document (as vpCliJsonText) to stdout, pretty, with a newline. */
void vpCliPrintJson(JsonNode *node);
