/*
 * A fleet of hosts fed one seeded arrival trace by two fleet schedulers, each host deciding
 * with vcpuplace's own placer (vpPlace, the hook's decision at prepare begin):
 *   (a) Nova as configured today: it sees vCPU and RAM counts (VCPU inventory = usable CPUs x
 *       cpu_allocation_ratio, 1.0 for these dedicated flavors), filters hosts with room for
 *       the flavor's counts, weighs by free RAM (Nova's default RAMWeigher), and on a start
 *       refused at the host reschedules to the next alternate, at most max_attempts (3) hosts;
 *   (b) the same filter and weigher, plus vcpuplace's capacity by flavor: a host passes only
 *       when a VM of this flavor fits there now (capacity >= 1, the placer's trial on the
 *       host's ledger; fresh here, where real gauges lag by a scrape).
 * Figures per fleet size: VMs placed, starts refused at a host (each a reschedule), VMs that
 * found no host, usable CPUs left free, and of those the stranded ones (on hosts where no
 * flavor of the mix fits any more), and the wall time of the whole run. Hosts cycle through
 * the shared folder's real topologies (VP_SHARED_TOPOLOGIES), else synthetic ones.
 * Usage: bench-fleet [--full] [--seed N] [--json FILE] (default: bench-fleet.json in
 * $VP_BENCH_RESULTS when scripts/bench sets it). Not a test: nothing passes or fails on time.
 */
#include "core/place/flavor.h"
#include "core/place/placer.h"
#include "host/hwtopo.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ATTEMPTS 3
#define GIB (1024ull * 1024 * 1024)

/* The cloud's flavors: isolate and pack want whole cores, spread and share do not. */
static const char *const flavorMix =
    "iso.2:vcpus=2,memory=4GiB,smt=isolate; iso.4:vcpus=4,memory=8GiB,smt=isolate;"
    "pack.4:vcpus=4,memory=8GiB,smt=pack; pack.8:vcpus=8,memory=16GiB,smt=pack;"
    "spread.2:vcpus=2,memory=4GiB; spread.8:vcpus=8,memory=16GiB;"
    "share.1:vcpus=1,memory=2GiB,smt=share";

static const char *const realHosts[] = {
    "AMD-17h-Zen-2xEpyc-7451.xml", "AMD-19h-Zen3-2xEpyc-7763.xml", "32intel64-2p8co2t+8ve.xml",
    "256ppc-8n8s4t.xml",           "128arm-2pa2n8cluster4co.xml",
};
static const char *const syntheticHosts[] = {
    "synthetic:pack:2 numa:1(memory=128GB) l3:2 core:8 pu:2",
    "synthetic:pack:1 numa:2(memory=96GB) l3:1 core:12 pu:2",
    "synthetic:pack:2 numa:2(memory=64GB) core:6 pu:2",
};

typedef struct {
    unsigned flavor;
    unsigned leaves; /* arrival index at which it stops */
} vpArrival;

typedef struct {
    const vpTopology *topo;
    vpLedger *ledger;
    int free_pus; /* usable CPUs no domain holds */
    gint64 vcpus; /* Nova's VCPU usage */
    gint64 ram;   /* bytes of RAM left, as Nova counts it */
    guint8 *fits; /* (b): per flavor 1 fits, 0 not, 2 unknown */
} vpHost;

typedef struct {
    unsigned placed, refusals, unplaced, free_pus, stranded;
    double seconds;
} vpRun;

static double
nowS(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static guint64 rngState;

static guint64
rng(void)
{
    rngState ^= rngState << 13;
    rngState ^= rngState >> 7;
    rngState ^= rngState << 17;
    return rngState;
}

static GPtrArray *
loadTopologies(const char **kind)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)vpTopologyFree);
    const char *dir = g_getenv("VP_SHARED_TOPOLOGIES");

    for (gsize i = 0; dir && i < G_N_ELEMENTS(realHosts); i++) {
        g_autofree char *path = g_build_filename(dir, realHosts[i], NULL);
        g_autoptr(GError) error = NULL;
        vpTopology *t =
            g_file_test(path, G_FILE_TEST_EXISTS) ? vpHwtopoLoad(path, NULL, NULL, &error) : NULL;
        if (!t)
            continue;
        /* Exports without memory: 128 GiB a node, so that RAM binds as on a real host. */
        vpTopologySetUnknownMemory(t, 128 * GIB);
        vpTopologySetSource(t, realHosts[i]);
        g_ptr_array_add(out, t);
    }
    *kind = out->len ? "real (shared topologies)" : "synthetic (shared topologies absent)";
    for (gsize i = 0; !g_str_has_prefix(*kind, "real") && i < G_N_ELEMENTS(syntheticHosts); i++) {
        g_autoptr(GError) error = NULL;
        vpTopology *t = vpHwtopoLoad(syntheticHosts[i], NULL, NULL, &error);
        if (!t) {
            fprintf(stderr, "bench-fleet: %s\n", error->message);
            exit(1);
        }
        g_ptr_array_add(out, t);
    }
    return out;
}

static gint64
hostRam(const vpTopology *topo)
{
    gint64 ram = 0;

    for (int n = 0; n < vpTopologyNGroups(topo, VP_LEVEL_NUMA); n++)
        ram += (gint64)vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->memory -
               (gint64)vpTopologyNodeReserve(topo);
    return ram;
}

static vpPlan *
trial(vpHost *h, const vpFlavor *f, const char *name)
{
    g_autoptr(vpRequest) req = vpRequestNew(name, f->vcpus);

    vpPolicyClear(&req->policy);
    vpPolicyCopy(&req->policy, &f->policy);
    req->memory = f->memory;
    return vpPlace(h->topo, h->ledger, req, NULL);
}

static bool
fits(vpHost *h, const GArray *flavors, unsigned fl)
{
    if (h->fits[fl] == 2) {
        g_autoptr(vpPlan) p = trial(h, &g_array_index(flavors, vpFlavor, fl), "probe");
        h->fits[fl] = p != NULL;
    }
    return h->fits[fl] == 1;
}

static void
changed(vpHost *h, guint nflavors)
{
    memset(h->fits, 2, nflavors);
}

/* Hosts that pass the filter, best weighed first (most free RAM). */
static int
byRam(gconstpointer a, gconstpointer b, gpointer hosts)
{
    const vpHost *x = &((vpHost *)hosts)[*(const int *)a], *y = &((vpHost *)hosts)[*(const int *)b];

    return (y->ram > x->ram) - (y->ram < x->ram);
}

static int
byLeaving(gconstpointer a, gconstpointer b, gpointer trace)
{
    unsigned x = ((const vpArrival *)trace)[*(const unsigned *)a].leaves;
    unsigned y = ((const vpArrival *)trace)[*(const unsigned *)b].leaves;

    return (x > y) - (x < y);
}

static GArray *
candidates(vpHost *hosts, unsigned n, const GArray *flavors, unsigned fl, bool capacity)
{
    const vpFlavor *f = &g_array_index(flavors, vpFlavor, fl);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int));

    for (unsigned i = 0; i < n; i++) {
        vpHost *h = &hosts[i];
        gint64 cap = hwloc_bitmap_weight(vpTopologyUsableSet(h->topo));

        if (h->vcpus + f->vcpus > cap || h->ram < (gint64)f->memory)
            continue;
        if (capacity && !fits(h, flavors, fl))
            continue;
        int idx = (int)i;
        g_array_append_val(out, idx);
    }
    g_array_sort_with_data(out, byRam, hosts);
    return out;
}

static void
hold(vpHost *h, const vpFlavor *f, const vpPlan *plan, int sign, guint nflavors)
{
    g_autoptr(vpBitmap) held = vpPlanHeld(plan);

    h->free_pus -= sign * hwloc_bitmap_weight(held);
    h->vcpus += sign * (gint64)f->vcpus;
    h->ram -= sign * (gint64)f->memory;
    changed(h, nflavors);
}

static vpRun
simulate(const GPtrArray *topos, unsigned nhosts, const GArray *flavors, const vpArrival *trace,
         unsigned narrivals, bool capacity)
{
    vpRun run = {0};
    g_autofree vpHost *hosts = g_new0(vpHost, nhosts);
    g_autofree int *where = g_new(int, narrivals);
    g_autofree unsigned *order = g_new(unsigned, narrivals);
    unsigned next = 0;
    double t0 = nowS();

    for (unsigned i = 0; i < narrivals; i++)
        order[i] = i;
    g_qsort_with_data(order, narrivals, sizeof(unsigned), byLeaving, (gpointer)trace);

    for (unsigned i = 0; i < nhosts; i++) {
        hosts[i].topo = topos->pdata[i % topos->len];
        hosts[i].ledger = vpLedgerNew(hosts[i].topo);
        hosts[i].free_pus = hwloc_bitmap_weight(vpTopologyUsableSet(hosts[i].topo));
        hosts[i].ram = hostRam(hosts[i].topo);
        hosts[i].fits = g_malloc(flavors->len);
        changed(&hosts[i], flavors->len);
    }
    for (unsigned a = 0; a < narrivals; a++) {
        const vpFlavor *f = &g_array_index(flavors, vpFlavor, trace[a].flavor);
        g_autofree char *name = g_strdup_printf("vm%u", a);
        g_autoptr(GArray) cands = NULL;

        for (; next < narrivals && trace[order[next]].leaves <= a; next++) { /* departures */
            unsigned d = order[next];
            if (where[d] < 0)
                continue;
            g_autofree char *dn = g_strdup_printf("vm%u", d);
            vpHost *h = &hosts[where[d]];
            g_autoptr(vpPlan) copy = vpPlanCopy(vpLedgerLookup(h->ledger, dn));
            vpLedgerRemove(h->ledger, dn);
            hold(h, &g_array_index(flavors, vpFlavor, trace[d].flavor), copy, -1, flavors->len);
        }
        where[a] = -1;
        cands = candidates(hosts, nhosts, flavors, trace[a].flavor, capacity);
        for (guint c = 0; c < cands->len && c < MAX_ATTEMPTS; c++) {
            vpHost *h = &hosts[g_array_index(cands, int, c)];
            g_autoptr(vpPlan) plan = trial(h, f, name);

            if (!plan || !vpLedgerAdd(h->ledger, plan, NULL)) {
                run.refusals++;
                continue;
            }
            hold(h, f, plan, 1, flavors->len);
            where[a] = g_array_index(cands, int, c);
            run.placed++;
            break;
        }
        if (where[a] < 0)
            run.unplaced++;
    }
    run.seconds = nowS() - t0;
    for (unsigned i = 0; i < nhosts; i++) {
        bool any = false;

        for (guint fl = 0; fl < flavors->len && !any; fl++)
            any = fits(&hosts[i], flavors, fl);
        run.free_pus += hosts[i].free_pus;
        if (!any)
            run.stranded += hosts[i].free_pus;
        vpLedgerFree(hosts[i].ledger);
        g_free(hosts[i].fits);
    }
    return run;
}

/* Arrivals enough to ask for twice the fleet's usable CPUs in vCPUs, each VM staying a
 * random span of up to the whole trace: past its middle the fleet runs full, and departures
 * leave holes of every shape (so that hosts fragment). */
static vpArrival *
makeTrace(const GPtrArray *topos, unsigned nhosts, const GArray *flavors, unsigned *n)
{
    gint64 pus = 0, asked = 0;
    GArray *out = g_array_new(FALSE, FALSE, sizeof(vpArrival));

    for (unsigned i = 0; i < nhosts; i++)
        pus += hwloc_bitmap_weight(vpTopologyUsableSet(topos->pdata[i % topos->len]));
    while (asked < pus * 2) {
        vpArrival a = {.flavor = (unsigned)(rng() % flavors->len)};
        asked += g_array_index(flavors, vpFlavor, a.flavor).vcpus;
        g_array_append_val(out, a);
    }
    for (guint i = 0; i < out->len; i++) {
        vpArrival *a = &g_array_index(out, vpArrival, i);
        a->leaves = i + 1 + (unsigned)(rng() % out->len);
    }
    *n = out->len;
    return (vpArrival *)g_array_free(out, FALSE);
}

static void
addRun(JsonBuilder *b, const char *name, const vpRun *r)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "placed");
    json_builder_add_int_value(b, r->placed);
    json_builder_set_member_name(b, "host_refusals");
    json_builder_add_int_value(b, r->refusals);
    json_builder_set_member_name(b, "unplaced");
    json_builder_add_int_value(b, r->unplaced);
    json_builder_set_member_name(b, "free_cpus");
    json_builder_add_int_value(b, r->free_pus);
    json_builder_set_member_name(b, "stranded_cpus");
    json_builder_add_int_value(b, r->stranded);
    json_builder_set_member_name(b, "seconds");
    json_builder_add_double_value(b, r->seconds);
    json_builder_end_object(b);
}

int
main(int argc, char **argv)
{
    gboolean full = FALSE;
    gint64 seed = 1;
    g_autofree char *json = NULL;
    GOptionEntry entries[] = {
        {"full", 0, 0, G_OPTION_ARG_NONE, &full, "also 3,000 hosts (default: 10, 100, 1,000)",
         NULL},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "the trace's seed (default 1)", "N"},
        {"json", 0, 0, G_OPTION_ARG_FILENAME, &json, "write the figures there", "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) flavors = vpFlavorArrayNew();
    vpPolicy defaults;
    const char *kind;
    const unsigned sizes[] = {10, 100, 1000, 3000};
    g_autoptr(JsonBuilder) b = json_builder_new();

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || seed == 0) {
        fprintf(stderr, "bench-fleet: %s\n", error ? error->message : "--seed must not be 0");
        return 1;
    }
    rngState = (guint64)seed;
    if (!json && g_getenv("VP_BENCH_RESULTS"))
        json = g_build_filename(g_getenv("VP_BENCH_RESULTS"), "bench-fleet.json", NULL);
    vpPolicyInitDefaults(&defaults);
    if (!vpFlavorParseList("flavors", flavorMix, &defaults, flavors, &error)) {
        fprintf(stderr, "bench-fleet: %s\n", error->message);
        return 1;
    }
    vpPolicyClear(&defaults);
    g_autoptr(GPtrArray) topos = loadTopologies(&kind);
    printf("hosts: %s, %u kinds; flavors: %s\n", kind, topos->len, flavorMix);
    printf("%6s %7s | %-38s | %-38s\n", "hosts", "VMs",
           "(a) vCPU counts: placed refused none stranded/free s", "(b) capacity by flavor: same");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "hosts");
    json_builder_add_string_value(b, kind);
    json_builder_set_member_name(b, "flavors");
    json_builder_add_string_value(b, flavorMix);
    json_builder_set_member_name(b, "seed");
    json_builder_add_int_value(b, seed);
    json_builder_set_member_name(b, "runs");
    json_builder_begin_array(b);
    for (gsize s = 0; s < G_N_ELEMENTS(sizes) - (full ? 0 : 1); s++) {
        unsigned n;
        g_autofree vpArrival *trace = makeTrace(topos, sizes[s], flavors, &n);
        vpRun a = simulate(topos, sizes[s], flavors, trace, n, false);
        vpRun c = simulate(topos, sizes[s], flavors, trace, n, true);

        printf("%6u %7u | %6u %6u %5u %6u/%-6u %6.2f | %6u %6u %5u %6u/%-6u %6.2f\n", sizes[s], n,
               a.placed, a.refusals, a.unplaced, a.stranded, a.free_pus, a.seconds, c.placed,
               c.refusals, c.unplaced, c.stranded, c.free_pus, c.seconds);
        fflush(stdout);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "fleet");
        json_builder_add_int_value(b, sizes[s]);
        json_builder_set_member_name(b, "arrivals");
        json_builder_add_int_value(b, n);
        addRun(b, "vcpu_counts", &a);
        addRun(b, "capacity_by_flavor", &c);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    if (json) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(b);

        json_generator_set_pretty(gen, TRUE);
        json_generator_set_root(gen, root);
        if (!json_generator_to_file(gen, json, &error)) {
            fprintf(stderr, "bench-fleet: %s\n", error->message);
            return 1;
        }
    }
    return 0;
}
