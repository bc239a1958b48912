/*
 * vcpuplaced.conf's table of groups and keys, and the typed lookups on a file once read.
 * Reading and checking a file is confread.c's; both share confpriv.h.
 */
#include "conf/conf.h"
#include "conf/confpriv.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS "milliseconds"

/* Choices in the order messages list them; [policy]'s are core/model/policy.c's (a unit test
 * holds the two together). Defaults as core and the daemon set them. */
#define K(g, k, t, ...)                                                                            \
    {                                                                                              \
        .group = g, .key = k, .type = t, __VA_ARGS__                                               \
    }

const vpConfKey vpConfKeys[] = {
    K("daemon", "uri", VP_CONF_TEXT, .def = VP_DEFAULT_URI),
    K("daemon", "topology", VP_CONF_TEXT, .def = "host"),
    K("daemon", "host_cpus", VP_CONF_CPUS),
    K("daemon", "housekeeping_cpus", VP_CONF_CPUS, .choices = "none", .def = "none"),
    K("daemon", "socket", VP_CONF_PATH, .def = VP_DEFAULT_SOCKET),
    K("daemon", "state", VP_CONF_PATH, .def = VP_DEFAULT_STATE),
    K("daemon", "hook_failure", VP_CONF_CHOICE, .choices = "open, closed", .def = "open"),
    K("daemon", "hook_timeout_ms", VP_CONF_UINT, .min = 1, .max = 60000, .unit = MS, .def = "500"),
    K("daemon", "domains", VP_CONF_GLOBS),
    K("daemon", "qemu_conf", VP_CONF_TEXT, .def = "/etc/libvirt/qemu.conf"),
    K("daemon", "vcpu_poll_ms", VP_CONF_UINT, .min = 100, .max = 3600000, .zero_off = true,
      .unit = MS, .def = "2000"),
    K("daemon", "qemu_run_dir", VP_CONF_PATH),
    K("daemon", "node_memory_reserve_mib", VP_CONF_UINT, .max = 1048576, .unit = "MiB",
      .def = "512"),
    K("daemon", "capacity_vcpus", VP_CONF_UINTS, .min = 1, .max = 4096, .def = "1,2,4,8"),
    K("daemon", "capacity_flavors", VP_CONF_TEXT),
    /* A fresh install only reports: nothing on a busy host is re-pinned or refused until the
     * operator has read the report and says so. */
    K("daemon", "mode", VP_CONF_CHOICE, .choices = "report, enforce", .def = "report"),
    K("daemon", "adopt_running", VP_CONF_CHOICE, .choices = "no, yes", .def = "no"),
    K("daemon", "hook", VP_CONF_CHOICE, .choices = "on, off", .def = "on"),
    K("policy", "smt", VP_CONF_CHOICE, .choices = "isolate, pack, spread, share", .def = "spread"),
    K("policy", "group", VP_CONF_NAME),
    K("policy", "coresched", VP_CONF_CHOICE, .choices = "vm, group, off", .def = "vm"),
    K("policy", "locality", VP_CONF_CHOICE,
      .choices = "auto, l3, numa, package, host, numa:N (N from 2 to 64)", .split_max = 64,
      .def = "auto"),
    K("policy", "emulator", VP_CONF_CHOICE, .choices = "housekeeping, vcpus, dedicated",
      .def = "housekeeping"),
    K("policy", "rebalance", VP_CONF_CHOICE, .choices = "auto, off", .def = "auto"),
    K("policy", "unmet", VP_CONF_CHOICE, .choices = "refuse, degrade", .def = "refuse"),
    K("policy", "cpus", VP_CONF_CHOICE, .choices = "dedicated, shared", .def = "dedicated"),
    K("policy", "ratio", VP_CONF_NUMBER, .min = 0, .max = 64, .min_open = true, .def = "4"),
    K("policy", "tenant_groups", VP_CONF_CHOICE, .choices = "off, nova, kubevirt, auto",
      .def = "off"),
    K("rebalance", "mode", VP_CONF_CHOICE, .choices = "auto, advise, off", .def = "auto"),
    K("rebalance", "interval", VP_CONF_NUMBER, .min = 0.1, .max = 3600, .unit = "seconds",
      .def = "1"),
    K("rebalance", "textfile", VP_CONF_FILE),
    K("rebalance", "alpha", VP_CONF_NUMBER, .min = 0, .max = 1, .min_open = true, .def = "0.3"),
    K("rebalance", "hot_wait", VP_CONF_NUMBER, .min = 0, .max = 1, .min_open = true, .def = "0.10"),
    K("rebalance", "cool_wait", VP_CONF_NUMBER, .min = 0, .max = 1, .def = "0.05"),
    K("rebalance", "hot_corun", VP_CONF_NUMBER, .min = 0, .max = 8, .min_open = true,
      .def = "0.20"),
    K("rebalance", "idle_busy", VP_CONF_NUMBER, .min = 0, .max = 1, .def = "0.10"),
    K("rebalance", "persistence", VP_CONF_UINT, .min = 1, .max = 3600, .unit = "intervals",
      .def = "5"),
    K("rebalance", "max_moves", VP_CONF_UINT, .min = 1, .max = 1000, .def = "2"),
    K("rebalance", "min_residency", VP_CONF_UINT, .min = 0, .max = 86400, .unit = "seconds",
      .def = "60"),
    K("rebalance", "memory", VP_CONF_UINT, .min = 0, .max = 7 * 86400, .unit = "seconds",
      .def = "600"),
    K("rebalance", "return_quiet", VP_CONF_UINT, .min = 0, .max = 86400, .unit = "intervals",
      .def = "30"),
    K("rebalance", "coupled_wakeups", VP_CONF_NUMBER, .min = 0, .max = 1e7, .min_open = true,
      .def = "1000"),
    K("admission", "max_moves", VP_CONF_UINT, .max = 64, .def = "2"),
    {.key = NULL},
};

const char *const vpConfGroups[] = {"daemon", "policy", "rebalance", "admission", NULL};

const vpConfKey *
vpConfFindKey(const char *group, const char *key)
{
    for (const vpConfKey *k = vpConfKeys; k->key; k++) {
        if (strcmp(k->group, group) == 0 && strcmp(k->key, key) == 0)
            return k;
    }
    return NULL;
}

vpConfEntry *
vpConfFindEntry(const vpConf *conf, const vpConfKey *k)
{
    for (size_t i = 0; i < conf->n; i++) {
        if (conf->entries[i].key == k)
            return &conf->entries[i];
    }
    return NULL;
}

bool
vpConfChoiceIndex(const char *choices, const char *value, int *index)
{
    size_t vlen = strlen(value);
    int i = 0;
    for (const char *c = choices; c && *c; i++) {
        const char *comma = strchr(c, ',');
        size_t clen = comma ? (size_t)(comma - c) : strlen(c);
        if (clen == vlen && strncmp(c, value, vlen) == 0) {
            if (index)
                *index = i;
            return true;
        }
        c = comma ? comma + 2 : c + clen;
    }
    return false;
}

/* Decimal only, whatever the process's locale (the daemon and CLI call setlocale). */
bool
vpConfParseNumber(const char *s, double *out)
{
    static locale_t c;
    if (!c)
        c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!*s || strspn(s, "0123456789.+-eE") != strlen(s))
        return false;
    char *end = NULL;
    errno = 0;
    double v = strtod_l(s, &end, c);
    if (*end || errno || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool
vpConfCpuListValid(const char *text)
{
    const char *s = text;
    for (;;) {
        unsigned long long lo = 0, hi = 0;
        size_t n = strspn(s, "0123456789");
        if (n == 0 || n > 5 || (lo = strtoull(s, NULL, 10)) > 65535)
            return false;
        s += n;
        hi = lo;
        if (*s == '-') {
            s++;
            n = strspn(s, "0123456789");
            if (n == 0 || n > 5 || (hi = strtoull(s, NULL, 10)) > 65535 || hi < lo)
                return false;
            s += n;
        }
        if (*s == '\0')
            return true;
        if (*s != ',')
            return false;
        s++;
    }
}

char **
vpConfList(const char *value)
{
    size_t n = 1;
    for (const char *s = value; *s; s++)
        n += *s == ';';
    char **list = calloc(n + 1, sizeof(*list));
    if (!list)
        return NULL;
    size_t i = 0;
    for (const char *s = value;;) {
        const char *semi = strchr(s, ';');
        size_t len = semi ? (size_t)(semi - s) : strlen(s);
        /* GKeyFile's lists allowed a ';' after the last item: so does this. */
        if (!semi && len == 0 && i > 0)
            break;
        list[i++] = strndup(s, len);
        if (!semi)
            break;
        s = semi + 1;
    }
    return list;
}

/* Iterative, backtracking only to the last '*': linear in practice, and no recursion a
 * long pattern could deepen. */
static bool
globMatch(const char *glob, const char *name)
{
    const char *star = NULL, *resume = NULL;
    while (*name) {
        if (*glob == '*') {
            star = glob++;
            resume = name;
        } else if (*glob && (*glob == '?' || *glob == *name)) {
            glob++;
            name++;
        } else if (star) {
            glob = star + 1;
            name = ++resume;
        } else {
            return false;
        }
    }
    while (*glob == '*')
        glob++;
    return *glob == '\0';
}

bool
vpConfManages(char *const *globs, const char *name)
{
    if (!globs)
        return true;
    for (char *const *g = globs; *g; g++) {
        if (globMatch(*g, name))
            return true;
    }
    return false;
}

void
vpConfListFree(char **list)
{
    for (char **s = list; list && *s; s++)
        free(*s);
    free(list);
}

void
vpConfFree(vpConf *conf)
{
    if (!conf)
        return;
    for (size_t i = 0; i < conf->n; i++)
        free(conf->entries[i].value);
    free(conf->entries);
    free(conf->path);
    free(conf);
}

const char *
vpConfPath(const vpConf *conf)
{
    return conf->path;
}

static const vpConfKey *
mustFind(const char *group, const char *key)
{
    const vpConfKey *k = vpConfFindKey(group, key);
    if (!k)
        abort(); /* a caller asking for a key the table lacks is a programming error */
    return k;
}

bool
vpConfHas(const vpConf *conf, const char *group, const char *key, int *line)
{
    vpConfEntry *e = vpConfFindEntry(conf, mustFind(group, key));
    if (e && line)
        *line = e->line;
    return e != NULL;
}

const char *
vpConfGet(const vpConf *conf, const char *group, const char *key)
{
    const vpConfKey *k = mustFind(group, key);
    vpConfEntry *e = vpConfFindEntry(conf, k);
    return e ? e->value : k->def;
}

unsigned long long
vpConfGetUint(const vpConf *conf, const char *group, const char *key)
{
    const char *v = vpConfGet(conf, group, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

double
vpConfGetNumber(const vpConf *conf, const char *group, const char *key)
{
    double d = 0;
    const char *v = vpConfGet(conf, group, key);
    if (v)
        vpConfParseNumber(v, &d);
    return d;
}

int
vpConfGetChoice(const vpConf *conf, const char *group, const char *key)
{
    const vpConfKey *k = mustFind(group, key);
    const char *v = vpConfGet(conf, group, key);
    int index = -1;
    if (v)
        vpConfChoiceIndex(k->choices, v, &index);
    return index;
}

size_t
vpConfCount(const vpConf *conf, const char *group)
{
    size_t n = 0;
    for (size_t i = 0; i < conf->n; i++)
        n += strcmp(conf->entries[i].key->group, group) == 0;
    return n;
}

void
vpConfAt(const vpConf *conf, const char *group, size_t i, const char **key, const char **value)
{
    for (size_t j = 0; j < conf->n; j++) {
        if (strcmp(conf->entries[j].key->group, group) == 0 && i-- == 0) {
            *key = conf->entries[j].key->key;
            *value = conf->entries[j].value;
            return;
        }
    }
    abort();
}
