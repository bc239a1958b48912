/*
 * Prometheus text format writer. Names are checked (a bad one is a programming error);
 * label values and HELP text are escaped as the format says: backslash, newline, and in
 * label values the double quote.
 */
#include "daemon/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

typedef struct {
    const char *name;
    GString *samples;
} vpFamily;

struct _vpMetrics {
    GArray *families;  /* vpFamily, in declaration order */
    GHashTable *index; /* name -> index + 1 */
};

static void
familyClear(gpointer data)
{
    vpFamily *f = data;
    g_string_free(f->samples, TRUE);
}

vpMetrics *
vpMetricsNew(void)
{
    vpMetrics *m = g_new0(vpMetrics, 1);
    m->families = g_array_new(FALSE, FALSE, sizeof(vpFamily));
    g_array_set_clear_func(m->families, familyClear);
    m->index = g_hash_table_new(g_str_hash, g_str_equal);
    return m;
}

void
vpMetricsFree(vpMetrics *m)
{
    if (!m)
        return;
    g_array_free(m->families, TRUE);
    g_hash_table_destroy(m->index);
    g_free(m);
}

static gboolean
validName(const char *name)
{
    if (!name || !(g_ascii_isalpha(*name) || *name == '_' || *name == ':'))
        return FALSE;
    for (const char *c = name + 1; *c; c++) {
        if (!(g_ascii_isalnum(*c) || *c == '_' || *c == ':'))
            return FALSE;
    }
    return TRUE;
}

/* HELP text: backslash and newline; label values: also the double quote. */
static void
appendEscaped(GString *out, const char *text, gboolean quote)
{
    for (const char *c = text; *c; c++) {
        if (*c == '\\')
            g_string_append(out, "\\\\");
        else if (*c == '\n')
            g_string_append(out, "\\n");
        else if (quote && *c == '"')
            g_string_append(out, "\\\"");
        else
            g_string_append_c(out, *c);
    }
}

void
vpMetricsDeclare(vpMetrics *m, const char *name, const char *type, const char *help)
{
    g_return_if_fail(validName(name));
    g_return_if_fail(g_strcmp0(type, "gauge") == 0 || g_strcmp0(type, "counter") == 0);
    if (g_hash_table_contains(m->index, name))
        return;
    vpFamily f = {name, g_string_new(NULL)};
    g_string_append_printf(f.samples, "# HELP %s ", name);
    appendEscaped(f.samples, help, FALSE);
    g_string_append_printf(f.samples, "\n# TYPE %s %s\n", name, type);
    g_array_append_val(m->families, f);
    g_hash_table_insert(m->index, (gpointer)name, GUINT_TO_POINTER(m->families->len));
}

static void
appendValue(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (isnan(v))
        g_string_append(out, "NaN");
    else if (isinf(v))
        g_string_append(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)v);
    else
        g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.6g", v));
}

void
vpMetricsAdd(vpMetrics *m, const char *name, double value, ...)
{
    guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(m->index, name));
    g_return_if_fail(idx > 0);
    GString *out = g_array_index(m->families, vpFamily, idx - 1).samples;
    va_list ap;
    const char *label;
    gboolean first = TRUE;

    g_string_append(out, name);
    va_start(ap, value);
    while ((label = va_arg(ap, const char *))) {
        const char *v = va_arg(ap, const char *);
        g_warn_if_fail(validName(label) && v);
        g_string_append_printf(out, "%s%s=\"", first ? "{" : ",", label);
        appendEscaped(out, v ? v : "", TRUE);
        g_string_append_c(out, '"');
        first = FALSE;
    }
    va_end(ap);
    g_string_append(out, first ? " " : "} ");
    appendValue(out, value);
    g_string_append_c(out, '\n');
}

char *
vpMetricsText(const vpMetrics *m)
{
    GString *text = g_string_new(NULL);
    for (guint i = 0; i < m->families->len; i++)
        g_string_append(text, g_array_index(m->families, vpFamily, i).samples->str);
    return g_string_free(text, FALSE);
}

gboolean
vpMetricsWriteFile(const char *path, const char *text, GError **error)
{
    return g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, error);
}
