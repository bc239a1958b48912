/*
 * What the live commands share: where the daemon's socket is and which libvirt to talk
 * to, from options or else from the daemon's own configuration file.
 */
#pragma once

#include "cli/common.h"
#include "core/model/ledger.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <libvirt/libvirt.h>

typedef struct {
    char *config;
    char *socket;
    char *uri;
} vpLiveOptions;

/* Parses CMD's argv (PARAMETERS: its --help line) with its entries (NULL: none), then
 * --config, --socket and --connect (filling o), and fills what the options left out from
 * the configuration file (a missing default file means built-in defaults). Prints an error
 * for CMD and returns its exit code; VP_EXIT_OK when parsed. */
int vpLiveParseOptions(const char *cmd, const char *parameters, const GOptionEntry *entries,
                       vpLiveOptions *o, int *argc, char ***argv);
void vpLiveClear(vpLiveOptions *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpLiveOptions, vpLiveClear)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(virConnect, virConnectClose)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(virDomain, virDomainFree)

/* Opens o->uri (read-write) and looks the domain up; errors name both. */
virConnectPtr vpLiveConnect(const vpLiveOptions *o, GError **error);
virDomainPtr vpLiveDomain(virConnectPtr conn, const char *name, GError **error);

/* The daemon's topology (its source and CPU sets, loaded here) and its ledger, from its
 * "topology" reply; socket NULL: from opts->config. */
gboolean vpCliLoadLive(const vpCliOptions *opts, const char *socket, vpTopology **topo,
                       vpLedger **ledger, GError **error);

/* Where the commands that show the host (topology, capacity) take who holds what from. */
typedef struct {
    char *ledger;  /* --ledger FILE */
    gboolean live; /* --live: the daemon's topology and ledger */
    char *socket;  /* --socket, with --live */
} vpCliHeldOptions;

void vpCliHeldOptionsClear(vpCliHeldOptions *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpCliHeldOptions, vpCliHeldOptionsClear)
/* Parses CMD's argv as vpCliParseOptions does, with --ledger, --live and --socket (filling o)
 * first; FALSE, said for CMD, when that fails, when an argument is left, or when --live
 * comes with any of the topology, CPU sets or ledger it takes from the daemon. */
gboolean vpCliParseHeldOptions(GOptionContext *ctx, const GOptionEntry *entries, vpCliOptions *opts,
                               vpCliHeldOptions *o, const char *cmd, int *argc, char ***argv);
/* The daemon's topology and ledger with --live, else opts' topology and --ledger (none: an
 * empty one). Prints an error for CMD and returns its exit code; VP_EXIT_OK when loaded. */
int vpCliLoadHeld(const char *cmd, const vpCliOptions *opts, const vpCliHeldOptions *o,
                  vpTopology **topo, vpLedger **ledger);

/* Prints error to stderr as "vcpuplace CMD: message" and returns the exit code for it. */
int vpLiveFail(const char *cmd, const GError *error);

/* Members of a daemon reply, read leniently for display: NULL (or "-") when absent or of
 * another type, since a newer daemon may send what this client does not know. */
JsonArray *vpLiveArray(JsonObject *o, const char *member);
/* The entries of an array member that are objects, in order (borrowed from o; empty when
 * the member is absent or not an array). */
GPtrArray *vpLiveEntries(JsonObject *o, const char *member);
JsonObject *vpLiveObject(JsonObject *o, const char *member);
/* An integer member as text, "-" when absent or not an integer (caller frees). */
char *vpLiveIntText(JsonObject *o, const char *member);
