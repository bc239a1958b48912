/*
 * The domain's memory and NUMA statements into the request: <memory>/<currentMemory>,
 * <memoryBacking><hugepages>, <numatune> with its <memnode>s, and the guest NUMA cells of
 * <cpu><numa>. Checked as libvirt checks them; errors name element, attribute and value.
 */
#include "libvirt/domxmlpriv.h"

#include <string.h>

/* A memory element or attribute in libvirt's units, KiB when no unit is given. */
static gboolean
vpDomXMLMemory(const char *where, const char *value, const char *unit, guint64 *bytes,
               GError **error)
{
    g_autofree char *field = g_strdup_printf("domain XML: %s", where);
    /* libvirt reads the figure with strtoull, which takes one leading '+' */
    const char *figure = value && value[0] == '+' && g_ascii_isdigit(value[1]) ? value + 1 : value;
    g_autofree char *shown = vpDomXMLShow(figure ? figure : "");
    /* An empty unit is no unit to libvirt (it reads attributes through XPath strings). */
    g_autofree char *ushown = unit && *unit ? vpDomXMLShow(unit) : NULL;

    if (!vpMemoryScale(field, shown, ushown, "KiB", bytes, error))
        return FALSE;
    return TRUE;
}

static gboolean
vpDomXMLElementMemory(xmlNodePtr node, guint64 *bytes, GError **error)
{
    g_autofree char *text = vpDomXMLText(node);
    g_autofree char *unit = vpDomXMLAttr(node, "unit");
    g_autofree char *where = g_strdup_printf("<%s>", node->name);

    return vpDomXMLMemory(where, text, unit, bytes, error);
}

/* <currentMemory> is what the guest has at start (balloon); <memory> its maximum. */
gboolean
vpDomXMLParseMemory(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr max, cur;
    guint64 bytes = 0;

    if (!vpDomXMLChild(root, "memory", &max, error) ||
        !vpDomXMLChild(root, "currentMemory", &cur, error))
        return FALSE;
    if (max && !vpDomXMLElementMemory(max, &req->memory, error))
        return FALSE;
    if (cur) {
        if (!vpDomXMLElementMemory(cur, &bytes, error))
            return FALSE;
        if (!max || bytes < req->memory)
            req->memory = bytes;
    }
    return TRUE;
}

/* One <page size unit nodeset>: its size in bytes, a power of two; *cells its nodeset (guest
 * cell ids), NULL when it has none. */
static gboolean
vpDomXMLParsePage(xmlNodePtr page, guint64 *bytes, hwloc_bitmap_t *cells, GError **error)
{
    g_autofree char *size = vpDomXMLAttr(page, "size");
    g_autofree char *unit = vpDomXMLAttr(page, "unit");
    g_autofree char *nodes = vpDomXMLAttr(page, "nodeset");

    *cells = NULL;
    if (!size) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <page> lacks the size attribute");
        return FALSE;
    }
    if (!vpDomXMLMemory("<page size>", size, unit, bytes, error))
        return FALSE;
    if (*bytes == 0 || (*bytes & (*bytes - 1))) {
        g_autofree char *shown = vpDomXMLShow(size);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <page size='%s'> is not a power of two bytes", shown);
        return FALSE;
    }
    return !nodes || (*cells = vpDomXMLSet("<page>", "nodeset", "guest cell", nodes, error));
}

/* The cells a <page nodeset> names get its size; a domain without guest cells is cell 0.
 * named: the cells earlier <page> elements took. */
static gboolean
vpDomXMLPageCells(xmlNodePtr page, vpRequest *req, hwloc_const_bitmap_t cells, guint64 bytes,
                  hwloc_bitmap_t named, GError **error)
{
    g_autofree char *text = vpDomXMLAttr(page, "nodeset");
    g_autofree char *shown = vpDomXMLShow(text);
    int id;

    hwloc_bitmap_foreach_begin(id, cells)
    {
        vpCell *cell = NULL;

        for (unsigned c = 0; c < req->ncells; c++) {
            if (req->cells[c].id == (unsigned)id)
                cell = &req->cells[c];
        }
        if ((!cell && (req->ncells || id != 0)) || hwloc_bitmap_isset(named, id)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <page nodeset='%s'> names guest cell %d, %s", shown, id,
                        hwloc_bitmap_isset(named, id) ? "which another <page> names too"
                                                      : "which the domain lacks");
            return FALSE;
        }
        hwloc_bitmap_set(named, id);
        if (cell)
            cell->page_size = bytes;
        else
            req->hugepage_size = bytes;
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

/* <memoryBacking><hugepages><page size='1' unit='G' nodeset='0'/></hugepages>: the <page>
 * without nodeset (libvirt's default huge page size, 2 MiB on x86, when there is none) backs
 * the domain; one with a nodeset backs those guest cells, each from its host node's pool of
 * that size. */
gboolean
vpDomXMLParseHugepages(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr backing, huge, page;
    g_autoptr(vpBitmap) named = hwloc_bitmap_alloc();
    guint64 fallback = 0;

    if (!vpDomXMLChild(root, "memoryBacking", &backing, error))
        return FALSE;
    if (!backing)
        return TRUE;
    if (!vpDomXMLChild(backing, "hugepages", &huge, error))
        return FALSE;
    if (!huge)
        return TRUE;
    for (page = huge->children; page; page = page->next) {
        g_autoptr(vpBitmap) cells = NULL;
        guint64 bytes;

        if (!vpDomXMLIs(page, "page"))
            continue;
        if (!vpDomXMLParsePage(page, &bytes, &cells, error))
            return FALSE;
        if (cells && !vpDomXMLPageCells(page, req, cells, bytes, named, error))
            return FALSE;
        if (!cells && fallback) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <hugepages> has two <page> elements without nodeset");
            return FALSE;
        }
        if (!cells)
            fallback = bytes;
    }
    /* without guest cells a <page nodeset='0'> is the domain's, before the fallback */
    if (!req->hugepage_size)
        req->hugepage_size = fallback ? fallback : 2ULL << 20;
    return TRUE;
}

static gboolean
vpDomXMLMemMode(xmlNodePtr node, vpMemMode *mode, GError **error)
{
    g_autofree char *value = vpDomXMLAttr(node, "mode");
    int m;

    if (!value) {
        *mode = VP_MEM_STRICT;
        return TRUE;
    }
    if ((m = vpMemModeFromName(value)) < 0) {
        g_autofree char *shown = vpDomXMLShow(value);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <%s mode='%s'> is not one of strict, restrictive, preferred, "
                    "interleave",
                    node->name, shown);
        return FALSE;
    }
    *mode = m;
    return TRUE;
}

static gboolean
vpDomXMLParseMemnode(xmlNodePtr node, vpRequest *req, GError **error)
{
    g_autofree char *nodes = vpDomXMLAttr(node, "nodeset");
    unsigned cellid = 0;
    vpCell *cell = NULL;
    g_autofree char *where = NULL;

    if (!xmlHasProp(node, (const xmlChar *)"cellid")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode> lacks the cellid attribute");
        return FALSE;
    }
    if (!vpDomXMLAttrNumber(node, "cellid", 0, VP_DOMXML_MAX_VCPUS, &cellid, error))
        return FALSE;
    for (unsigned i = 0; i < req->ncells; i++) {
        if (req->cells[i].id == cellid)
            cell = &req->cells[i];
    }
    if (!cell) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> names no guest NUMA <cell>", cellid);
        return FALSE;
    }
    if (cell->mode != VP_MEM_NONE) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> appears twice", cellid);
        return FALSE;
    }
    if (!vpDomXMLMemMode(node, &cell->mode, error))
        return FALSE;
    if (!nodes) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> lacks the nodeset attribute", cellid);
        return FALSE;
    }
    where = g_strdup_printf("<memnode cellid='%u'>", cellid);
    return (cell->nodeset = vpDomXMLSet(where, "nodeset", "node", nodes, error)) != NULL;
}

/* <numatune><memory mode nodeset placement/><memnode .../></numatune> */
gboolean
vpDomXMLParseNumatune(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr tune, mem, node;

    if (!vpDomXMLChild(root, "numatune", &tune, error))
        return FALSE;
    if (!tune)
        return TRUE;
    if (!vpDomXMLChild(tune, "memory", &mem, error))
        return FALSE;
    if (mem) {
        g_autofree char *nodes = vpDomXMLAttr(mem, "nodeset");
        g_autofree char *placement = vpDomXMLAttr(mem, "placement");

        if (!vpDomXMLMemMode(mem, &req->mem_mode, error))
            return FALSE;
        if (placement && strcmp(placement, "static") != 0 && strcmp(placement, "auto") != 0) {
            g_autofree char *shown = vpDomXMLShow(placement);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <numatune><memory placement='%s'> is not one of static, "
                        "auto",
                        shown);
            return FALSE;
        }
        /* libvirt drops a nodeset given beside placement='auto': numad's advice wins. */
        if (g_strcmp0(placement, "auto") == 0) {
            req->placement_auto = true;
            g_clear_pointer(&nodes, g_free);
        }
        if (nodes &&
            !(req->nodeset = vpDomXMLSet("<numatune><memory>", "nodeset", "node", nodes, error)))
            return FALSE;
        if (!nodes && !req->placement_auto) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <numatune><memory> has neither nodeset nor "
                        "placement='auto'");
            return FALSE;
        }
    }
    for (node = tune->children; node; node = node->next) {
        if (vpDomXMLIs(node, "memnode") && !vpDomXMLParseMemnode(node, req, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
vpDomXMLParseCell(xmlNodePtr node, vpRequest *req, hwloc_bitmap_t seen, GError **error)
{
    g_autofree char *cpus = vpDomXMLAttr(node, "cpus");
    g_autofree char *memory = vpDomXMLAttr(node, "memory");
    g_autofree char *unit = vpDomXMLAttr(node, "unit");
    g_autofree char *where = NULL;
    vpCell cell = {0};
    unsigned id = req->ncells;

    if (!vpDomXMLAttrNumber(node, "id", 0, VP_DOMXML_MAX_VCPUS, &id, error))
        return FALSE;
    where = g_strdup_printf("<cell id='%u'>", id);
    for (unsigned i = 0; i < req->ncells; i++) {
        if (req->cells[i].id == id) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: %s appears twice", where);
            return FALSE;
        }
    }
    if (!memory) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: %s lacks the memory attribute",
                    where);
        return FALSE;
    }
    if (!vpDomXMLMemory(where, memory, unit, &cell.memory, error))
        return FALSE;
    cell.id = id;
    if (cpus) {
        if (!(cell.vcpus = vpDomXMLSet(where, "cpus", "vCPU", cpus, error)))
            return FALSE;
        if (hwloc_bitmap_last(cell.vcpus) >= (int)req->max_vcpus) {
            g_autofree char *shown = vpDomXMLShow(cpus);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: %s cpus='%s' names vCPUs beyond <vcpu> %u", where, shown,
                        req->max_vcpus);
            hwloc_bitmap_free(cell.vcpus);
            return FALSE;
        }
        if (hwloc_bitmap_intersects(cell.vcpus, seen)) {
            g_autofree char *shown = vpDomXMLShow(cpus);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: %s cpus='%s' names vCPUs another cell has", where, shown);
            hwloc_bitmap_free(cell.vcpus);
            return FALSE;
        }
        hwloc_bitmap_or(seen, seen, cell.vcpus);
    } else {
        cell.vcpus = hwloc_bitmap_alloc();
    }
    req->cells = g_renew(vpCell, req->cells, req->ncells + 1);
    req->cells[req->ncells++] = cell;
    return TRUE;
}

/* <cpu><numa><cell id cpus memory unit/>...</numa></cpu>: guest NUMA cells. */
gboolean
vpDomXMLParseCells(xmlNodePtr root, vpRequest *req, GError **error)
{
    g_autoptr(vpBitmap) seen = hwloc_bitmap_alloc();
    xmlNodePtr cpu, numa, node;

    if (!vpDomXMLChild(root, "cpu", &cpu, error))
        return FALSE;
    if (!cpu)
        return TRUE;
    if (!vpDomXMLChild(cpu, "numa", &numa, error))
        return FALSE;
    if (!numa)
        return TRUE;
    for (node = numa->children; node; node = node->next) {
        if (vpDomXMLIs(node, "cell") && !vpDomXMLParseCell(node, req, seen, error))
            return FALSE;
    }
    return TRUE;
}
