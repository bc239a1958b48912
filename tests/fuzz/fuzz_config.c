/*
 * vcpuplaced.conf through the daemon's loader, read from a file as the daemon reads it
 * (/proc/self/fd of a memfd). Whatever it accepts must satisfy what the rest of the daemon
 * trusts vpConfig for; and the hook must accept and refuse exactly the same files, with the
 * same message.
 */
#include "daemon/config.h"
#include "fuzz.h"
#include "hook/input.h"

#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("vp-fuzz-config", MFD_CLOEXEC);
    g_assert(fd >= 0);
    g_assert(size == 0 || write(fd, data, size) == (ssize_t)size);
    g_autofree char *path = g_strdup_printf("/proc/self/fd/%d", fd);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpConfig) cfg = vpConfigLoad(path, &err);
    vpHookConfig hcfg;
    char *herr = NULL;
    bool hook_ok = vpHookConfigLoad(&hcfg, path, false, &herr);
    close(fd);
    /* The hook salvages what the daemon refuses, and says why with the daemon's words. */
    g_assert(hook_ok && !herr);
    if (!cfg) {
        g_assert(err && err->message && *err->message);
        g_assert_cmpstr(hcfg.bad, ==, err->message);
        g_assert(hcfg.socket && hcfg.socket[0] == '/');
        vpHookConfigClear(&hcfg);
        return 0;
    }
    g_assert_null(hcfg.bad);
    g_assert_cmpstr(hcfg.socket, ==, cfg->socket);
    g_assert(hcfg.fail_closed == (cfg->hook_failure == VP_HOOK_FAIL_CLOSED));
    g_assert_cmpint(hcfg.timeout_ms, ==, cfg->hook_timeout_ms);
    vpHookConfigClear(&hcfg);
    g_assert_no_error(err);
    g_assert(cfg->uri && *cfg->uri);
    g_assert(g_path_is_absolute(cfg->socket) && g_path_is_absolute(cfg->state));
    g_assert(cfg->hook_timeout_ms >= 1 && cfg->hook_timeout_ms <= 60000);
    g_assert(vpHookFailureFromName(vpHookFailureName(cfg->hook_failure)) == (int)cfg->hook_failure);
    for (char **g = cfg->domains; g && *g; g++)
        g_assert(**g);
    vpConfigManages(cfg, "vm-1");
    vpConfigManages(cfg, "");
    if (cfg->host_cpus)
        g_free(vpCpuListFormat(cfg->host_cpus));
    if (cfg->housekeeping)
        g_free(vpCpuListFormat(cfg->housekeeping));
    return 0;
}
