/*
 * The pressure model's input (pressure.h): one interval's counter deltas of vCPU threads and
 * host CPUs, and their JSON line, the form in which recorded series are kept and replayed.
 * The reader takes nothing the writer would not write: every key known, every counter a
 * non-negative integer, no delta longer than twice its interval.
 */
#include "core/balance/pressure.h"
#include "core/codec/jsonkeys.h"

/* A counter delta over twice its interval is not a measurement but a bug or a bad file. */
#define MAX_DELTA_FACTOR 2
#define MAX_INTERVAL_NS (3600ull * G_USEC_PER_SEC * 1000)
#define MAX_VCPU 65535

static void
sampleClear(gpointer data)
{
    vpPressureSample *s = data;

    g_free(s->domain);
}

vpPressureInput *
vpPressureInputNew(void)
{
    vpPressureInput *in = g_new0(vpPressureInput, 1);

    in->vcpus = g_array_new(FALSE, TRUE, sizeof(vpPressureSample));
    g_array_set_clear_func(in->vcpus, sampleClear);
    in->cpus = g_array_new(FALSE, TRUE, sizeof(vpCpuSample));
    return in;
}

void
vpPressureInputFree(vpPressureInput *in)
{
    if (!in)
        return;
    g_array_free(in->vcpus, TRUE);
    g_array_free(in->cpus, TRUE);
    g_free(in);
}

void
vpPressureInputAddVcpu(vpPressureInput *in, const vpPressureSample *s)
{
    vpPressureSample copy = *s;

    copy.domain = g_strdup(s->domain);
    g_array_append_val(in->vcpus, copy);
}

void
vpPressureInputAddCpu(vpPressureInput *in, const vpCpuSample *s)
{
    g_array_append_val(in->cpus, *s);
}

JsonNode *
vpPressureInputToJson(const vpPressureInput *in)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "vcpus");
    json_builder_begin_array(b);
    for (guint i = 0; i < in->vcpus->len; i++) {
        const vpPressureSample *s = &g_array_index(in->vcpus, vpPressureSample, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "domain");
        json_builder_add_string_value(b, s->domain);
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, s->vcpu);
        json_builder_set_member_name(b, "interval_ns");
        json_builder_add_int_value(b, s->interval_ns);
        if (s->have & VP_HAVE_SCHEDSTAT) {
            json_builder_set_member_name(b, "run_ns");
            json_builder_add_int_value(b, s->run_ns);
            json_builder_set_member_name(b, "wait_ns");
            json_builder_add_int_value(b, s->wait_ns);
        }
        if (s->have & VP_HAVE_SWITCHES) {
            json_builder_set_member_name(b, "voluntary");
            json_builder_add_int_value(b, s->voluntary);
            json_builder_set_member_name(b, "involuntary");
            json_builder_add_int_value(b, s->involuntary);
        }
        if (s->have & VP_HAVE_MIGRATIONS) {
            json_builder_set_member_name(b, "migrations");
            json_builder_add_int_value(b, s->migrations);
        }
        if (s->have & VP_HAVE_FORCEIDLE) {
            json_builder_set_member_name(b, "forceidle_ns");
            json_builder_add_int_value(b, s->forceidle_ns);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "cpus");
    json_builder_begin_array(b);
    for (guint i = 0; i < in->cpus->len; i++) {
        const vpCpuSample *c = &g_array_index(in->cpus, vpCpuSample, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "cpu");
        json_builder_add_int_value(b, c->cpu);
        json_builder_set_member_name(b, "interval_ns");
        json_builder_add_int_value(b, c->interval_ns);
        json_builder_set_member_name(b, "busy_ns");
        json_builder_add_int_value(b, c->busy_ns);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* Reads member name of obj as a non-negative integer into *out; *present says whether the
 * member was there (NULL: it must be). where names the object in messages. */
static bool
getCount(JsonObject *obj, const char *where, const char *name, guint64 max, guint64 *out,
         bool *present, GError **error)
{
    JsonNode *n = json_object_get_member(obj, name);
    gint64 v;

    if (present)
        *present = n != NULL;
    if (!n) {
        if (present)
            return true;
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s.%s is missing", where, name);
        return false;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s.%s is not an integer", where, name);
        return false;
    }
    v = json_node_get_int(n);
    if (v < 0 || (guint64)v > max) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s.%s=%" G_GINT64_FORMAT " is outside [0, %" G_GUINT64_FORMAT "]", where, name,
                    v, max);
        return false;
    }
    *out = v;
    return true;
}

/* Two counters that are only meaningful together. */
static bool
getPair(JsonObject *obj, const char *where, const char *a, const char *b, guint64 max, guint64 *va,
        guint64 *vb, bool *present, GError **error)
{
    bool pa, pb;

    if (!getCount(obj, where, a, max, va, &pa, error) ||
        !getCount(obj, where, b, max, vb, &pb, error))
        return false;
    if (pa != pb) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s has %s but not %s", where, pa ? a : b,
                    pa ? b : a);
        return false;
    }
    *present = pa;
    return true;
}

static bool
vcpuFromJson(JsonNode *node, const char *where, vpPressureSample *s, GError **error)
{
    static const char *const allowed[] = {
        "domain",    "vcpu",        "interval_ns", "run_ns",       "wait_ns",
        "voluntary", "involuntary", "migrations",  "forceidle_ns", NULL,
    };
    JsonObject *obj;
    JsonNode *dom;
    guint64 v, lim;
    bool present;

    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is not an object", where);
        return false;
    }
    obj = json_node_get_object(node);
    if (!vpJsonCheckKeys(obj, where, allowed, error))
        return false;
    dom = json_object_get_member(obj, "domain");
    if (!dom || !JSON_NODE_HOLDS_VALUE(dom) || json_node_get_value_type(dom) != G_TYPE_STRING ||
        !*json_node_get_string(dom)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s.domain is missing or not a name", where);
        return false;
    }
    if (!getCount(obj, where, "vcpu", MAX_VCPU, &v, NULL, error))
        return false;
    s->vcpu = v;
    if (!getCount(obj, where, "interval_ns", MAX_INTERVAL_NS, &s->interval_ns, NULL, error))
        return false;
    if (s->interval_ns == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s.interval_ns=0 is not an interval",
                    where);
        return false;
    }
    lim = s->interval_ns * MAX_DELTA_FACTOR;
    s->have = 0;
    if (!getPair(obj, where, "run_ns", "wait_ns", lim, &s->run_ns, &s->wait_ns, &present, error))
        return false;
    s->have |= present ? VP_HAVE_SCHEDSTAT : 0;
    if (!getPair(obj, where, "voluntary", "involuntary", G_MAXINT64, &s->voluntary, &s->involuntary,
                 &present, error))
        return false;
    s->have |= present ? VP_HAVE_SWITCHES : 0;
    if (!getCount(obj, where, "migrations", G_MAXINT64, &s->migrations, &present, error))
        return false;
    s->have |= present ? VP_HAVE_MIGRATIONS : 0;
    if (!getCount(obj, where, "forceidle_ns", lim, &s->forceidle_ns, &present, error))
        return false;
    s->have |= present ? VP_HAVE_FORCEIDLE : 0;
    s->domain = g_strdup(json_node_get_string(dom));
    return true;
}

static bool
cpuFromJson(JsonNode *node, const char *where, vpCpuSample *c, GError **error)
{
    static const char *const allowed[] = {"cpu", "interval_ns", "busy_ns", NULL};
    JsonObject *obj;
    guint64 v;

    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is not an object", where);
        return false;
    }
    obj = json_node_get_object(node);
    if (!vpJsonCheckKeys(obj, where, allowed, error) ||
        !getCount(obj, where, "cpu", 65535, &v, NULL, error) ||
        !getCount(obj, where, "interval_ns", MAX_INTERVAL_NS, &c->interval_ns, NULL, error))
        return false;
    c->cpu = v;
    if (c->interval_ns == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s.interval_ns=0 is not an interval",
                    where);
        return false;
    }
    return getCount(obj, where, "busy_ns", c->interval_ns * MAX_DELTA_FACTOR, &c->busy_ns, NULL,
                    error);
}

static JsonArray *
getArray(JsonObject *obj, const char *name, GError **error)
{
    JsonNode *n = json_object_get_member(obj, name);

    if (n && JSON_NODE_HOLDS_ARRAY(n))
        return json_node_get_array(n);
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "'%s' is %s, expected an array", name,
                n ? "not an array" : "missing");
    return NULL;
}

vpPressureInput *
vpPressureInputFromJson(JsonNode *node, GError **error)
{
    static const char *const allowed[] = {"vcpus", "cpus", NULL};
    g_autoptr(vpPressureInput) in = vpPressureInputNew();
    JsonObject *obj;
    JsonArray *vcpus, *cpus;

    if (!node || !JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "a pressure interval is not an object");
        return NULL;
    }
    obj = json_node_get_object(node);
    if (!vpJsonCheckKeys(obj, "interval", allowed, error) ||
        !(vcpus = getArray(obj, "vcpus", error)) || !(cpus = getArray(obj, "cpus", error)))
        return NULL;
    for (guint i = 0; i < json_array_get_length(vcpus); i++) {
        g_autofree char *where = g_strdup_printf("vcpus[%u]", i);
        vpPressureSample s = {0};

        if (!vcpuFromJson(json_array_get_element(vcpus, i), where, &s, error))
            return NULL;
        g_array_append_val(in->vcpus, s);
    }
    for (guint i = 0; i < json_array_get_length(cpus); i++) {
        g_autofree char *where = g_strdup_printf("cpus[%u]", i);
        vpCpuSample c = {0};

        if (!cpuFromJson(json_array_get_element(cpus, i), where, &c, error))
            return NULL;
        g_array_append_val(in->cpus, c);
    }
    return g_steal_pointer(&in);
}
