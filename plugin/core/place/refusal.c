/*
 * Refusals an operator can act on: what the policy needed and what each level, node or
 * guest cell had.
 */
#include "core/place/placerpriv.h"

const char *
vpPlacerLevelPhrase(vpLevel level)
{
    switch (level) {
    case VP_LEVEL_L3:
        return "L3 group";
    case VP_LEVEL_NUMA:
        return "NUMA node";
    case VP_LEVEL_PACKAGE:
        return "package";
    case VP_LEVEL_CLUSTER:
        return "cluster";
    default:
        return "host";
    }
}

/* What the policy counts as room on core c: a whole core for isolate, its PUs when whole
 * for pack, its free PUs otherwise. */
static int
roomOf(const vpCtx *ctx, int c, vpSmt smt)
{
    if (smt == VP_SMT_ISOLATE)
        return coreWhole(ctx, c);
    if (smt == VP_SMT_PACK)
        return coreWhole(ctx, c) ? ctx->nok[c] : 0;
    return ctx->nok[c];
}

/* The same summed over group g. */
static int
roomIn(const vpCtx *ctx, const vpGroup *g, vpSmt smt)
{
    int room = 0;

    for (int i = 0; i < g->ncores; i++)
        room += roomOf(ctx, g->cores[i], smt);
    return room;
}

/* What a policy needs n of, as a person would write it. */
static const char *
roomUnit(vpSmt smt, long n)
{
    if (smt == VP_SMT_ISOLATE)
        return n == 1 ? "free whole core" : "free whole cores";
    if (smt == VP_SMT_PACK)
        return n == 1 ? "free PU on whole cores" : "free PUs on whole cores";
    return n == 1 ? "free PU" : "free PUs";
}

static const char *
vcpus(long n)
{
    return n == 1 ? "vCPU" : "vCPUs";
}

static const char *
need(long n)
{
    return n == 1 ? "needs" : "need";
}

char *
vpPlacerSplitImpossible(const vpCtx *ctx, unsigned nodes, int n)
{
    int have = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);

    if (!vpLocalityCellVcpus(n, ctx->req->threads, nodes, 0))
        return g_strdup_printf("locality=numa:%u splits the VM into %u cells of whole guest "
                               "cores, but its %d %s make fewer guest cores",
                               nodes, nodes, n, vcpus(n));
    if (have < (int)nodes)
        return g_strdup_printf("locality=numa:%u needs %u NUMA nodes; the host has %d", nodes,
                               nodes, have);
    return NULL;
}

static char *
splitRefusal(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n)
{
    g_autoptr(GString) s = g_string_new(NULL);
    int big = (int)vpLocalityCellVcpus(n, ctx->req->threads, nodes, 0);
    int small = (int)vpLocalityCellVcpus(n, ctx->req->threads, nodes, nodes - 1);

    g_string_printf(s, "%d %s with smt=%s and locality=numa:%u %s %u NUMA nodes with ", n, vcpus(n),
                    vpSmtName(smt), nodes, need(n), nodes);
    if (big == small)
        g_string_append_printf(s, "%d %s each", big, roomUnit(smt, big));
    else
        g_string_append_printf(s, "%d or %d %s each", big, small, roomUnit(smt, small));
    for (int i = 0; i < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); i++) {
        const vpGroup *g = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, i);

        g_string_append_printf(s, "%s node %u has %d", i ? "," : ";", g->os, roomIn(ctx, g, smt));
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

/* What pack's last tier found (corepick.c): free PUs of cores that are not whole, and of
 * those the ones that hold whole guest cores of the VM's threads. */
static void
packSharedText(const vpCtx *ctx, GString *s)
{
    int block = ctx->req->threads > 0 ? (int)ctx->req->threads : 1;
    int partial = 0, blocks = 0;

    for (int c = 0; c < ctx->ncores; c++) {
        if (coreWhole(ctx, c))
            continue;
        partial += ctx->nok[c];
        blocks += ctx->nok[c] - ctx->nok[c] % block;
    }
    g_string_append_printf(s, "; cores that are not whole have %d free %s", partial,
                           partial == 1 ? "PU" : "PUs");
    if (block > 1)
        g_string_append_printf(s, ", %d of them in whole guest cores of %d threads", blocks, block);
}

char *
vpPlacerRefusalText(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n)
{
    g_autoptr(GString) s = g_string_new(NULL);
    vpLevel levels[4];
    int nlevels = vpPlacerLevels(ctx->topo, locality, levels);
    unsigned split = vpLocalitySplit(locality);
    g_autofree int *room = NULL;

    if (split) {
        char *impossible = vpPlacerSplitImpossible(ctx, split, n);

        return impossible ? impossible : splitRefusal(ctx, smt, split, n);
    }
    room = g_new(int, ctx->ncores);
    g_string_printf(s, "%d %s with smt=%s %s %d %s", n, vcpus(n), vpSmtName(smt), need(n), n,
                    roomUnit(smt, n));
    if (locality != VP_LOCALITY_AUTO)
        g_string_append_printf(s, " within one %s", vpPlacerLevelPhrase(levels[0]));
    for (int c = 0; c < ctx->ncores; c++)
        room[c] = roomOf(ctx, c, smt);
    for (int l = 0; l < nlevels; l++) {
        int best = 0;

        for (int gi = 0; gi < vpTopologyNGroups(ctx->topo, levels[l]); gi++) {
            const vpGroup *g = vpTopologyGroup(ctx->topo, levels[l], gi);
            int sum = 0;

            for (int i = 0; i < g->ncores; i++)
                sum += room[g->cores[i]];
            best = MAX(best, sum);
        }
        g_string_append_printf(s, "%s the %s%s has %d", l == 0 ? ";" : ",",
                               levels[l] == VP_LEVEL_HOST ? "" : "best ",
                               vpPlacerLevelPhrase(levels[l]), best);
    }
    if (smt == VP_SMT_PACK)
        packSharedText(ctx, s);
    if (ctx->nclosed > 0)
        g_string_append_printf(s,
                               " (%d more free %s on cores of other trust groups' pack or "
                               "isolate VMs, which keep them)",
                               ctx->nclosed, ctx->nclosed == 1 ? "PU" : "PUs");
    return g_string_free(g_steal_pointer(&s), FALSE);
}

char *
vpPlacerBytesText(guint64 bytes)
{
    return bytes == G_MAXUINT64 ? g_strdup("unknown") : vpMemoryFormat(bytes);
}

/* The free memory of each CPU-less node the part's nodeset names: where its memory goes. */
static void
memNodesText(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, GString *s, const char *sep)
{
    int os;

    if (!part->mem)
        return;
    hwloc_bitmap_foreach_begin(os, part->mem)
    {
        const vpGroup *node = vpTopologyMemNodeByOS(ctx->topo, os);
        g_autofree char *mem = NULL;

        if (!node)
            continue;
        mem = vpPlacerBytesText(vpPlacerGroupFree(ctx, plan, node, partPage(ctx, part)));
        g_string_append_printf(s, "%snode %u (no CPUs) has %s free", sep, node->os, mem);
        sep = ", ";
    }
    hwloc_bitmap_foreach_end();
}

static guint64
nodeFree(const vpCtx *ctx, const vpPlan *plan, int g, guint64 page)
{
    return vpPlacerGroupFree(ctx, plan, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g), page);
}

char *
vpPlacerPartRefusal(const vpCtx *ctx, const vpPlan *plan, const vpPart *part)
{
    vpSmt smt = ctx->req->policy.smt;
    guint64 page = partPage(ctx, part);
    g_autoptr(GString) s = g_string_new(NULL);
    g_autofree char *nodes = part->hard ? vpCpuListFormat(part->hard) : NULL;
    bool plain = !part->hard && !part->one_node && !ctx->req->cpuset;
    bool short_memory = false;
    const char *sep = "; ";

    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); g++)
        short_memory |=
            vpPlacerGroupFree(ctx, plan, vpPlacerMemTarget(ctx, part, g), page) < part->memory;
    if (plain) {
        g_autofree char *text = vpPlacerRefusalText(ctx, smt, ctx->req->policy.locality, part->n);

        g_string_append(s, text);
    } else {
        if (part->cell >= 0)
            g_string_append_printf(s, "guest cell %d: ", part->cell);
        g_string_append_printf(s, "%u %s with smt=%s %s %u %s", part->n, vcpus(part->n),
                               vpSmtName(smt), need(part->n), part->n, roomUnit(smt, part->n));
        if (part->one_node)
            g_string_append(s, " on one node");
        if (part->mem) {
            g_autofree char *named = vpCpuListFormat(part->mem);

            g_string_append_printf(s, " of nodes %s (CPUs of nodes %s)", named, nodes);
        } else if (nodes)
            g_string_append_printf(s, " of nodes %s", nodes);
        if (ctx->req->cpuset) {
            g_autofree char *cpus = vpCpuListFormat(ctx->req->cpuset);

            g_string_append_printf(s, " inside <vcpu cpuset='%s'>", cpus);
        }
    }
    if (short_memory) {
        g_autofree char *mem = vpMemoryFormat(part->memory);

        g_string_append_printf(s, plain ? "; %s of %smemory is needed" : " and %s of %smemory", mem,
                               page ? "huge page " : "");
    }
    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
        g_autofree char *mem = vpPlacerBytesText(nodeFree(ctx, plan, g, page));

        if (node->made_up || (part->hard && !hwloc_bitmap_isset(part->hard, node->os)))
            continue;
        if (plain && !short_memory)
            break;
        g_string_append_printf(s, "%snode %u has ", sep, node->os);
        if (!plain)
            g_string_append_printf(s, "%d", roomIn(ctx, node, smt));
        /* a node whose vCPUs would take a CPU-less node's memory: that node's is said */
        if (short_memory && vpPlacerMemTarget(ctx, part, g) == node)
            g_string_append_printf(s, "%s%s free", plain ? "" : " and ", mem);
        sep = ", ";
    }
    memNodesText(ctx, plan, part, s, sep);
    return g_string_free(g_steal_pointer(&s), FALSE);
}
