/*
 * vcpuplaced.conf into vpConfig. The file is read and checked by plugin/conf, the reader
 * the hook uses too, so both refuse the same files with the same messages; here its
 * values become the daemon's types. The rest of the daemon trusts vpConfig.
 */
#include "daemon/config.h"
#include "core/place/flavor.h"
#include "conf/conf.h"
#include "host/hwtopo.h"
#include "host/threads.h"

#include <string.h>

#define NS 1000000000LL

static const char *const balanceModes[] = {"auto", "advise", "off"};

const char *
vpBalanceModeName(vpBalanceMode mode)
{
    return mode < G_N_ELEMENTS(balanceModes) ? balanceModes[mode] : "?";
}

int
vpBalanceModeFromName(const char *name)
{
    for (gsize i = 0; i < G_N_ELEMENTS(balanceModes); i++) {
        if (g_strcmp0(name, balanceModes[i]) == 0)
            return i;
    }
    return -1;
}

const char *
vpDaemonModeName(vpDaemonMode mode)
{
    return mode == VP_MODE_ENFORCE ? "enforce" : "report";
}

const char *
vpHookFailureName(vpHookFailure mode)
{
    return mode == VP_HOOK_FAIL_CLOSED ? "closed" : "open";
}

int
vpHookFailureFromName(const char *name)
{
    if (g_strcmp0(name, "open") == 0)
        return VP_HOOK_FAIL_OPEN;
    if (g_strcmp0(name, "closed") == 0)
        return VP_HOOK_FAIL_CLOSED;
    return -1;
}

void
vpConfigFree(vpConfig *cfg)
{
    if (!cfg)
        return;
    g_free(cfg->path);
    g_free(cfg->uri);
    g_free(cfg->topology);
    if (cfg->host_cpus)
        hwloc_bitmap_free(cfg->host_cpus);
    if (cfg->housekeeping)
        hwloc_bitmap_free(cfg->housekeeping);
    g_free(cfg->socket);
    g_free(cfg->state);
    g_free(cfg->qemu_conf);
    g_free(cfg->qemu_run_dir);
    g_strfreev(cfg->domains);
    g_free(cfg->capacity_vcpus);
    g_free(cfg->capacity_flavors);
    g_free(cfg->metrics_textfile);
    vpPolicyClear(&cfg->defaults);
    g_free(cfg);
}

static gboolean
getCpus(const vpConf *conf, const char *key, hwloc_bitmap_t *out, GError **error)
{
    const char *v = vpConfGet(conf, "daemon", key);
    if (!v || strcmp(v, "none") == 0)
        return TRUE;
    *out = vpCpuListParse(key, v, error);
    return *out != NULL;
}

static void
setString(char **out, const vpConf *conf, const char *group, const char *key)
{
    const char *v = vpConfGet(conf, group, key);
    g_free(*out);
    *out = g_strdup(v);
}

/* What core checks again (pressure and rebalancer invariants, policy names) was checked by
 * vpConfLoad already, with the file and line: a failure here is a disagreement between
 * the two, reported all the same. */
static gboolean
configFromConf(vpConfig *cfg, const vpConf *conf, GError **error)
{
    const char *d = "daemon", *r = "rebalance";
    setString(&cfg->uri, conf, d, "uri");
    setString(&cfg->topology, conf, d, "topology");
    setString(&cfg->socket, conf, d, "socket");
    setString(&cfg->state, conf, d, "state");
    setString(&cfg->qemu_conf, conf, d, "qemu_conf");
    setString(&cfg->qemu_run_dir, conf, d, "qemu_run_dir");
    setString(&cfg->capacity_vcpus, conf, d, "capacity_vcpus");
    setString(&cfg->capacity_flavors, conf, d, "capacity_flavors");
    if (g_strcmp0(cfg->topology, "host") == 0)
        g_clear_pointer(&cfg->topology, g_free);
    if (!getCpus(conf, "host_cpus", &cfg->host_cpus, error) ||
        !getCpus(conf, "housekeeping_cpus", &cfg->housekeeping, error))
        return FALSE;
    cfg->hook_failure = vpConfGetChoice(conf, d, "hook_failure");
    cfg->hook_timeout_ms = (int)vpConfGetUint(conf, d, "hook_timeout_ms");
    cfg->vcpu_poll_ms = (guint)vpConfGetUint(conf, d, "vcpu_poll_ms");
    cfg->node_reserve = (guint64)vpConfGetUint(conf, d, "node_memory_reserve_mib") << 20;
    cfg->mode = vpConfGetChoice(conf, d, "mode");
    cfg->adopt_running = vpConfGetChoice(conf, d, "adopt_running") == 1;
    cfg->hook = vpConfGetChoice(conf, d, "hook") == 0;
    const char *globs = vpConfGet(conf, d, "domains");
    if (globs) {
        char **list = vpConfList(globs);
        cfg->domains = g_strdupv(list);
        vpConfListFree(list);
    }

    for (gsize i = 0; i < vpConfCount(conf, "policy"); i++) {
        const char *key, *value;
        vpConfAt(conf, "policy", i, &key, &value);
        if (!vpPolicySetDefault(&cfg->defaults, key, value, error))
            return FALSE;
    }
    /* The flavors' policies lie over the [policy] defaults: checked once those are known. */
    if (cfg->capacity_flavors) {
        g_autoptr(GArray) flavors = vpFlavorArrayNew();

        if (!vpFlavorParseList("capacity_flavors", cfg->capacity_flavors, &cfg->defaults, flavors,
                               error))
            return FALSE;
    }

    cfg->balance_mode = vpConfGetChoice(conf, r, "mode");
    /* Report mode moves nothing: the rebalancer says what it would move. */
    if (cfg->mode == VP_MODE_REPORT && cfg->balance_mode == VP_BALANCE_AUTO)
        cfg->balance_mode = VP_BALANCE_ADVISE;
    cfg->interval_ms = (guint)(vpConfGetNumber(conf, r, "interval") * 1000 + 0.5);
    setString(&cfg->metrics_textfile, conf, r, "textfile");
    vpPressureConfig *p = &cfg->pressure;
    p->alpha = vpConfGetNumber(conf, r, "alpha");
    p->hot_wait = vpConfGetNumber(conf, r, "hot_wait");
    p->cool_wait = vpConfGetNumber(conf, r, "cool_wait");
    p->hot_corun = vpConfGetNumber(conf, r, "hot_corun");
    p->idle_busy = vpConfGetNumber(conf, r, "idle_busy");
    p->persistence = (guint)vpConfGetUint(conf, r, "persistence");
    vpRebalanceConfig *b = &cfg->rebalance;
    b->max_moves = (guint)vpConfGetUint(conf, r, "max_moves");
    b->min_residency_ns = (gint64)vpConfGetUint(conf, r, "min_residency") * NS;
    b->memory_ns = (gint64)vpConfGetUint(conf, r, "memory") * NS;
    b->return_quiet = (guint)vpConfGetUint(conf, r, "return_quiet");
    b->coupled_wakeups = vpConfGetNumber(conf, r, "coupled_wakeups");
    cfg->admission.max_moves = (unsigned)vpConfGetUint(conf, "admission", "max_moves");
    return vpPressureConfigValidate(p, error) && vpRebalanceConfigValidate(b, error);
}

const char *
vpConfigQemuRunDir(const vpConfig *cfg)
{
    return cfg->qemu_run_dir ? cfg->qemu_run_dir : vpVcpuThreadsRunDir(cfg->uri);
}

gboolean
vpConfigManages(const vpConfig *cfg, const char *name)
{
    return vpConfManages(cfg->domains, name);
}

/* The table's defaults (plugin/conf), through the path a file's values take. */
vpConfig *
vpConfigNew(void)
{
    vpConfig *cfg = g_new0(vpConfig, 1);
    vpPolicyInitDefaults(&cfg->defaults);
    vpPressureConfigInit(&cfg->pressure);
    vpRebalanceConfigInit(&cfg->rebalance);
    char *why = NULL;
    vpConf *none = vpConfParse("(built-in defaults)", "", 0, &why);
    g_assert(none && configFromConf(cfg, none, NULL));
    vpConfFree(none);
    return cfg;
}

vpConfig *
vpConfigLoad(const char *path, GError **error)
{
    const char *file = path ? path : VP_DEFAULT_CONFIG;
    char *why = NULL;
    vpConf *conf = vpConfLoad(file, path == NULL, &why);
    if (!conf) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, why ? why : "out of memory");
        free(why);
        return NULL;
    }
    g_autoptr(vpConfig) cfg = vpConfigNew();
    gboolean ok = configFromConf(cfg, conf, error);
    if (ok && vpConfPath(conf))
        cfg->path = g_strdup(vpConfPath(conf));
    if (!ok)
        g_prefix_error(error, "%s: ", file);
    vpConfFree(conf);
    return ok ? g_steal_pointer(&cfg) : NULL;
}

vpTopology *
vpConfigLoadTopology(const vpConfig *cfg, GError **error)
{
    vpTopology *topo = vpHwtopoLoad(cfg->topology, cfg->host_cpus, cfg->housekeeping, error);

    if (topo)
        vpTopologySetNodeReserve(topo, cfg->node_reserve);
    return topo;
}
