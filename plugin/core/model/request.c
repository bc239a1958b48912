/*
 * A domain's request. Plain data: the parsers (domain XML, simulate traces) fill it in
 * and validate; this file only owns its memory.
 */
#include "core/model/request.h"

#include <string.h>

vpRequest *
vpRequestNew(const char *name, unsigned vcpus)
{
    vpRequest *req = g_new0(vpRequest, 1);

    req->name = g_strdup(name);
    req->vcpus = vcpus;
    req->max_vcpus = vcpus;
    req->pins = g_new0(hwloc_bitmap_t, vcpus);
    vpPolicyInitDefaults(&req->policy);
    return req;
}

void
vpRequestFree(vpRequest *req)
{
    unsigned i;

    if (!req)
        return;
    for (i = 0; i < req->max_vcpus; i++) {
        if (req->pins[i])
            hwloc_bitmap_free(req->pins[i]);
    }
    g_free(req->pins);
    if (req->emulator_pin)
        hwloc_bitmap_free(req->emulator_pin);
    g_clear_pointer(&req->iothread_pin, hwloc_bitmap_free);
    g_clear_pointer(&req->realtime, hwloc_bitmap_free);
    g_clear_pointer(&req->online, hwloc_bitmap_free);
    g_clear_pointer(&req->cpuset, hwloc_bitmap_free);
    g_clear_pointer(&req->nodeset, hwloc_bitmap_free);
    for (i = 0; i < req->ncells; i++) {
        g_clear_pointer(&req->cells[i].vcpus, hwloc_bitmap_free);
        g_clear_pointer(&req->cells[i].nodeset, hwloc_bitmap_free);
    }
    g_free(req->cells);
    g_free(req->type);
    vpPolicyClear(&req->policy);
    g_free(req->name);
    g_free(req->uuid);
    g_free(req);
}

unsigned
vpRequestGuestThreads(const vpRequest *req)
{
    return req->threads ? req->threads : 1;
}

bool
vpRequestOnline(const vpRequest *req, unsigned vcpu)
{
    return req->online ? hwloc_bitmap_isset(req->online, vcpu) : vcpu < req->vcpus;
}

unsigned
vpRequestPlanVcpus(const vpRequest *req)
{
    return req->online && !hwloc_bitmap_iszero(req->online)
               ? (unsigned)hwloc_bitmap_last(req->online) + 1
               : req->vcpus;
}

/* libvirt's qemu driver runs type='qemu' (TCG) and type='kvm'. libvirt's test driver
 * (type='test') stands in for it in the integration tier: its domains pin like QEMU ones
 * and run nothing. A request without a type comes from a trace, placed as QEMU. */
bool
vpRequestIsQemu(const vpRequest *req)
{
    return !req->type || strcmp(req->type, "qemu") == 0 || strcmp(req->type, "kvm") == 0 ||
           strcmp(req->type, "test") == 0;
}

static const char *const mem_mode_names[VP_MEM_LAST] = {
    [VP_MEM_NONE] = "none",
    [VP_MEM_STRICT] = "strict",
    [VP_MEM_RESTRICTIVE] = "restrictive",
    [VP_MEM_PREFERRED] = "preferred",
    [VP_MEM_INTERLEAVE] = "interleave",
};

const char *
vpMemModeName(vpMemMode mode)
{
    return mode < VP_MEM_LAST ? mem_mode_names[mode] : "?";
}

bool
vpMemModeHard(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE || mode == VP_MEM_INTERLEAVE;
}

int
vpMemModeFromName(const char *name)
{
    for (int i = VP_MEM_STRICT; i < VP_MEM_LAST; i++) {
        if (g_strcmp0(name, mem_mode_names[i]) == 0)
            return i;
    }
    return -1;
}

/* libvirt's units: 1000-based with a B, 1024-based without or with iB. */
static const struct {
    const char *name;
    guint64 scale;
} units[] = {
    {"b", 1},
    {"byte", 1},
    {"bytes", 1},
    {"kb", 1000ULL},
    {"k", 1ULL << 10},
    {"kib", 1ULL << 10},
    {"mb", 1000ULL * 1000},
    {"m", 1ULL << 20},
    {"mib", 1ULL << 20},
    {"gb", 1000ULL * 1000 * 1000},
    {"g", 1ULL << 30},
    {"gib", 1ULL << 30},
    {"tb", 1000ULL * 1000 * 1000 * 1000},
    {"t", 1ULL << 40},
    {"tib", 1ULL << 40},
    {"pb", 1000ULL * 1000 * 1000 * 1000 * 1000},
    {"p", 1ULL << 50},
    {"pib", 1ULL << 50},
    {"eb", 1000ULL * 1000 * 1000 * 1000 * 1000 * 1000},
    {"e", 1ULL << 60},
    {"eib", 1ULL << 60},
};

bool
vpMemoryScale(const char *field, const char *value, const char *unit, const char *default_unit,
              guint64 *bytes, GError **error)
{
    g_autofree char *lower = g_ascii_strdown(unit ? unit : default_unit, -1);
    g_autofree char *copy = g_strstrip(g_strdup(value ? value : ""));
    guint64 n;

    for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
        if (strcmp(lower, units[i].name) != 0)
            continue;
        if (!g_ascii_string_to_unsigned(copy, 10, 0, G_MAXUINT64, &n, NULL)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s '%s' is not a whole number", field,
                        value ? value : "");
            return false;
        }
        if (n > G_MAXUINT64 / units[i].scale) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s '%s %s' is too large", field, value,
                        unit ? unit : default_unit);
            return false;
        }
        *bytes = n * units[i].scale;
        return true;
    }
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                "%s unit '%s' is not one of b, KB, KiB, MB, MiB, GB, GiB, TB, TiB, PB, PiB, EB, "
                "EiB (or k, M, G, T, P, E)",
                field, unit ? unit : default_unit);
    return false;
}

bool
vpMemorySizeParse(const char *field, const char *text, guint64 *bytes, GError **error)
{
    const char *p = text;
    g_autofree char *number = NULL;

    while (g_ascii_isdigit(*p))
        p++;
    if (p == text) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s='%s' is not a memory size (e.g. 64GiB, 512M)", field, text);
        return false;
    }
    number = g_strndup(text, p - text);
    return vpMemoryScale(field, number, *p ? p : NULL, "b", bytes, error);
}

char *
vpMemoryFormat(guint64 bytes)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;

    while (u + 1 < G_N_ELEMENTS(names) && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    return g_strdup_printf("%" G_GUINT64_FORMAT " %s", bytes, names[u]);
}

guint64
vpRequestCellPage(const vpRequest *req, const vpCell *cell)
{
    return cell->page_size ? cell->page_size : req->hugepage_size;
}
