/*
 * The scan follows JSON's lexical structure only (strings, numbers, brackets); json-glib
 * still checks the grammar. It runs in one pass over text that is at most a few MiB.
 */
#include "core/codec/jsonparse.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

GQuark
vpJsonErrorQuark(void)
{
    return g_quark_from_static_string("vp-json-error-quark");
}

static bool
scanFail(GError **error, gsize at, const char *what)
{
    g_set_error(error, VP_JSON_ERROR, VP_JSON_ERROR_INVALID, "at byte %zu: %s", at, what);
    return false;
}

/* The UTF-16 unit of a \u escape at text[j] (the backslash); -1 when it is not one. */
static long
escapedUnit(const char *text, gsize len, gsize j)
{
    if (j + 5 >= len || text[j] != '\\' || text[j + 1] != 'u')
        return -1;
    long unit = 0;
    for (gsize k = j + 2; k < j + 6; k++) {
        int digit = g_ascii_xdigit_value(text[k]);
        if (digit < 0)
            return -1;
        unit = unit * 16 + digit;
    }
    return unit;
}

/* A \u escape at text[j]: a NUL, or a surrogate without its other half, would reach C
 * strings truncated or as json-glib's "unterminated string constant". Moves *j past the
 * escapes it reads. */
static bool
scanEscape(const char *text, gsize len, gsize *j, GError **error)
{
    long unit = escapedUnit(text, len, *j);
    if (unit == 0)
        return scanFail(error, *j, "\\u0000 (NUL) in a string");
    if (unit < 0xD800 || unit > 0xDFFF) {
        *j += 1;
        return true;
    }
    long low = unit <= 0xDBFF ? escapedUnit(text, len, *j + 6) : -1;
    if (low < 0xDC00 || low > 0xDFFF) {
        g_autofree char *msg =
            g_strdup_printf("lone UTF-16 surrogate \\u%.4s in a string", text + *j + 2);
        return scanFail(error, *j, msg);
    }
    *j += 11;
    return true;
}

/* A string starting at text[*i] == '"': moves *i to its closing quote. */
static bool
scanString(const char *text, gsize len, gsize *i, GError **error)
{
    gsize start = *i;
    for (gsize j = start + 1; j < len; j++) {
        if (text[j] == '"') {
            *i = j;
            return true;
        }
        if (text[j] == '\0')
            return scanFail(error, j, "NUL byte");
        if (text[j] != '\\')
            continue;
        if (!scanEscape(text, len, &j, error))
            return false;
    }
    return scanFail(error, start, "string without its closing quote");
}

/* A number starting at text[*i]: moves *i to its last character and checks that it fits:
 * an integer in 64 bits, any other number finite. */
static bool
scanNumber(const char *text, gsize len, gsize *i, GError **error)
{
    gsize start = *i, end = start;
    bool integer = true;
    while (end < len && text[end] && strchr("0123456789+-.eE", text[end])) {
        if (!g_ascii_isdigit(text[end]) && text[end] != '-')
            integer = false;
        end++;
    }
    gsize n = end - start;
    if (n > VP_JSON_MAX_NUMBER)
        return scanFail(error, start, "number literal longer than 64 characters");
    char token[VP_JSON_MAX_NUMBER + 1];
    memcpy(token, text + start, n);
    token[n] = '\0';
    if (integer) {
        g_autoptr(GError) err = NULL;
        if (!g_ascii_string_to_signed(token, 10, G_MININT64, G_MAXINT64, NULL, &err) &&
            g_error_matches(err, G_NUMBER_PARSER_ERROR, G_NUMBER_PARSER_ERROR_OUT_OF_BOUNDS)) {
            g_autofree char *msg = g_strdup_printf("integer %s is outside 64 bits", token);
            return scanFail(error, start, msg);
        }
    } else {
        char *rest = NULL;
        double v = g_ascii_strtod(token, &rest);
        if (rest != token && !isfinite(v)) {
            g_autofree char *msg = g_strdup_printf("number %s is not finite", token);
            return scanFail(error, start, msg);
        }
    }
    *i = end - 1;
    return true;
}

/* Returns where the first value ends (after it), or 0 with an error. */
static gsize
scanValue(const char *text, gsize len, GError **error)
{
    guint depth = 0;
    bool seen = false;
    for (gsize i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '\0') {
            scanFail(error, i, "NUL byte");
            return 0;
        }
        if (strchr(" \t\r\n", ch))
            continue;
        if (seen && depth == 0)
            return i;
        if (ch == '"') {
            if (!scanString(text, len, &i, error))
                return 0;
        } else if (ch == '-' || g_ascii_isdigit(ch)) {
            if (!scanNumber(text, len, &i, error))
                return 0;
        } else if (ch == '{' || ch == '[') {
            if (++depth > VP_JSON_MAX_DEPTH) {
                scanFail(error, i, "nested deeper than 32 levels");
                return 0;
            }
        } else if (g_ascii_isalpha(ch)) {
            while (i + 1 < len && g_ascii_isalnum(text[i + 1]))
                i++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0) {
                scanFail(error, i, "closing bracket without its opening one");
                return 0;
            }
            depth--;
        }
        seen = true;
    }
    return len;
}

/* json-glib keeps the last of two members of one name: {"name":"a","name":"b"} would be
 * read as b where another reader sees a. Each member counted per object: one more than the
 * object holds is a name given twice. */
typedef struct {
    GHashTable *seen; /* JsonObject -> members read so far */
    char *twice;      /* the first name given twice */
} vpJsonMembers;

static void
onMember(JsonParser *parser, JsonObject *object, const char *name, gpointer data)
{
    (void)parser;
    vpJsonMembers *m = data;
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(m->seen, object)) + 1;
    g_hash_table_insert(m->seen, object, GUINT_TO_POINTER(n));
    if (n > json_object_get_size(object) && !m->twice)
        m->twice = g_strdup(name);
}

static JsonNode *
parseUnique(const char *text, gsize n, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    vpJsonMembers m = {g_hash_table_new(NULL, NULL), NULL};
    g_signal_connect(parser, "object-member", G_CALLBACK(onMember), &m);
    g_autoptr(GError) err = NULL;
    bool ok = json_parser_load_from_data(parser, text, n, &err);
    g_hash_table_unref(m.seen);
    g_autofree char *twice = m.twice;
    if (!ok) {
        g_set_error_literal(error, VP_JSON_ERROR, VP_JSON_ERROR_INVALID, err->message);
        return NULL;
    }
    if (twice) {
        g_set_error(error, VP_JSON_ERROR, VP_JSON_ERROR_INVALID,
                    "member '%s' given twice in one object", twice);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root) {
        g_set_error_literal(error, VP_JSON_ERROR, VP_JSON_ERROR_INVALID, "empty text");
        return NULL;
    }
    return json_node_ref(root);
}

JsonNode *
vpJsonParse(const char *text, gssize len, GError **error)
{
    gsize n = len < 0 ? strlen(text) : (gsize)len;
    gsize end = scanValue(text, n, error);
    if (end == 0 && n > 0)
        return NULL;
    if (end < n) {
        scanFail(error, end, "more after its JSON value (one value per text)");
        return NULL;
    }
    return parseUnique(text, n, error);
}

JsonObject *
vpJsonParseObject(const char *text, gssize len, GError **error)
{
    g_autoptr(JsonNode) root = vpJsonParse(text, len, error);
    if (!root)
        return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error_literal(error, VP_JSON_ERROR, VP_JSON_ERROR_INVALID, "not a JSON object");
        return NULL;
    }
    return json_object_ref(json_node_get_object(root));
}
