/*
 * vcpuplace topology --output: lstopo draws, we colour. lstopo reads an hwloc XML export in
 * which an object's "lstopoStyle" info attribute ("Background=#rrggbb;Text=#rrggbb") sets its
 * colours (lstopo(1), hwloc 2.x), so the picture is an export of the same topology with a
 * style on every PU and a legend line per owner (--append-legend). Identical objects are
 * not factorized, so every PU is drawn.
 */
#include "cli/picture.h"
#include "core/model/error.h"
#include "host/hwtopo.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* Well-separated colours for the first domains; later ones walk the hue circle by the
 * golden angle, which keeps neighbours apart. */
static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
    "#e377c2", "#8c564b", "#bcbd22", "#3d5a80", "#f4a261", "#6a994e",
};
/* A faint green, so that free PUs stand apart from the white of the boxes around them. */
#define VP_PICTURE_FREE "#f0fff0"
#define VP_PICTURE_RESERVED "#404040"
#define VP_PICTURE_HOUSEKEEPING "#ffe066"
#define VP_PICTURE_UNUSABLE "#c8c8c8"

static char *
domainColour(guint i)
{
    if (i < G_N_ELEMENTS(palette))
        return g_strdup(palette[i]);
    double h = fmod((i - G_N_ELEMENTS(palette)) * 137.508, 360.0) / 60.0,
           x = 1 - fabs(fmod(h, 2) - 1);
    double rgb[6][3] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
    double *c = rgb[(int)h % 6];
    /* 70% saturation and value: readable white text, distinct from the marks above. */
    return g_strdup_printf("#%02x%02x%02x", (int)(0.7 * (0.3 + 0.7 * c[0]) * 255),
                           (int)(0.7 * (0.3 + 0.7 * c[1]) * 255),
                           (int)(0.7 * (0.3 + 0.7 * c[2]) * 255));
}

static const char *
formatOf(const char *output, GError **error)
{
    static const char *const formats[] = {"png", "svg", "pdf"};
    const char *dot = strrchr(output, '.');

    for (gsize i = 0; dot && i < G_N_ELEMENTS(formats); i++) {
        if (g_ascii_strcasecmp(dot + 1, formats[i]) == 0)
            return formats[i];
    }
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                "--output %s: the name must end in .png, .svg or .pdf", output);
    return NULL;
}

/* The CPUs of set as a Linux list, for the legend. */
static char *
cpuList(hwloc_const_bitmap_t set)
{
    return hwloc_bitmap_iszero(set) ? g_strdup("none") : vpCpuListFormat(set);
}

static gboolean
styleAll(hwloc_topology_t hw, const vpTopology *topo, const vpLedger *ledger, GPtrArray *legend,
         GError **error)
{
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    g_autoptr(GHashTable) colour = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    g_autoptr(vpBitmap) reserved = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) unusable = hwloc_bitmap_alloc();

    for (guint i = 0; i < names->len; i++)
        g_hash_table_insert(colour, names->pdata[i], domainColour(i));
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        const vpPU *p = vpTopologyPU(topo, pu);
        vpOwner owner = vpLedgerOwner(ledger, pu);
        hwloc_obj_t obj = hwloc_get_pu_obj_by_os_index(hw, p->os);
        g_autofree char *style = NULL;

        if (!obj) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "CPU %u is not in hwloc's topology",
                        p->os);
            return FALSE;
        }
        if (owner.domain && owner.kind == VP_OWN_RESERVED) {
            style = g_strdup_printf("Background=%s;Text=%s", VP_PICTURE_RESERVED,
                                    (const char *)g_hash_table_lookup(colour, owner.domain));
            hwloc_bitmap_set(reserved, p->os);
        } else if (owner.domain) {
            style = g_strdup_printf("Background=%s;Text=#ffffff",
                                    (const char *)g_hash_table_lookup(colour, owner.domain));
        } else if (hwloc_bitmap_isset(vpTopologyHousekeeping(topo), p->os)) {
            style = g_strdup("Background=" VP_PICTURE_HOUSEKEEPING ";Text=#000000");
        } else if (!p->usable) {
            style = g_strdup("Background=" VP_PICTURE_UNUSABLE ";Text=#000000");
            hwloc_bitmap_set(unusable, p->os);
        } else {
            style = g_strdup("Background=" VP_PICTURE_FREE ";Text=#000000");
        }
        if (hwloc_obj_add_info(obj, "lstopoStyle", style) < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "hwloc_obj_add_info: %s",
                        g_strerror(errno));
            return FALSE;
        }
    }
    for (guint i = 0; i < names->len; i++) {
        const vpPlan *plan = vpLedgerLookup(ledger, names->pdata[i]);
        g_autoptr(vpBitmap) vcpus = hwloc_bitmap_alloc();
        for (unsigned v = 0; v < plan->nvcpus; v++) {
            if (plan->vcpu_pu[v] >= 0)
                hwloc_bitmap_set(vcpus, (unsigned)plan->vcpu_pu[v]);
        }
        g_autofree char *cpus = cpuList(vcpus);
        g_autofree char *emu = plan->emulator ? cpuList(plan->emulator) : g_strdup("none");
        g_ptr_array_add(legend,
                        g_strdup_printf("%s %s: vCPUs on %s, emulator on %s",
                                        (const char *)g_hash_table_lookup(colour, names->pdata[i]),
                                        (const char *)names->pdata[i], cpus, emu));
    }
    g_autofree char *hk = cpuList(vpTopologyHousekeeping(topo));
    g_autofree char *rsv = cpuList(reserved);
    g_ptr_array_add(legend, g_strdup_printf("%s housekeeping: %s", VP_PICTURE_HOUSEKEEPING, hk));
    g_ptr_array_add(legend,
                    g_strdup_printf("%s reserved idle sibling (text in its VM's colour): %s",
                                    VP_PICTURE_RESERVED, rsv));
    if (!hwloc_bitmap_iszero(unusable)) {
        g_autofree char *un = cpuList(unusable);
        g_ptr_array_add(legend,
                        g_strdup_printf("%s not handed out (outside host_cpus or not allowed): %s",
                                        VP_PICTURE_UNUSABLE, un));
    }
    g_ptr_array_add(legend, g_strdup_printf("%s free", VP_PICTURE_FREE));
    return TRUE;
}

gboolean
vpPictureRender(const vpTopology *topo, const vpLedger *ledger, const char *output, GError **error)
{
    const char *format = formatOf(output, error);
    g_autoptr(GPtrArray) legend = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autofree char *dir = NULL;
    g_autofree char *xml = NULL;
    g_autofree char *err_out = NULL;
    hwloc_topology_t hw;
    gboolean ok = FALSE;
    int status;

    if (!format || !(hw = vpHwtopoOpen(vpTopologyGetSource(topo), error)))
        return FALSE;
    if (!styleAll(hw, topo, ledger, legend, error))
        goto out;
    if (!(dir = g_dir_make_tmp("vcpuplace-picture.XXXXXX", error)))
        goto out;
    xml = g_build_filename(dir, "topology.xml", NULL);
    if (hwloc_topology_export_xml(hw, xml, 0) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "hwloc XML export to %s: %s", xml,
                    g_strerror(errno));
        goto out;
    }
    g_ptr_array_add(argv, "lstopo");
    g_ptr_array_add(argv, "--if");
    g_ptr_array_add(argv, "xml");
    g_ptr_array_add(argv, "--input");
    g_ptr_array_add(argv, xml);
    g_ptr_array_add(argv, "--of");
    g_ptr_array_add(argv, (char *)format);
    g_ptr_array_add(argv, "--no-factorize");
    g_ptr_array_add(argv, "--no-io");
    g_ptr_array_add(argv, "--no-default-legend");
    for (guint i = 0; i < legend->len; i++) {
        g_ptr_array_add(argv, "--append-legend");
        g_ptr_array_add(argv, legend->pdata[i]);
    }
    g_ptr_array_add(argv, "-f");
    g_ptr_array_add(argv, (char *)output);
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err_out,
                      &status, error)) {
        g_prefix_error(error, "lstopo (Debian package hwloc): ");
        goto out;
    }
    if (!g_spawn_check_wait_status(status, error)) {
        if (err_out && *g_strstrip(err_out))
            g_prefix_error(error, "lstopo: %s: ", err_out);
        else
            g_prefix_error(error, "lstopo: ");
        goto out;
    }
    ok = TRUE;
out:
    if (xml)
        g_unlink(xml);
    if (dir)
        g_rmdir(dir);
    hwloc_topology_destroy(hw);
    return ok;
}
