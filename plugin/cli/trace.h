/*
 * The JSON-lines trace `vcpuplace simulate` replays and the benchmarks generate:
 *   {"op":"start","name":"vm1","vcpus":4,"smt":"spread","group":"g1","threads":2}
 *   {"op":"stop","name":"vm1"}
 * Policy keys are the metadata attributes; "threads" (and "cores", "sockets") declare the
 * guest topology. Unknown keys are errors, so a typo never silently changes a policy.
 */
#pragma once

#include "core/model/request.h"

#include <json-glib/json-glib.h>

typedef enum { VP_TRACE_START, VP_TRACE_STOP } vpTraceOp;

typedef struct {
    vpTraceOp op;
    char *name;
    vpRequest *req; /* VP_TRACE_START only */
} vpTraceEvent;

/* Calls fn on each line of the JSON-lines file path that is not blank (stripped, numbered
 * from 1), until one fails; its error is then prefixed with "path:N: ". */
typedef gboolean (*vpTraceLineFunc)(const char *line, unsigned lineno, gpointer data,
                                    GError **error);
gboolean vpTraceEachLine(const char *path, vpTraceLineFunc fn, gpointer data, GError **error);

/* Parses one line; defaults fill policy attributes the line leaves out. */
gboolean vpTraceParseLine(const char *line, const vpPolicy *defaults, vpTraceEvent *ev,
                          GError **error);
void vpTraceEventClear(vpTraceEvent *ev);

/* Member getters for JSON-lines input, shared with `vcpuplace score`; errors name the key.
 * vpTraceGetUInt() leaves *out as it is when key is absent, else wants an integer in
 * 1..max; vpTraceGetString() wants key present. */
gboolean vpTraceGetUInt(JsonObject *obj, const char *key, unsigned max, unsigned *out,
                        GError **error);
const char *vpTraceGetString(JsonObject *obj, const char *key, GError **error);
/* The event's domain: "domain", or "name" as traces said before the JSON format 1; not
 * both. */
const char *vpTraceGetDomain(JsonObject *obj, GError **error);
/* A line's object with its "op" and its domain (vpTraceGetDomain); NULL with error, "WHAT
 * must be a JSON object" when the line is JSON of another kind. *root takes the parsed
 * line, which the caller frees. */
JsonObject *vpTraceParseHead(const char *line, const char *what, JsonNode **root, const char **op,
                             const char **name, GError **error);
