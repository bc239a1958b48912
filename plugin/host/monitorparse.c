/*
 * The monitor's parsers of /proc text: schedstat, sched, status and /proc/stat (see
 * monitor.h).
 */
#include "host/monitor.h"

#include <errno.h>
#include <string.h>

/* Parses an unsigned decimal at *p, moving *p past it. */
static bool
parseU64(const char **p, guint64 *out)
{
    char *end;

    while (**p == ' ' || **p == '\t')
        (*p)++;
    if (!g_ascii_isdigit(**p))
        return false;
    errno = 0;
    *out = g_ascii_strtoull(*p, &end, 10);
    if (errno)
        return false;
    *p = end;
    return true;
}

guint32
vpMonitorParseSchedstat(const char *text, vpMonitorCounters *c)
{
    const char *p = text;
    guint64 run, wait, slices;

    if (!parseU64(&p, &run) || !parseU64(&p, &wait) || !parseU64(&p, &slices))
        return 0;
    c->run_ns = run;
    c->wait_ns = wait;
    c->timeslices = slices;
    return VP_SRC_SCHEDSTAT;
}

/* "key : value" lines; calls back with the trimmed key and the text after the colon. */
typedef void (*LineFunc)(const char *key, gsize keylen, const char *value, gpointer data);

static void
forEachKeyLine(const char *text, LineFunc fn, gpointer data)
{
    const char *line = text;

    while (line && *line) {
        const char *nl = strchr(line, '\n');
        const char *colon = memchr(line, ':', nl ? (gsize)(nl - line) : strlen(line));

        if (colon) {
            const char *end = colon;

            while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            fn(line, end - line, colon + 1, data);
        }
        line = nl ? nl + 1 : NULL;
    }
}

static bool
keyIs(const char *key, gsize len, const char *want)
{
    gsize n = strlen(want);

    /* suffix match: kernels have prefixed these with "se." or "stats." over time */
    return len >= n && memcmp(key + len - n, want, n) == 0 && (len == n || key[len - n - 1] == '.');
}

typedef struct {
    vpMonitorCounters *c;
    guint32 found; /* 1: voluntary, 2: involuntary, 4: forceidle */
} SchedParse;

/* core_forceidle_sum is printed in milliseconds with six decimals (ns remainder). */
static bool
parseMsDecimal(const char *p, guint64 *ns)
{
    guint64 ms, frac = 0;
    int digits = 0;

    if (!parseU64(&p, &ms))
        return false;
    if (*p == '.') {
        p++;
        while (g_ascii_isdigit(*p) && digits < 6) {
            frac = frac * 10 + (*p++ - '0');
            digits++;
        }
        for (; digits < 6; digits++)
            frac *= 10;
    }
    *ns = ms * 1000000 + frac;
    return true;
}

static void
schedLine(const char *key, gsize len, const char *value, gpointer data)
{
    SchedParse *sp = data;
    const char *p = value;

    if (keyIs(key, len, "nr_voluntary_switches") && parseU64(&p, &sp->c->voluntary))
        sp->found |= 1;
    else if (keyIs(key, len, "nr_involuntary_switches") && parseU64(&p, &sp->c->involuntary))
        sp->found |= 2;
    else if (keyIs(key, len, "core_forceidle_sum") && parseMsDecimal(p, &sp->c->forceidle_ns))
        sp->found |= 4;
}

guint32
vpMonitorParseSched(const char *text, vpMonitorCounters *c)
{
    SchedParse sp = {c, 0};

    forEachKeyLine(text, schedLine, &sp);
    return ((sp.found & 3) == 3 ? VP_SRC_SWITCHES : 0) | (sp.found & 4 ? VP_SRC_FORCEIDLE : 0);
}

static void
statusLine(const char *key, gsize len, const char *value, gpointer data)
{
    SchedParse *sp = data;
    const char *p = value;

    if (len == strlen("voluntary_ctxt_switches") &&
        memcmp(key, "voluntary_ctxt_switches", len) == 0 && parseU64(&p, &sp->c->voluntary))
        sp->found |= 1;
    else if (len == strlen("nonvoluntary_ctxt_switches") &&
             memcmp(key, "nonvoluntary_ctxt_switches", len) == 0 &&
             parseU64(&p, &sp->c->involuntary))
        sp->found |= 2;
}

guint32
vpMonitorParseStatus(const char *text, vpMonitorCounters *c)
{
    SchedParse sp = {c, 0};

    forEachKeyLine(text, statusLine, &sp);
    return (sp.found & 3) == 3 ? VP_SRC_SWITCHES : 0;
}

gboolean
vpMonitorParseStat(const char *text, GArray *ticks, GError **error)
{
    const char *line = text;
    unsigned lineno = 0;

    while (line && *line) {
        const char *nl = strchr(line, '\n');

        lineno++;
        if (g_str_has_prefix(line, "cpu") && g_ascii_isdigit(line[3])) {
            const char *p = line + 3;
            guint64 cpu, v[8] = {0};
            int n = 0;
            vpMonitorCpuTicks t;

            if (!parseU64(&p, &cpu) || cpu > 65535)
                n = -1;
            while (n >= 0 && n < 8 && (*p == ' ' || *p == '\t') && parseU64(&p, &v[n]))
                n++;
            /* user nice system idle [iowait irq softirq steal]; guest time is inside user */
            if (n < 4) {
                g_autofree char *bad = g_strndup(line, nl ? (gsize)(nl - line) : strlen(line));

                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "/proc/stat line %u '%s' is not 'cpuN user nice system idle ...'",
                            lineno, bad);
                return FALSE;
            }
            t.cpu = cpu;
            t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
            t.total = t.busy + v[3] + v[4];
            g_array_append_val(ticks, t);
        }
        line = nl ? nl + 1 : NULL;
    }
    return TRUE;
}
