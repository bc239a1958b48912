/*
 * The topology's words: level names, and Linux CPU lists ("0-3,8,10-11") as libvirt, sysfs
 * and /proc write them, parsed and formatted (declared in topology.h).
 */
#include "core/model/topology.h"

#include <stdlib.h>

static const char *const level_names[VP_LEVEL_LAST] = {
    [VP_LEVEL_CORE] = "core", [VP_LEVEL_CLUSTER] = "cluster", [VP_LEVEL_L3] = "l3",
    [VP_LEVEL_NUMA] = "numa", [VP_LEVEL_PACKAGE] = "package", [VP_LEVEL_HOST] = "host",
};

const char *
vpLevelName(vpLevel level)
{
    return level < VP_LEVEL_LAST ? level_names[level] : "?";
}

int
vpLevelFromName(const char *name)
{
    for (int i = 0; i < VP_LEVEL_LAST; i++) {
        if (g_strcmp0(name, level_names[i]) == 0)
            return i;
    }
    return -1;
}

/* Linux's cpulist grammar: N or N-M (N <= M) separated by commas, CPUs up to 65535. */
static bool
vpCpuListValid(const char *list)
{
    g_auto(GStrv) parts = g_strsplit(list, ",", -1);

    for (char **part = parts; *part; part++) {
        g_auto(GStrv) range = g_strsplit(*part, "-", 3);
        guint64 lo = 0, hi = 0;

        if (!range[0] || !g_ascii_string_to_unsigned(range[0], 10, 0, 65535, &lo, NULL))
            return false;
        hi = lo;
        if (range[1] &&
            (range[2] || !g_ascii_string_to_unsigned(range[1], 10, 0, 65535, &hi, NULL) || hi < lo))
            return false;
    }
    return true;
}

hwloc_bitmap_t
vpCpuListParse(const char *field, const char *list, GError **error)
{
    hwloc_bitmap_t set;

    if (!list || !*list) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='' is empty, expected a CPU list",
                    field);
        return NULL;
    }
    /* Checked here in full, not left to hwloc: its parser takes "0-" as infinite and
     * ",-19" as CPU 4294967277, and allocates a bitmap up to the highest CPU named, so
     * "0-4000000000" costs half a gigabyte before any bound could refuse it. */
    if (!vpCpuListValid(list)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='%s' is not a CPU list (e.g. 0-3,8)",
                    field, list);
        return NULL;
    }
    set = hwloc_bitmap_alloc();
    if (hwloc_bitmap_list_sscanf(set, list) < 0 || hwloc_bitmap_weight(set) < 0) {
        hwloc_bitmap_free(set);
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='%s' is not a CPU list (e.g. 0-3,8)",
                    field, list);
        return NULL;
    }
    return set;
}

char *
vpCpuListFormat(hwloc_const_bitmap_t set)
{
    char *s = NULL;
    char *ret;

    if (!set || hwloc_bitmap_iszero(set))
        return g_strdup("");
    hwloc_bitmap_list_asprintf(&s, set);
    ret = g_strdup(s);
    free(s);
    return ret;
}
