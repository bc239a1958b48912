/*
 * guest-topology CORES THREADS: the project's hwloc loader reads the guest's real sysfs
 * and must find CORES cores of THREADS siblings each, with the very siblings the kernel
 * lists in thread_siblings_list (which the core scheduler uses as the SMT mask).
 */
#include "host/hwtopo.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>

static void
checkSiblingsAgainstSysfs(const vpTopology *topo)
{
    GString *seen = g_string_new(NULL);
    unsigned disagreeing = 0;

    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        const vpCore *core = vpTopologyCore(topo, c);
        g_autoptr(GError) error = NULL;
        hwloc_bitmap_t loaded = hwloc_bitmap_alloc();
        hwloc_bitmap_t kernel = NULL;
        g_autofree char *path = NULL;
        g_autofree char *list = NULL;
        g_autofree char *text = NULL;

        for (int i = 0; i < core->npus; i++)
            hwloc_bitmap_set(loaded, vpTopologyPU(topo, core->pus[i])->os);
        path = g_strdup_printf("/sys/devices/system/cpu/cpu%u/topology/thread_siblings_list",
                               vpTopologyPU(topo, core->pus[0])->os);
        if (!g_file_get_contents(path, &list, NULL, &error) ||
            !(kernel = vpCpuListParse(path, g_strstrip(list), &error))) {
            vpgCheck(false, "siblings-sysfs", "%s", error->message);
            hwloc_bitmap_free(loaded);
            g_string_free(seen, TRUE);
            return;
        }
        text = vpCpuListFormat(loaded);
        g_string_append_printf(seen, "%s%s", c ? " " : "", text);
        if (!hwloc_bitmap_isequal(loaded, kernel))
            disagreeing++;
        hwloc_bitmap_free(loaded);
        hwloc_bitmap_free(kernel);
    }
    vpgFigure("sibling-sets", "%s", seen->str);
    vpgCheck(disagreeing == 0, "siblings-sysfs",
             "%u of %d cores differ from the kernel's thread_siblings_list", disagreeing,
             vpTopologyNCores(topo));
    g_string_free(seen, TRUE);
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    int wantCores, wantThreads, odd = 0;

    vpgBegin("topology");
    if (argc != 3 || (wantCores = atoi(argv[1])) <= 0 || (wantThreads = atoi(argv[2])) <= 0) {
        fprintf(stderr, "usage: %s CORES THREADS\n", argv[0]);
        return 2;
    }

    topo = vpHwtopoLoad(NULL, NULL, NULL, &error);
    if (!vpgCheck(topo != NULL, "load", "%s", topo ? "host topology loaded" : error->message))
        return vpgEnd();

    vpgCheck(vpTopologyNCores(topo) == wantCores, "cores", "%d cores, expected %d",
             vpTopologyNCores(topo), wantCores);
    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        if (vpTopologyCore(topo, c)->npus != wantThreads)
            odd++;
    }
    vpgCheck(odd == 0, "siblings-per-core", "%d cores without exactly %d PUs", odd, wantThreads);
    vpgCheck(vpTopologyMaxSMT(topo) == wantThreads, "max-smt", "%d, expected %d",
             vpTopologyMaxSMT(topo), wantThreads);
    vpgCheck(vpTopologyNPUs(topo) == wantCores * wantThreads, "pus", "%d PUs, expected %d",
             vpTopologyNPUs(topo), wantCores * wantThreads);
    checkSiblingsAgainstSysfs(topo);
    return vpgEnd();
}
