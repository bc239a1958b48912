/*
 * Parse time of the domain XML reader on the worst documents its bounds let through
 * (VP_DOMXML_MAX_BYTES, VP_DOMXML_MAX_ATTRS per element, VP_DOMXML_MAX_NODES), and of
 * refusing the hostile ones beyond them (47,000 and 200,000 attributes on one element).
 * The bound's purpose: any accepted input parses in under 50 ms. Prints one line per
 * shape and writes bench-domxml.json into the results directory (argument, else
 * $VP_BENCH_RESULTS, else the current directory). Not a test: nothing passes or fails.
 */
#include "libvirt/domxml.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int opt_runs = 5;

static const GOptionEntry entries[] = {
    {"runs", 'r', 0, G_OPTION_ARG_INT, &opt_runs, "parses per shape (default 5)", "N"},
    G_OPTION_ENTRY_NULL,
};

static const char head[] = "<domain type='kvm'><name>big</name><vcpu>4</vcpu><metadata>";
static const char tail[] = "</metadata></domain>";
#define ROOM (VP_DOMXML_MAX_BYTES - sizeof(head) - sizeof(tail))

static void
fill(GString *xml, const char *unit, guint max_units)
{
    gsize n = strlen(unit);
    for (guint i = 0; i < max_units && xml->len + n < ROOM; i++)
        g_string_append(xml, unit);
}

/* Elements of the most attributes each (xmlns:t one of them), as many as the bound on
 * all attributes allows. */
static void
shapeAttrs(GString *xml)
{
    g_autoptr(GString) el = g_string_new("<t:x xmlns:t='urn:t'");
    for (int a = 0; a < VP_DOMXML_MAX_ATTRS - 1; a++)
        g_string_append_printf(el, " a%d='%d'", a, a);
    g_string_append(el, "/>");
    fill(xml, el->str, VP_DOMXML_MAX_ALL_ATTRS / VP_DOMXML_MAX_ATTRS - 2);
}

/* 63 attributes whose values fill the byte bound. */
static void
shapeLongValues(GString *xml)
{
    gsize each = ROOM / VP_DOMXML_MAX_ATTRS - 16;
    g_autofree char *value = g_strnfill(each, 'v');
    g_string_append(xml, "<t:x xmlns:t='urn:t'");
    for (int a = 0; a < VP_DOMXML_MAX_ATTRS - 1; a++)
        g_string_append_printf(xml, " a%d='%s'", a, value);
    g_string_append(xml, "/>");
}

static void
shapeNodes(GString *xml)
{
    g_autofree char *text = g_strnfill(ROOM / VP_DOMXML_MAX_NODES - 24, 't');
    g_autofree char *unit = g_strdup_printf("<t:x xmlns:t='urn:t'>%s</t:x>", text);
    fill(xml, unit, VP_DOMXML_MAX_NODES - 10);
}

static void
shapeComments(GString *xml)
{
    g_autofree char *text = g_strnfill(ROOM / VP_DOMXML_MAX_NODES - 8, 'c');
    g_autofree char *unit = g_strdup_printf("<!--%s-->", text);
    fill(xml, unit, VP_DOMXML_MAX_NODES - 10);
}

static void
shapeCharRefs(GString *xml)
{
    g_string_append(xml, "<t:x xmlns:t='urn:t'>");
    fill(xml, "&#65;&amp;", VP_DOMXML_MAX_REFS / 2 - 10);
    g_string_append(xml, "</t:x>");
}

/* libxml2 refuses nesting past 256 without XML_PARSE_HUGE; 250 is within. */
static void
shapeDeep(GString *xml)
{
    for (int i = 0; i < 250; i++)
        g_string_append(xml, "<t:x xmlns:t='urn:t' a='1'>");
    for (int i = 0; i < 250; i++)
        g_string_append(xml, "</t:x>");
}

static void
hostile(GString *xml, guint attrs)
{
    g_string_append(xml, "<t:x xmlns:t='urn:t'");
    for (guint a = 0; a < attrs; a++)
        g_string_append_printf(xml, " a%u='%u'", a, a);
    g_string_append(xml, "/>");
}

static void
shapeHostile47k(GString *xml)
{
    hostile(xml, 47000);
}

static void
shapeHostile200k(GString *xml)
{
    hostile(xml, 200000);
}

static const struct {
    const char *name;
    void (*make)(GString *xml);
} shapes[] = {
    {"attrs", shapeAttrs},
    {"long-values", shapeLongValues},
    {"nodes", shapeNodes},
    {"comments", shapeComments},
    {"charrefs", shapeCharRefs},
    {"deep", shapeDeep},
    {"hostile-47k-attrs", shapeHostile47k},
    {"hostile-200k-attrs", shapeHostile200k},
};

/* Every shape within the bounds is padded with one text node up to the byte bound. */
static void
pad(GString *xml)
{
    static const char open[] = "<t:p xmlns:t='urn:t'>", close[] = "</t:p>";
    if (xml->len + sizeof(open) + sizeof(close) >= ROOM)
        return;
    gsize n = ROOM - xml->len - sizeof(open) - sizeof(close);
    g_string_append(xml, open);
    for (gsize i = 0; i < n; i++)
        g_string_append_c(xml, 'p');
    g_string_append(xml, close);
}

static double
nowMs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmpDouble(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("[RESULTS-DIR]");
    g_autoptr(GError) err = NULL;
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || opt_runs < 1) {
        fprintf(stderr, "bench-domxml: %s\n", err ? err->message : "--runs must be >= 1");
        return 2;
    }
    const char *dir = argc > 1 ? argv[1] : g_getenv("VP_BENCH_RESULTS");
    if (!dir)
        dir = ".";

    g_autoptr(GString) json = g_string_new("{\"bench\":\"domxml\",\"shapes\":[");
    for (gsize s = 0; s < G_N_ELEMENTS(shapes); s++) {
        g_autoptr(GString) xml = g_string_new(head);
        shapes[s].make(xml);
        if (!g_str_has_prefix(shapes[s].name, "hostile"))
            pad(xml);
        g_string_append(xml, tail);
        g_autofree double *ms = g_new(double, opt_runs);
        g_autofree char *outcome = NULL;
        for (int r = 0; r < opt_runs; r++) {
            g_autoptr(GError) perr = NULL;
            double t0 = nowMs();
            g_autoptr(vpRequest) req = vpDomXMLParse(xml->str, xml->len, NULL, &perr);
            ms[r] = nowMs() - t0;
            if (r == 0)
                outcome = g_strdup(req ? "parsed" : perr->message);
        }
        qsort(ms, opt_runs, sizeof(double), cmpDouble);
        printf("%-20s %8zu bytes  min %8.2f ms  median %8.2f ms  max %8.2f ms  %s\n",
               shapes[s].name, (size_t)xml->len, ms[0], ms[opt_runs / 2], ms[opt_runs - 1],
               outcome);
        g_autofree char *quoted = g_strescape(outcome, NULL);
        g_string_append_printf(json,
                               "%s{\"shape\":\"%s\",\"bytes\":%zu,\"runs\":%d,\"min_ms\":%.3f,"
                               "\"median_ms\":%.3f,\"max_ms\":%.3f,\"outcome\":\"%s\"}",
                               s ? "," : "", shapes[s].name, (size_t)xml->len, opt_runs, ms[0],
                               ms[opt_runs / 2], ms[opt_runs - 1], quoted);
    }
    g_string_append(json, "]}\n");
    g_autofree char *path = g_build_filename(dir, "bench-domxml.json", NULL);
    if (!g_file_set_contents(path, json->str, json->len, &err)) {
        fprintf(stderr, "bench-domxml: %s\n", err->message);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}
