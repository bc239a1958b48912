/*
 * JSON text from outside (socket lines, the ledger, traces, score input, daemon replies)
 * parsed with bounds json-glib does not keep.
 *
 * json-glib recurses once per nesting level without a limit (100,000 '[' overflow the
 * stack), reads integer literals beyond 64 bits by wrapping them (18446744073709551617
 * reads as 1), decodes "\u0000" into a string that C then truncates ("run-a\u0000x" names
 * run-a), and ignores whatever follows the first value. A scan of the text before
 * json-glib sees it refuses all four, so every reader gets the same bounds from one place.
 * It also names a lone UTF-16 surrogate ("\ud800"), which json-glib calls an unterminated
 * string, and the parse refuses a member name given twice in one object, of which
 * json-glib keeps the last.
 */
#pragma once

#include <json-glib/json-glib.h>

/* Deepest nesting of arrays and objects accepted; our deepest document (the ledger's
 * domains[].vcpus[]) has 4 levels. */
#define VP_JSON_MAX_DEPTH 32
/* Longest number literal accepted; a 64-bit integer has at most 20 digits and a sign. */
#define VP_JSON_MAX_NUMBER 64

#define VP_JSON_ERROR vpJsonErrorQuark()
GQuark vpJsonErrorQuark(void);
typedef enum {
    VP_JSON_ERROR_INVALID, /* not one bounded JSON value */
} vpJsonErrorCode;

/* Checks text (len bytes, or NUL-terminated when len < 0) for the bounds above, then
 * parses it. Returns the root node (caller frees), never NULL without an error; the error
 * names the offset and what is wrong. */
JsonNode *vpJsonParse(const char *text, gssize len, GError **error);

/* The same, for text that must hold one object: returns it (caller unrefs). */
JsonObject *vpJsonParseObject(const char *text, gssize len, GError **error);
