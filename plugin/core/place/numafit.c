/*
 * Constraints: the domain's NUMA statements and its <vcpu cpuset>, applied around the tier
 * search (corepick.c) by masking the PUs a vCPU may take (ctx->ok). The domain is cut into
 * parts: one per guest NUMA cell (each on one host node, distinct nodes first), one per node
 * of an interleave nodeset (vCPUs spread evenly over it), else a single part placed by the
 * policy's own locality. A part's memory must fit the node(s) that take it: the node's
 * memory less the host reserve and what the ledger and the part's siblings hold (or the
 * node's huge page pool of the part's size: a guest cell's own <page nodeset>, else the
 * domain's). A part that may span nodes holds memory on each in proportion to its vCPUs
 * there; it is first placed on nodes that each hold all of it, and where that meets a
 * stranger, with each node asked for its share only (placePart). Nodes whose memory is
 * unknown are no limit.
 */
#include "core/place/placerpriv.h"

#include <string.h>

static void
partClear(vpPart *part)
{
    g_free(part->ids);
    g_clear_pointer(&part->hard, hwloc_bitmap_free);
    g_clear_pointer(&part->prefer, hwloc_bitmap_free);
    g_clear_pointer(&part->mem, hwloc_bitmap_free);
}

static guint64
partFree(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, int g)
{
    return vpPlacerGroupFree(ctx, plan, vpPlacerMemTarget(ctx, part, g), partPage(ctx, part));
}

static bool
namesMemNode(const vpTopology *topo, hwloc_const_bitmap_t nodes)
{
    int os;

    hwloc_bitmap_foreach_begin(os, nodes)
    {
        if (vpTopologyMemNodeByOS(topo, os))
            return true;
    }
    hwloc_bitmap_foreach_end();
    return false;
}

/* A hard nodeset naming CPU-less nodes: the part runs on the CPU nodes near them (and those
 * it names), its memory stays on the named nodes (vpPlacerMemTarget). */
static void
partResolve(const vpTopology *topo, vpPart *part)
{
    if (!part->hard || part->mem || !namesMemNode(topo, part->hard))
        return;
    part->mem = part->hard;
    part->hard = vpTopologyCpuNodesOf(topo, part->mem);
}

bool *
vpPlacerPartMask(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, guint64 need,
                 hwloc_const_bitmap_t only, hwloc_const_bitmap_t avoid, bool off_own)
{
    const vpTopology *topo = ctx->topo;
    int npus = vpTopologyNPUs(topo);
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    g_autofree bool *node_ok = g_new0(bool, nnodes);
    bool *ok = g_new0(bool, npus);

    for (int g = 0; g < nnodes; g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
        node_ok[g] =
            (!part->hard || (!node->made_up && hwloc_bitmap_isset(part->hard, node->os))) &&
            (!only || (!node->made_up && hwloc_bitmap_isset(only, node->os))) &&
            (!avoid || node->made_up || !hwloc_bitmap_isset(avoid, node->os)) &&
            partFree(ctx, plan, part, g) >= need;
    }
    for (int pu = 0; pu < npus; pu++) {
        const vpPU *p = vpTopologyPU(topo, pu);

        ok[pu] = node_ok[vpTopologyNodeOfPU(topo, pu)] &&
                 (!ctx->req->cpuset || hwloc_bitmap_isset(ctx->req->cpuset, p->os)) &&
                 !(off_own && ctx->req->emulator_pin &&
                   hwloc_bitmap_isset(ctx->req->emulator_pin, p->os)) &&
                 !(off_own && ctx->req->iothread_pin &&
                   hwloc_bitmap_isset(ctx->req->iothread_pin, p->os));
    }
    return ok;
}

/* A part that may span nodes puts its memory where its vCPUs run, in proportion (first
 * touch under the domain's nodeset, as QEMU's single memory backend of a guest without
 * cells gets it): its memory per vCPU is a share, the first node also holds the
 * remainder. */
static bool
partSpans(const vpPart *part)
{
    return !part->one_node && part->memory && part->n > 1;
}

static guint64
partShare(const vpPart *part)
{
    return part->memory / part->n + part->memory % part->n;
}

/* How many of a spanning part's vCPUs each node's free memory holds (the remainder counted
 * on every node, so that partMemory's split always fits); NULL when every node holds them
 * all, the part's memory then binding nothing. */
static int *
partRoom(const vpCtx *ctx, const vpPlan *plan, const vpPart *part)
{
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    guint64 each = part->memory / part->n, rest = part->memory % part->n;
    int *room = g_new(int, nnodes);
    bool binds = false;

    for (int g = 0; g < nnodes; g++) {
        guint64 free = partFree(ctx, plan, part, g);

        if (free == G_MAXUINT64 || free >= part->memory)
            room[g] = (int)part->n;
        else if (free < rest + each)
            room[g] = 0;
        else
            room[g] = (int)MIN((free - rest) / MAX(each, 1), (guint64)part->n);
        binds |= room[g] < (int)part->n;
    }
    if (!binds)
        g_clear_pointer(&room, g_free);
    return room;
}

/* The vpPlacerSearch with the policy's own fallbacks (unmet=degrade), as for a whole domain.
 * failed: the plain vpPlacerSearch at this locality and mask is already known to find nothing. */
static bool
searchPart(vpCtx *ctx, vpPlan *plan, vpLocality locality, int n, bool failed, vpChoice *choice)
{
    vpSmt smt = ctx->req->policy.smt;
    bool degrade = ctx->req->policy.unmet == VP_UNMET_DEGRADE;
    bool found = !failed && vpPlacerSearch(ctx, smt, locality, n, choice);

    if (!found && locality != VP_LOCALITY_AUTO && degrade) {
        g_autofree char *why =
            vpLocalitySplit(locality)
                ? vpPlacerRefusalText(ctx, smt, locality, n)
                : g_strdup_printf("no single %s has room",
                                  vpPlacerLevelPhrase(vpPlacerLocalityLevel(locality)));

        found = vpPlacerSearch(ctx, smt, VP_LOCALITY_AUTO, n, choice);
        if (found)
            vpPlanDegrade(plan, "locality=%s relaxed to locality=auto: %s",
                          vpLocalityName(locality), why);
    }
    if (!found && (smt == VP_SMT_ISOLATE || smt == VP_SMT_PACK) && degrade) {
        g_autofree char *why = vpPlacerRefusalText(ctx, smt, locality, n);

        found = vpPlacerSearch(ctx, VP_SMT_SPREAD, VP_LOCALITY_AUTO, n, choice);
        if (found)
            vpPlanDegrade(plan, "smt=%s relaxed to smt=spread: %s", vpSmtName(smt), why);
    }
    if (!found && smt == VP_SMT_SHARE && degrade && vpPlacerPickOvercommit(ctx, n, choice)) {
        g_autoptr(vpBitmap) shared = hwloc_bitmap_alloc();
        g_autofree char *list = NULL;

        for (int i = 0; i < n; i++) {
            if (!ctx->pufree[choice->pick.pus[i]])
                hwloc_bitmap_set(shared, vpTopologyPU(ctx->topo, choice->pick.pus[i])->os);
        }
        list = vpCpuListFormat(shared);
        plan->overcommit = true;
        vpPlanDegrade(plan,
                      "smt=share overcommitted: CPUs %s are time-shared with other smt=share "
                      "domains (no free PU left)",
                      list);
        found = true;
    }
    return found;
}

/* Memory a placed part puts on each node: in proportion to its vCPUs there. */
static bool
partMemory(const vpCtx *ctx, vpPlan *plan, const vpPart *part, const vpPick *pick, GError **error)
{
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    g_autofree int *count = g_new0(int, nnodes);
    guint64 page = partPage(ctx, part);
    guint64 given = 0;
    int first = -1;

    if (!part->memory || !pick->n)
        return true;
    for (int i = 0; i < pick->n; i++)
        count[vpTopologyNodeOfPU(ctx->topo, pick->pus[i])]++;
    for (int g = 0; g < nnodes; g++) {
        guint64 share;

        if (!count[g])
            continue;
        if (first < 0)
            first = g;
        share = part->memory / pick->n * count[g];
        if (g == first)
            share += part->memory % pick->n;
        const vpGroup *node = vpPlacerMemTarget(ctx, part, g);

        if (vpPlacerGroupFree(ctx, plan, node, page) < share) {
            const vpGroup *cpus = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
            g_autofree char *want = vpMemoryFormat(share);
            g_autofree char *have = vpPlacerBytesText(vpPlacerGroupFree(ctx, plan, node, page));
            g_autofree char *pages = page ? vpMemoryFormat(page) : NULL;
            g_autofree char *where =
                node == cpus ? g_strdup("there") : g_strdup_printf("on node %u", node->os);

            if (pages)
                g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                            "domain '%s': its vCPUs on node %u need %s of %s huge pages %s; "
                            "node %u's %s pool has %s free",
                            plan->domain, cpus->os, want, pages, where, node->os, pages, have);
            else
                g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                            "domain '%s': its vCPUs on node %u need %s of memory %s; node %u "
                            "has %s free",
                            plan->domain, cpus->os, want, where, node->os, have);
            return false;
        }
        vpPlanAddPages(plan, node->os, page, share);
        given += share;
    }
    g_assert(given == part->memory);
    return true;
}

/* Whether a pick puts a vCPU beside a stranger: a VM of another cookie, or for a VM that is
 * not smt=share, a share VM too (share VMs accept any neighbour, the others do not). */
static bool
meetsStranger(const vpCtx *ctx, const vpPick *pick)
{
    for (int i = 0; i < pick->n; i++) {
        vpTrust rel = ctx->rel[vpTopologyPU(ctx->topo, pick->pus[i])->core];

        if (rel == VP_TRUST_STRANGER ||
            (rel == VP_TRUST_SHARE && ctx->req->policy.smt != VP_SMT_SHARE))
            return true;
    }
    return false;
}

/* Tries one part under the masks that apply, strictest first: off the CPUs of the domain's
 * own emulator and iothread pins (Nova often pins the emulator inside the vCPUs' cpuset, so
 * only a preference), the preferred nodes, nodes no other part took (cells on distinct
 * nodes), then any allowed node. need: the memory each allowed node must have free; room:
 * the memory ask per node of a spanning part, or NULL. */
static bool
tryMasks(vpCtx *ctx, vpPlan *plan, const vpPart *part, hwloc_const_bitmap_t taken, guint64 need,
         const int *room, vpChoice *choice, bool **last)
{
    vpLocality locality = ctx->req->policy.locality;
    hwloc_const_bitmap_t only[] = {part->prefer, NULL};
    hwloc_const_bitmap_t avoid[] = {taken, NULL};

    if (part->one_node && locality != VP_LOCALITY_L3)
        locality = VP_LOCALITY_NUMA;
    for (int own = ctx->req->emulator_pin || ctx->req->iothread_pin ? 1 : 0; own >= 0; own--) {
        for (gsize o = part->prefer ? 0 : 1; o < G_N_ELEMENTS(only); o++) {
            for (gsize a = taken && part->one_node ? 0 : 1; a < G_N_ELEMENTS(avoid); a++) {
                bool *ok = vpPlacerPartMask(ctx, plan, part, need, only[o], avoid[a], own);
                bool found;

                g_free(*last);
                *last = ok;
                vpPlacerCtxSetMask(ctx, ok);
                ctx->room = room;
                found = vpPlacerSearch(ctx, ctx->req->policy.smt, locality, part->n, choice);
                ctx->room = NULL;
                vpPlacerCtxSetMask(ctx, NULL);
                if (found)
                    return true;
            }
        }
    }
    return false;
}

/* A part on nodes that each hold its whole memory, as long as that meets no stranger: such
 * nodes keep a VM's memory on few nodes and leave other nodes' memory to the free cores
 * there. A part that may span nodes and meets a stranger there, or finds no room, is then
 * searched with the memory ask per node (a vCPU's share for each vCPU a node takes), which
 * lets it use a free core on a node that holds only its share; taken when it finds room. */
static bool
placePart(vpCtx *ctx, vpPlan *plan, const vpPart *part, hwloc_const_bitmap_t taken,
          vpChoice *choice, bool **last)
{
    g_autofree int *room = partSpans(part) ? partRoom(ctx, plan, part) : NULL;
    bool found = tryMasks(ctx, plan, part, taken, part->memory, NULL, choice, last);
    vpChoice alt = {0};

    if (!room || (found && !meetsStranger(ctx, &choice->pick)))
        return found;
    vpPlacerPickInit(&alt.pick, part->n);
    if (tryMasks(ctx, plan, part, taken, partShare(part), room, &alt, last)) {
        vpChoice tmp = *choice;

        *choice = alt;
        alt = tmp;
        found = true;
    }
    vpPlacerPickClear(&alt.pick);
    return found;
}

/* The policy's own fallbacks for a part placePart() could not place, still inside the hard
 * limits and the memory; the refusal when they fail too. last: the mask of placePart's last
 * try (any node, off nothing, the memory ask per node), taken over. A one-node part asks no
 * memory here, its node's is checked once it is known (partMemory); a spanning part keeps
 * its ask per node, and is searched without it only to be refused with the node short of
 * memory. */
static bool
fallbackPart(vpCtx *ctx, vpPlan *plan, const vpPart *part, bool *last, vpChoice *choice,
             GError **error)
{
    vpLocality locality = ctx->req->policy.locality;
    bool spans = partSpans(part);
    g_autofree int *room = spans ? partRoom(ctx, plan, part) : NULL;
    g_autofree bool *ok =
        part->memory
            ? vpPlacerPartMask(ctx, plan, part, spans ? partShare(part) : 0, NULL, NULL, false)
            : last;
    /* that last try searched this locality: where its mask is this one too, the vpPlacerSearch
     * need not run again */
    bool failed = !(part->one_node && locality == VP_LOCALITY_L3) &&
                  memcmp(last, ok, sizeof(bool) * vpTopologyNPUs(ctx->topo)) == 0;
    bool found;

    if (ok != last)
        g_free(last);

    vpPlacerCtxSetMask(ctx, ok);
    ctx->room = room;
    found = searchPart(ctx, plan, part->one_node ? VP_LOCALITY_NUMA : locality, part->n, failed,
                       choice);
    ctx->room = NULL;
    if (!found && room) {
        /* placed without the ask, so that partMemory names the node whose memory falls
         * short; where the split fits after all, it stands */
        g_autofree bool *any = vpPlacerPartMask(ctx, plan, part, 0, NULL, NULL, false);

        vpPlacerCtxSetMask(ctx, any);
        found = searchPart(ctx, plan, locality, part->n, false, choice);
    }
    if (!found) {
        g_autofree char *why = vpPlacerPartRefusal(ctx, plan, part);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED, "domain '%s': %s", plan->domain, why);
    }
    vpPlacerCtxSetMask(ctx, NULL);
    return found;
}

bool
vpPlacerPlaceParts(vpCtx *ctx, vpPlan *plan, GArray *parts, vpChoice *all, GError **error)
{
    g_autoptr(vpBitmap) taken = hwloc_bitmap_alloc();

    for (guint p = 0; p < parts->len; p++)
        partResolve(ctx->topo, &g_array_index(parts, vpPart, p));
    for (guint p = 0; p < parts->len; p++) {
        const vpPart *part = &g_array_index(parts, vpPart, p);
        vpChoice choice = {0};
        g_autofree bool *last = NULL;
        bool found;

        if (!part->n)
            continue;
        vpPlacerPickInit(&choice.pick, part->n);
        found = placePart(ctx, plan, part, taken, &choice, &last) ||
                fallbackPart(ctx, plan, part, g_steal_pointer(&last), &choice, error);
        if (found && !partMemory(ctx, plan, part, &choice.pick, error))
            found = false;
        if (!found) {
            vpPlacerPickClear(&choice.pick);
            return false;
        }
        for (int i = 0; i < choice.pick.n; i++) {
            int pu = choice.pick.pus[i];

            plan->vcpu_pu[part->ids[i]] = vpTopologyPU(ctx->topo, pu)->os;
            hwloc_bitmap_set(
                taken,
                vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(ctx->topo, pu))->os);
            all->pick.pus[all->pick.n++] = pu;
        }
        for (guint i = 0; i < choice.pick.reserved->len; i++)
            g_array_append_val(all->pick.reserved, g_array_index(choice.pick.reserved, int, i));
        if (parts->len == 1) {
            all->level = choice.level;
            all->index = choice.index;
        }
        vpPlacerCtxHold(ctx, &choice.pick);
        vpPlacerPickClear(&choice.pick);
    }
    return true;
}

static void
partAdd(GArray *parts, const unsigned *ids, unsigned n, guint64 memory, hwloc_const_bitmap_t hard,
        hwloc_const_bitmap_t prefer, bool one_node, int cell)
{
    vpPart part = {.n = n, .memory = memory, .one_node = one_node, .cell = cell};

    part.ids = g_memdup2(ids, sizeof(*ids) * n);
    part.hard = hard ? hwloc_bitmap_dup(hard) : NULL;
    part.prefer = prefer ? hwloc_bitmap_dup(prefer) : NULL;
    g_array_append_val(parts, part);
}

/* Cuts the domain into parts (see "Constraints" above). ids: the online vCPU ids, ascending. */
GArray *
vpPlacerCutParts(const vpTopology *topo, const vpRequest *req, const unsigned *ids, unsigned n)
{
    GArray *parts = g_array_new(FALSE, TRUE, sizeof(vpPart));
    hwloc_const_bitmap_t hard = vpMemModeHard(req->mem_mode) ? req->nodeset : NULL;
    hwloc_const_bitmap_t prefer = req->mem_mode == VP_MEM_PREFERRED ? req->nodeset : NULL;
    g_autofree unsigned *rest = g_new(unsigned, n);
    g_autoptr(vpBitmap) incell = hwloc_bitmap_alloc();
    unsigned nrest = 0;

    g_array_set_clear_func(parts, (GDestroyNotify)partClear);
    for (unsigned c = 0; c < req->ncells; c++) {
        const vpCell *cell = &req->cells[c];
        g_autofree unsigned *cids = g_new(unsigned, n);
        unsigned k = 0;
        bool chard = cell->mode != VP_MEM_NONE ? vpMemModeHard(cell->mode) : hard != NULL;
        hwloc_const_bitmap_t cnodes = cell->mode != VP_MEM_NONE ? cell->nodeset : req->nodeset;

        for (unsigned i = 0; i < n; i++) {
            if (hwloc_bitmap_isset(cell->vcpus, ids[i]))
                cids[k++] = ids[i];
        }
        hwloc_bitmap_or(incell, incell, cell->vcpus);
        partAdd(parts, cids, k, k ? cell->memory : 0, chard ? cnodes : NULL,
                !chard && cnodes ? cnodes : NULL, true, cell->id);
        g_array_index(parts, vpPart, parts->len - 1).page = vpRequestCellPage(req, cell);
    }
    for (unsigned i = 0; i < n; i++) {
        if (!hwloc_bitmap_isset(incell, ids[i]))
            rest[nrest++] = ids[i];
    }
    if (req->ncells) {
        if (nrest)
            partAdd(parts, rest, nrest, 0, hard, prefer, false, -1);
        return parts;
    }
    if (req->mem_mode == VP_MEM_INTERLEAVE && req->nodeset) {
        g_autoptr(vpBitmap) nodes = hwloc_bitmap_alloc();
        unsigned k = 0, start = 0;
        int os;

        hwloc_bitmap_foreach_begin(os, req->nodeset)
        {
            if (vpTopologyNodeByOS(topo, os) >= 0)
                hwloc_bitmap_set(nodes, os);
        }
        hwloc_bitmap_foreach_end();
        k = hwloc_bitmap_weight(nodes);
        if (k > 1) {
            unsigned i = 0;

            hwloc_bitmap_foreach_begin(os, nodes)
            {
                unsigned cnt = n / k + (i < n % k);
                g_autoptr(vpBitmap) one = hwloc_bitmap_alloc();
                guint64 mem = req->memory / k + (i == 0 ? req->memory % k : 0);

                hwloc_bitmap_set(one, os);
                partAdd(parts, ids + start, cnt, mem, one, NULL, true, -1);
                start += cnt;
                i++;
            }
            hwloc_bitmap_foreach_end();
            return parts;
        }
    }
    partAdd(parts, ids, n, req->memory, hard, prefer, req->placement_auto, -1);
    return parts;
}

static bool
checkNodeset(const vpTopology *topo, const vpRequest *req, hwloc_const_bitmap_t set, GError **error)
{
    g_autoptr(vpBitmap) missing = NULL;

    if (!set)
        return true;
    missing = hwloc_bitmap_dup(set);
    hwloc_bitmap_andnot(missing, missing, vpTopologyNodeSet(topo));
    if (!hwloc_bitmap_iszero(missing)) {
        g_autofree char *bad = vpCpuListFormat(missing);
        g_autofree char *have = vpCpuListFormat(vpTopologyNodeSet(topo));

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <numatune> nodeset names nodes %s this host lacks (it has %s)",
                    req->name, bad, have);
        return false;
    }
    return true;
}

bool
vpPlacerCheckConstraints(const vpTopology *topo, const vpRequest *req, GError **error)
{
    guint64 total = 0;
    bool known = true;

    if (!checkNodeset(topo, req, req->nodeset, error))
        return false;
    for (unsigned c = 0; c < req->ncells; c++) {
        if (!checkNodeset(topo, req, req->cells[c].nodeset, error))
            return false;
    }
    if (req->cpuset && !hwloc_bitmap_intersects(req->cpuset, vpTopologyUsableSet(topo))) {
        g_autofree char *set = vpCpuListFormat(req->cpuset);
        g_autofree char *usable = vpCpuListFormat(vpTopologyUsableSet(topo));

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <vcpu cpuset='%s'> names no CPU this host may hand out (%s)",
                    req->name, set, usable);
        return false;
    }
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        known &= node->memory > 0 || node->made_up;
        total += node->memory;
    }
    for (int m = 0; m < vpTopologyNMemNodes(topo); m++) {
        known &= vpTopologyMemNode(topo, m)->memory > 0;
        total += vpTopologyMemNode(topo, m)->memory;
    }
    if (known && !req->hugepage_size && req->memory > total) {
        g_autofree char *want = vpMemoryFormat(req->memory);
        g_autofree char *have = vpMemoryFormat(total);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <memory> %s is more than this host's %s", req->name, want, have);
        return false;
    }
    return true;
}

GArray *
vpPlacerSplitByMemory(const vpRequest *req, const unsigned *ids, unsigned n, unsigned k)
{
    GArray *parts = g_array_new(FALSE, TRUE, sizeof(vpPart));
    hwloc_const_bitmap_t hard = vpMemModeHard(req->mem_mode) ? req->nodeset : NULL;
    hwloc_const_bitmap_t prefer = req->mem_mode == VP_MEM_PREFERRED ? req->nodeset : NULL;
    unsigned start = 0;

    g_array_set_clear_func(parts, (GDestroyNotify)partClear);
    for (unsigned i = 0; i < k; i++) {
        unsigned cnt = n / k + (i < n % k);

        partAdd(parts, ids + start, cnt, req->memory / k + (i == 0 ? req->memory % k : 0), hard,
                prefer, true, -1);
        start += cnt;
    }
    return parts;
}

bool
vpPlacerSplittable(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                   GArray *parts)
{
    const vpPart *only = parts->len == 1 ? &g_array_index(parts, vpPart, 0) : NULL;
    vpLocality loc = req->policy.locality;

    if (!only || only->one_node || !only->memory || req->vcpus < 2 ||
        (loc != VP_LOCALITY_AUTO && loc != VP_LOCALITY_PACKAGE && loc != VP_LOCALITY_HOST))
        return false;
    /* memory bound to CPU-less nodes stays there however the vCPUs are cut */
    if (only->mem || (only->hard && namesMemNode(topo, only->hard)))
        return false;
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
        guint64 held = ledger ? vpLedgerNodeMemory(ledger, node->os, req->hugepage_size) : 0;

        if (!node->memory || node->memory >= only->memory + held + vpTopologyNodeReserve(topo))
            return false;
    }
    return vpTopologyNGroups(topo, VP_LEVEL_NUMA) > 1;
}
