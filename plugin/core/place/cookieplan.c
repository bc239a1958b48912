/*
 * Cookie decisions (see cookieplan.h for the rules). Domains are gathered into cookie
 * sets, the domains that must carry one cookie; each set keeps a cookie it already has
 * when no other set has a better claim to it, or gets a fresh one, and every member that
 * does not carry it yet gets it shared.
 */
#include "core/place/cookieplan.h"
#include "core/model/error.h"

#include <string.h>

static const char *const schedCoreNames[VP_SCHED_CORE_LAST] = {
    [VP_SCHED_CORE_NONE] = "none",         [VP_SCHED_CORE_VCPUS] = "vcpus",
    [VP_SCHED_CORE_EMULATOR] = "emulator", [VP_SCHED_CORE_FULL] = "full",
    [VP_SCHED_CORE_UNKNOWN] = "unknown",
};

static const char *const stateNames[VP_COOKIE_STATE_LAST] = {
    [VP_COOKIE_STATE_OK] = "ok",
    [VP_COOKIE_STATE_APPLY] = "apply",
    [VP_COOKIE_STATE_PENDING] = "pending",
    [VP_COOKIE_STATE_UNSUPPORTED] = "unsupported",
    [VP_COOKIE_STATE_NO_THREADS] = "no-threads",
};

const char *
vpSchedCoreName(vpSchedCore mode)
{
    return (unsigned)mode < VP_SCHED_CORE_LAST ? schedCoreNames[mode] : "?";
}

const char *
vpCookieStateName(vpCookieState state)
{
    return (unsigned)state < VP_COOKIE_STATE_LAST ? stateNames[state] : "?";
}

const char *
vpCookieScopeName(vpCookieScope scope)
{
    return scope == VP_COOKIE_SCOPE_PROCESS ? "process" : "vcpus";
}

/* ---- qemu.conf ------------------------------------------------------------------------ */

/* One statement of a virConf file, comments removed, with the line it starts on. */
typedef struct {
    GString *text;
    unsigned line;
} Statement;

/*
 * virConf is libvirt's own format and no library reads it for us; only the statement
 * structure matters here: statements end at a newline or ';' outside quotes and brackets
 * (lists span lines), '#' starts a comment outside quotes. Quotes are ' or ", and """
 * strings of libvirt's parser hold no newline that matters to one key.
 */
static GArray *
splitStatements(const char *text, gsize len)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(Statement));
    Statement cur = {g_string_new(NULL), 1};
    unsigned line = 1;
    char quote = 0;
    int depth = 0;
    bool comment = false;

    for (gsize i = 0; i <= len; i++) {
        char c = i < len ? text[i] : '\n';
        bool end = false;

        if (c == '\n')
            comment = false;
        if (comment)
            continue;
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#') {
            comment = true;
            continue;
        } else if (c == '[') {
            depth++;
        } else if (c == ']' && depth > 0) {
            depth--;
        } else if ((c == '\n' || c == ';') && depth == 0) {
            end = true;
        }
        if (c == '\n' && quote) {
            /* an unterminated string ends with its line, as libvirt's parser refuses it */
            quote = 0;
            end = depth == 0;
        }
        if (end) {
            g_array_append_val(out, cur);
            cur.text = g_string_new(NULL);
            cur.line = line + (c == '\n');
        } else {
            g_string_append_c(cur.text, c);
        }
        if (c == '\n')
            line++;
    }
    g_string_free(cur.text, TRUE);
    return out;
}

static void
statementsFree(GArray *statements)
{
    for (guint i = 0; i < statements->len; i++)
        g_string_free(g_array_index(statements, Statement, i).text, TRUE);
    g_array_free(statements, TRUE);
}

bool
vpSchedCoreParse(const char *text, gsize len, const char *path, vpSchedCore *mode, GError **error)
{
    GArray *statements = splitStatements(text, len);
    vpSchedCore found = VP_SCHED_CORE_NONE;
    bool ok = true;

    /* libvirt keeps the last of repeated keys */
    for (guint i = 0; ok && i < statements->len; i++) {
        const Statement *s = &g_array_index(statements, Statement, i);
        g_autofree char *stmt = g_strstrip(g_strdup(s->text->str));
        char *eq = strchr(stmt, '=');
        g_autofree char *value = NULL;
        gsize vlen;
        int m;

        if (!eq)
            continue;
        *eq = '\0';
        if (strcmp(g_strstrip(stmt), "sched_core") != 0)
            continue;
        value = g_strstrip(g_strdup(eq + 1));
        vlen = strlen(value);
        if (vlen < 2 || (value[0] != '"' && value[0] != '\'') || value[vlen - 1] != value[0]) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s:%u: sched_core = %s is not a quoted string", path, s->line, value);
            ok = false;
            break;
        }
        value[vlen - 1] = '\0';
        for (m = 0; m < VP_SCHED_CORE_UNKNOWN; m++) {
            if (strcmp(value + 1, schedCoreNames[m]) == 0)
                break;
        }
        if (m == VP_SCHED_CORE_UNKNOWN) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s:%u: sched_core='%s' is not one of none, vcpus, emulator, full", path,
                        s->line, value + 1);
            ok = false;
            break;
        }
        found = m;
    }
    statementsFree(statements);
    if (ok)
        *mode = found;
    return ok;
}

/* ---- decisions ---------------------------------------------------------------------------- */

typedef struct {
    char *name;      /* "vm:A", "group:G", "off-group:G", or "keep:A" for a domain that
                      * wants nothing but carries a cookie (it competes for its cookie) */
    GArray *members; /* input indexes, input order */
} CookieSet;

static void
cookieSetClear(gpointer data)
{
    CookieSet *s = data;
    g_free(s->name);
    g_array_free(s->members, TRUE);
}

void
vpCookiePlanFree(vpCookiePlan *plan)
{
    if (!plan)
        return;
    for (guint i = 0; i < plan->expect->len; i++)
        g_free(g_array_index(plan->expect, vpCookieExpect, i).set);
    g_array_free(plan->expect, TRUE);
    g_array_free(plan->actions, TRUE);
    g_free(plan);
}

static char *
setName(const vpCookieDomain *d)
{
    switch (d->coresched) {
    case VP_CORESCHED_GROUP:
        if (d->group)
            return g_strdup_printf("group:%s", d->group);
        return g_strdup_printf("vm:%s", d->name);
    case VP_CORESCHED_OFF:
        if (d->group &&
            (d->seen == VP_COOKIE_PENDING || (d->seen == VP_COOKIE_SEEN && d->vcpus != 0)))
            return g_strdup_printf("off-group:%s", d->group);
        return NULL;
    default:
        return g_strdup_printf("vm:%s", d->name);
    }
}

static bool
usableId(uint64_t id)
{
    return id != 0 && id != VP_COOKIE_MIXED;
}

static gint
cmpSetName(gconstpointer a, gconstpointer b)
{
    return strcmp(((const CookieSet *)a)->name, ((const CookieSet *)b)->name);
}

/* Sets in name order: the order of decisions and actions does not depend on input order. */
static GArray *
gatherSets(const vpCookieDomain *doms, gsize n, GArray *expect)
{
    GArray *sets = g_array_new(FALSE, FALSE, sizeof(CookieSet));
    g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);

    g_array_set_clear_func(sets, cookieSetClear);
    for (gsize i = 0; i < n; i++) {
        const vpCookieExpect *e = &g_array_index(expect, vpCookieExpect, i);
        g_autofree char *pseudo = NULL;
        const char *name = e->set;
        gpointer at;

        if (!name) {
            if (doms[i].seen != VP_COOKIE_SEEN || !usableId(doms[i].vcpus))
                continue;
            name = pseudo = g_strdup_printf("keep:%s", doms[i].name);
        }
        if (!g_hash_table_lookup_extended(index, name, NULL, &at)) {
            CookieSet s = {g_strdup(name), g_array_new(FALSE, FALSE, sizeof(gsize))};

            g_array_append_val(sets, s);
            at = GUINT_TO_POINTER(sets->len - 1);
            g_hash_table_insert(index, g_array_index(sets, CookieSet, sets->len - 1).name, at);
        }
        g_array_append_val(g_array_index(sets, CookieSet, GPOINTER_TO_UINT(at)).members, i);
    }
    g_array_sort(sets, cmpSetName);
    return sets;
}

static guint
holders(const vpCookieDomain *doms, const CookieSet *s, uint64_t id)
{
    guint count = 0;

    for (guint k = 0; k < s->members->len; k++) {
        const vpCookieDomain *d = &doms[g_array_index(s->members, gsize, k)];
        count += d->seen == VP_COOKIE_SEEN && d->vcpus == id;
    }
    return count;
}

/* The set a cookie id belongs to. A domain that wants no cookie is never acted on, so one
 * it carries stays its own; otherwise the set with most holders, then name order (sets are
 * sorted). */
static const CookieSet *
ownerOf(const vpCookieDomain *doms, GArray *sets, uint64_t id)
{
    const CookieSet *best = NULL;
    guint most = 0;

    for (guint i = 0; i < sets->len; i++) {
        const CookieSet *s = &g_array_index(sets, CookieSet, i);
        guint h = holders(doms, s, id);

        if (h && g_str_has_prefix(s->name, "keep:"))
            return s;
        if (h > most) {
            most = h;
            best = s;
        }
    }
    return best;
}

static void
addAction(vpCookiePlan *plan, vpCookieOp op, const vpCookieDomain *d, vpCookieScope scope,
          const char *from, uint64_t cookie)
{
    vpCookieAction a = {op, d->name, scope, from, cookie};
    g_array_append_val(plan->actions, a);
}

static void
decideSet(vpCookiePlan *plan, const vpCookieDomain *doms, GArray *sets, const CookieSet *s)
{
    GArray *expect = plan->expect;
    g_autoptr(GArray) live = g_array_new(FALSE, FALSE, sizeof(gsize));
    const vpCookieDomain *source = NULL;
    uint64_t cookie = 0;
    guint most = 0;

    for (guint k = 0; k < s->members->len; k++) {
        gsize i = g_array_index(s->members, gsize, k);

        if (doms[i].seen == VP_COOKIE_PENDING) {
            /* Any member unknown: deciding now could hand out a cookie that exists. */
            for (guint j = 0; j < s->members->len; j++) {
                gsize m = g_array_index(s->members, gsize, j);
                vpCookieExpect *e = &g_array_index(expect, vpCookieExpect, m);
                if (doms[m].seen != VP_COOKIE_NO_THREADS)
                    e->state = VP_COOKIE_STATE_PENDING;
            }
            return;
        }
        if (doms[i].seen == VP_COOKIE_SEEN)
            g_array_append_val(live, i);
    }

    for (guint k = 0; k < live->len; k++) {
        const vpCookieDomain *d = &doms[g_array_index(live, gsize, k)];
        guint h;

        if (!usableId(d->vcpus) || ownerOf(doms, sets, d->vcpus) != s)
            continue;
        h = holders(doms, s, d->vcpus);
        if (h > most) {
            most = h;
            cookie = d->vcpus;
            source = d;
        }
    }

    for (guint k = 0; k < live->len; k++) {
        gsize i = g_array_index(live, gsize, k);
        const vpCookieDomain *d = &doms[i];
        vpCookieExpect *e = &g_array_index(expect, vpCookieExpect, i);
        bool satisfied =
            cookie && d->vcpus == cookie && d->vcpus_all &&
            (e->scope == VP_COOKIE_SCOPE_VCPUS || (d->others == cookie && d->others_all));

        e->cookie = cookie;
        e->kept = cookie != 0;
        if (!source) {
            /* The set has no cookie of its own yet: its first member makes one. */
            source = d;
            addAction(plan, VP_COOKIE_CREATE, d, e->scope, NULL, 0);
            e->state = VP_COOKIE_STATE_APPLY;
            continue;
        }
        if (satisfied) {
            e->state = VP_COOKIE_STATE_OK;
            continue;
        }
        addAction(plan, VP_COOKIE_SHARE, d, e->scope, source->name, cookie);
        e->state = VP_COOKIE_STATE_APPLY;
    }
}

vpCookiePlan *
vpCookiePlanDecide(const vpCookieDomain *doms, gsize n, const vpCookieEnv *env)
{
    vpCookiePlan *plan = g_new0(vpCookiePlan, 1);
    g_autoptr(GArray) sets = NULL;

    plan->expect = g_array_sized_new(FALSE, TRUE, sizeof(vpCookieExpect), n);
    plan->actions = g_array_new(FALSE, FALSE, sizeof(vpCookieAction));
    for (gsize i = 0; i < n; i++) {
        const vpCookieDomain *d = &doms[i];
        vpCookieExpect e = {.name = d->name, .set = setName(d)};

        e.scope = d->emulator_own || env->libvirt == VP_SCHED_CORE_EMULATOR ||
                          env->libvirt == VP_SCHED_CORE_FULL
                      ? VP_COOKIE_SCOPE_PROCESS
                      : VP_COOKIE_SCOPE_VCPUS;
        if (!env->kernel_ok)
            e.state = VP_COOKIE_STATE_UNSUPPORTED;
        else if (d->seen == VP_COOKIE_NO_THREADS)
            e.state = VP_COOKIE_STATE_NO_THREADS;
        else if (!e.set && d->seen == VP_COOKIE_PENDING)
            e.state = VP_COOKIE_STATE_OK; /* wants none: nothing to wait for */
        g_array_append_val(plan->expect, e);
    }
    if (!env->kernel_ok)
        return plan;

    sets = gatherSets(doms, n, plan->expect);
    for (guint i = 0; i < sets->len; i++) {
        const CookieSet *s = &g_array_index(sets, CookieSet, i);
        if (!g_str_has_prefix(s->name, "keep:"))
            decideSet(plan, doms, sets, s);
    }
    return plan;
}
