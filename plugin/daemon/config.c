/*
 * Reads vcpuplaced.conf. Every value is checked here, once, with an error naming the key
 * and the bad value; the rest of the daemon trusts vpConfig.
 */
#include "daemon/config.h"
#include "proto/proto.h"
#include "host/threads.h"

#include <errno.h>
#include <string.h>

static const char *const daemonKeys[] = {
    "uri",     "topology",  "host_cpus",    "housekeeping_cpus",
    "socket",  "state",     "hook_failure", "hook_timeout_ms",
    "domains", "qemu_conf", "vcpu_poll_ms", "qemu_run_dir",
    NULL,
};

/* The pressure model's and the rebalancer's keys are theirs (core/pressure.h,
 * core/rebalance.h); the daemon adds the rest. */
static const char *const rebalanceKeys[] = {
    "mode",          "interval",  "textfile",     "alpha",           "hot_wait",
    "cool_wait",     "hot_corun", "idle_busy",    "persistence",     "max_moves",
    "min_residency", "memory",    "return_quiet", "coupled_wakeups", NULL,
};

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

vpConfig *
vpConfigNew(void)
{
    vpConfig *cfg = g_new0(vpConfig, 1);
    cfg->uri = g_strdup(VP_DEFAULT_URI);
    cfg->socket = g_strdup(VP_DEFAULT_SOCKET);
    cfg->state = g_strdup(VP_DEFAULT_STATE);
    cfg->hook_failure = VP_HOOK_FAIL_OPEN;
    cfg->hook_timeout_ms = VP_DEFAULT_HOOK_TIMEOUT_MS;
    cfg->qemu_conf = g_strdup(VP_DEFAULT_QEMU_CONF);
    cfg->vcpu_poll_ms = VP_DEFAULT_VCPU_POLL_MS;
    vpPolicyInitDefaults(&cfg->defaults);
    cfg->balance_mode = VP_BALANCE_AUTO;
    cfg->interval_ms = VP_DEFAULT_INTERVAL_MS;
    vpPressureConfigInit(&cfg->pressure);
    vpRebalanceConfigInit(&cfg->rebalance);
    return cfg;
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
    g_free(cfg->metrics_textfile);
    vpPolicyClear(&cfg->defaults);
    g_free(cfg);
}

static gboolean
checkKeys(GKeyFile *kf, const char *path, GError **error)
{
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (char **g = groups; *g; g++) {
        if (strcmp(*g, "daemon") != 0 && strcmp(*g, "policy") != 0 &&
            strcmp(*g, "rebalance") != 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: unknown group [%s] (known: daemon, policy, rebalance)", path, *g);
            return FALSE;
        }
    }
    g_auto(GStrv) rkeys = g_key_file_get_keys(kf, "rebalance", NULL, NULL);
    for (char **k = rkeys; rkeys && *k; k++) {
        if (!g_strv_contains(rebalanceKeys, *k)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: unknown key '%s' in [rebalance]",
                        path, *k);
            return FALSE;
        }
    }
    g_auto(GStrv) keys = g_key_file_get_keys(kf, "daemon", NULL, NULL);
    for (char **k = keys; keys && *k; k++) {
        if (!g_strv_contains(daemonKeys, *k)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: unknown key '%s' in [daemon]", path,
                        *k);
            return FALSE;
        }
    }
    return TRUE;
}

/* A string value: empty is an error, absent keeps *out. */
static gboolean
getString(GKeyFile *kf, const char *path, const char *key, char **out, GError **error)
{
    if (!g_key_file_has_key(kf, "daemon", key, NULL))
        return TRUE;
    g_autofree char *v = g_key_file_get_string(kf, "daemon", key, NULL);
    if (!v || !*v) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: [daemon] %s is empty", path, key);
        return FALSE;
    }
    g_free(*out);
    *out = g_steal_pointer(&v);
    return TRUE;
}

static gboolean
getCpus(GKeyFile *kf, const char *path, const char *key, gboolean none_ok, hwloc_bitmap_t *out,
        GError **error)
{
    g_autofree char *v = NULL;
    if (!getString(kf, path, key, &v, error))
        return FALSE;
    if (!v || (none_ok && strcmp(v, "none") == 0))
        return TRUE;
    *out = vpCpuListParse(key, v, error);
    if (!*out) {
        g_prefix_error(error, "%s: ", path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parseRebalance(vpConfig *cfg, GKeyFile *kf, const char *path, GError **error)
{
    const char *g = "rebalance";
    g_autofree char *mode = g_key_file_get_string(kf, g, "mode", NULL);
    if (mode) {
        int m = vpBalanceModeFromName(mode);
        if (m < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [rebalance] mode='%s' is not one of auto, advise, off", path, mode);
            return FALSE;
        }
        cfg->balance_mode = m;
    }
    g_autofree char *interval = g_key_file_get_string(kf, g, "interval", NULL);
    if (interval) {
        char *end = NULL;
        double s = g_ascii_strtod(interval, &end);
        if (end == interval || *end || !(s >= 0.1 && s <= 3600)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [rebalance] interval='%s' is not a number of seconds in 0.1..3600",
                        path, interval);
            return FALSE;
        }
        cfg->interval_ms = (guint)(s * 1000 + 0.5);
    }
    g_autofree char *textfile = g_key_file_get_string(kf, g, "textfile", NULL);
    if (textfile) {
        if (!g_path_is_absolute(textfile) || g_str_has_suffix(textfile, "/")) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [rebalance] textfile='%s' is not an absolute file path", path,
                        textfile);
            return FALSE;
        }
        g_free(cfg->metrics_textfile);
        cfg->metrics_textfile = g_steal_pointer(&textfile);
    }
    if (!vpPressureConfigLoadKeyFile(&cfg->pressure, kf, g, error) ||
        !vpPressureConfigValidate(&cfg->pressure, error) ||
        !vpRebalanceConfigLoadKeyFile(&cfg->rebalance, kf, g, error)) {
        g_prefix_error(error, "%s: ", path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
configParse(vpConfig *cfg, GKeyFile *kf, const char *path, GError **error)
{
    if (!checkKeys(kf, path, error) || !getString(kf, path, "uri", &cfg->uri, error) ||
        !getString(kf, path, "topology", &cfg->topology, error) ||
        !getString(kf, path, "socket", &cfg->socket, error) ||
        !getString(kf, path, "state", &cfg->state, error) ||
        !getString(kf, path, "qemu_conf", &cfg->qemu_conf, error) ||
        !getString(kf, path, "qemu_run_dir", &cfg->qemu_run_dir, error) ||
        !getCpus(kf, path, "host_cpus", FALSE, &cfg->host_cpus, error) ||
        !getCpus(kf, path, "housekeeping_cpus", TRUE, &cfg->housekeeping, error))
        return FALSE;
    if (g_strcmp0(cfg->topology, "host") == 0)
        g_clear_pointer(&cfg->topology, g_free);
    if (cfg->qemu_run_dir && !g_path_is_absolute(cfg->qemu_run_dir)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s: [daemon] qemu_run_dir='%s' must be an absolute path", path,
                    cfg->qemu_run_dir);
        return FALSE;
    }
    if (!g_path_is_absolute(cfg->socket) || !g_path_is_absolute(cfg->state)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s: [daemon] socket='%s' and state='%s' must be absolute paths", path,
                    cfg->socket, cfg->state);
        return FALSE;
    }

    g_autofree char *mode = NULL;
    if (!getString(kf, path, "hook_failure", &mode, error))
        return FALSE;
    if (mode) {
        int m = vpHookFailureFromName(mode);
        if (m < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [daemon] hook_failure='%s' is not one of open, closed", path, mode);
            return FALSE;
        }
        cfg->hook_failure = m;
    }

    g_autofree char *timeout = NULL;
    if (!getString(kf, path, "hook_timeout_ms", &timeout, error))
        return FALSE;
    if (timeout) {
        guint64 ms = 0;
        if (!g_ascii_string_to_unsigned(timeout, 10, 1, 60000, &ms, NULL)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [daemon] hook_timeout_ms='%s' is not a number of milliseconds "
                        "in 1..60000",
                        path, timeout);
            return FALSE;
        }
        cfg->hook_timeout_ms = (int)ms;
    }

    g_autofree char *poll = NULL;
    if (!getString(kf, path, "vcpu_poll_ms", &poll, error))
        return FALSE;
    if (poll) {
        guint64 ms = 0;
        if (!g_ascii_string_to_unsigned(poll, 10, 0, 3600000, &ms, NULL) || (ms && ms < 100)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [daemon] vcpu_poll_ms='%s' is not 0 (off) or a number of "
                        "milliseconds in 100..3600000",
                        path, poll);
            return FALSE;
        }
        cfg->vcpu_poll_ms = (guint)ms;
    }

    if (g_key_file_has_key(kf, "daemon", "domains", NULL)) {
        gsize n = 0;
        g_auto(GStrv) globs = g_key_file_get_string_list(kf, "daemon", "domains", &n, NULL);
        for (gsize i = 0; i < n; i++) {
            if (!*globs[i]) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "%s: [daemon] domains: pattern %zu is empty", path, i + 1);
                return FALSE;
            }
        }
        if (n == 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: [daemon] domains is empty (leave it out to manage every domain)",
                        path);
            return FALSE;
        }
        cfg->domains = g_steal_pointer(&globs);
    }

    if (g_key_file_has_group(kf, "policy") &&
        !vpPolicyLoadKeyFile(&cfg->defaults, kf, "policy", error)) {
        g_prefix_error(error, "%s: ", path);
        return FALSE;
    }
    return parseRebalance(cfg, kf, path, error);
}

const char *
vpConfigQemuRunDir(const vpConfig *cfg)
{
    return cfg->qemu_run_dir ? cfg->qemu_run_dir : vpVcpuThreadsRunDir(cfg->uri);
}

gboolean
vpConfigManages(const vpConfig *cfg, const char *name)
{
    if (!cfg->domains)
        return TRUE;
    for (char **g = cfg->domains; *g; g++) {
        if (g_pattern_match_simple(*g, name))
            return TRUE;
    }
    return FALSE;
}

vpConfig *
vpConfigLoad(const char *path, GError **error)
{
    g_autoptr(vpConfig) cfg = vpConfigNew();
    const char *file = path ? path : VP_DEFAULT_CONFIG;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) err = NULL;
    if (!g_key_file_load_from_file(kf, file, G_KEY_FILE_NONE, &err)) {
        if (!path && g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return g_steal_pointer(&cfg);
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "cannot read configuration %s: %s", file,
                    err->message);
        return NULL;
    }
    if (!configParse(cfg, kf, file, error))
        return NULL;
    cfg->path = g_strdup(file);
    return g_steal_pointer(&cfg);
}
