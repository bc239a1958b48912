/*
 * Domain XML -> request: the fields placement reads, libvirt's cpuset syntax, the policy
 * element found by namespace URI whatever its prefix, and refusal of hostile or broken
 * documents: a DOCTYPE is refused before anything it names is opened (checked with a
 * FIFO that would give away a read), and every bad value is named in the message.
 */
#include "libvirt/domxml.h"

#include "core/model/topology.h"
#include "checkmain.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *
fixture(const char *name)
{
    const char *top = g_getenv("VP_TOPDIR");
    g_autofree char *here = g_path_get_dirname(__FILE__);

    if (top)
        return g_build_filename(top, "tests", "unit", "data", "domxml", name, NULL);
    return g_build_filename(here, "data", "domxml", name, NULL);
}

static vpRequest *
parseFixture(const char *name, const vpPolicy *defaults, GError **error)
{
    g_autofree char *path = fixture(name);

    return vpDomXMLParseFile(path, defaults, error);
}

static vpRequest *
parseText(const char *xml, GError **error)
{
    return vpDomXMLParse(xml, strlen(xml), NULL, error);
}

static char *
setText(hwloc_const_bitmap_t set)
{
    return set ? vpCpuListFormat(set) : g_strdup("(none)");
}

START_TEST(test_basic)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = NULL;
    vpPolicy defaults;

    vpPolicyInitDefaults(&defaults);
    defaults.coresched = VP_CORESCHED_GROUP;
    defaults.emulator = VP_EMULATOR_VCPUS;
    req = parseFixture("basic.xml", &defaults, &err);
    vpPolicyClear(&defaults);
    ck_assert_msg(req, "%s", err ? err->message : "");

    ck_assert_str_eq(req->name, "web1");
    ck_assert_str_eq(req->uuid, "c7a5fdbd-edaf-9455-926a-d65c16db1809");
    ck_assert_uint_eq(req->max_vcpus, 8);
    ck_assert_uint_eq(req->vcpus, 4);
    ck_assert_uint_eq(req->sockets, 1);
    ck_assert_uint_eq(req->dies, 1);
    ck_assert_uint_eq(req->clusters, 1);
    ck_assert_uint_eq(req->cores, 4);
    ck_assert_uint_eq(req->threads, 2);
    ck_assert_uint_eq(vpRequestGuestThreads(req), 2);
    ck_assert_uint_eq(req->iothreads, 2);
    ck_assert(!req->has_pins);
    for (unsigned i = 0; i < req->max_vcpus; i++)
        ck_assert_ptr_null(req->pins[i]);
    ck_assert_ptr_null(req->emulator_pin);

    /* Our namespace under another prefix counts; our prefix on another URI does not. */
    ck_assert(req->has_policy);
    ck_assert_int_eq(req->policy.smt, VP_SMT_ISOLATE);
    ck_assert_str_eq(req->policy.group, "blue");
    ck_assert_int_eq(req->policy.locality, VP_LOCALITY_NUMA);
    ck_assert_int_eq(req->policy.unmet, VP_UNMET_DEGRADE);
    /* Left out by the domain: the daemon's defaults. */
    ck_assert_int_eq(req->policy.coresched, VP_CORESCHED_GROUP);
    ck_assert_int_eq(req->policy.emulator, VP_EMULATOR_VCPUS);
    ck_assert_int_eq(req->policy.rebalance, VP_REBALANCE_AUTO);
}
END_TEST

START_TEST(test_minimal)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseFixture("minimal.xml", NULL, &err);

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_str_eq(req->name, "tiny");
    ck_assert_ptr_null(req->uuid);
    /* libvirt's default when <vcpu> is absent. */
    ck_assert_uint_eq(req->vcpus, 1);
    ck_assert_uint_eq(req->max_vcpus, 1);
    ck_assert_uint_eq(req->sockets, 0);
    ck_assert_uint_eq(req->threads, 0);
    ck_assert_uint_eq(vpRequestGuestThreads(req), 1);
    ck_assert(!req->has_policy);
    ck_assert_int_eq(req->policy.smt, VP_SMT_SPREAD);
    ck_assert_ptr_null(req->policy.group);
}
END_TEST

START_TEST(test_pins)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseFixture("pinned.xml", NULL, &err);
    g_autofree char *p0 = NULL;
    g_autofree char *p2 = NULL;
    g_autofree char *emu = NULL;

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_str_eq(req->uuid, "c7a5fdbd-edaf-9455-926a-d65c16db1809");
    ck_assert(req->has_pins);
    p0 = setText(req->pins[0]);
    p2 = setText(req->pins[2]);
    emu = setText(req->emulator_pin);
    ck_assert_str_eq(p0, "0-2,4-7");
    ck_assert_ptr_null(req->pins[1]);
    ck_assert_str_eq(p2, "5");
    ck_assert_ptr_null(req->pins[3]);
    /* Items apply in order: "^0,0-1" clears 0, then sets 0 and 1. */
    ck_assert_str_eq(emu, "0-1");
}
END_TEST

/* <vcpu cpuset> is where the domain may run, a constraint the placer places inside: it
 * pins no vCPU and no emulator by itself; <vcpupin> still pins its vCPU. */
START_TEST(test_vcpu_cpuset)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseFixture("cpuset.xml", NULL, &err);
    g_autofree char *set = NULL;
    g_autofree char *p1 = NULL;

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert(req->has_pins);
    set = setText(req->cpuset);
    p1 = setText(req->pins[1]);
    ck_assert_ptr_null(req->pins[0]);
    ck_assert_str_eq(p1, "7");
    ck_assert_str_eq(set, "2-3,5");
    ck_assert_ptr_null(req->emulator_pin);
}
END_TEST

/* The memory and NUMA elements libvirt writes, read into the request. */
START_TEST(test_numa_elements)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText(
        "<domain type='qemu'><name>n</name><memory unit='GiB'>8</memory>"
        "<currentMemory unit='MiB'>4096</currentMemory><vcpu placement='static' current='4' "
        "cpuset='8-15'>6</vcpu><vcpus><vcpu id='0' enabled='yes'/><vcpu id='1' enabled='yes'/>"
        "<vcpu id='2' enabled='no'/><vcpu id='3' enabled='no'/><vcpu id='4' enabled='yes'/>"
        "<vcpu id='5' enabled='yes'/></vcpus>"
        "<memoryBacking><hugepages><page size='1' unit='G'/></hugepages></memoryBacking>"
        "<cputune><emulatorpin cpuset='0'/><iothreadpin iothread='1' cpuset='2-3'/>"
        "<iothreadpin iothread='2' cpuset='5'/><vcpusched vcpus='4-5' scheduler='fifo' "
        "priority='1'/></cputune>"
        "<cpu><numa><cell id='0' cpus='0-2' memory='2' unit='GiB'/>"
        "<cell id='1' cpus='3-5' memory='2097152'/></numa></cpu>"
        "<numatune><memory mode='restrictive' nodeset='1-2'/>"
        "<memnode cellid='1' mode='strict' nodeset='2'/></numatune></domain>",
        &err);
    g_autofree char *online = NULL;
    g_autofree char *io = NULL;
    g_autofree char *rt = NULL;
    g_autofree char *nodes = NULL;
    g_autofree char *cell1 = NULL;

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_str_eq(req->type, "qemu");
    ck_assert(vpRequestIsQemu(req));
    ck_assert_uint_eq(req->memory, 4ULL << 30);
    ck_assert_uint_eq(req->hugepage_size, 1ULL << 30);
    online = setText(req->online);
    io = setText(req->iothread_pin);
    rt = setText(req->realtime);
    nodes = setText(req->nodeset);
    ck_assert_str_eq(online, "0-1,4-5");
    ck_assert_uint_eq(vpRequestPlanVcpus(req), 6);
    ck_assert_str_eq(io, "2-3,5");
    ck_assert_str_eq(rt, "4-5");
    ck_assert_int_eq(req->mem_mode, VP_MEM_RESTRICTIVE);
    ck_assert_str_eq(nodes, "1-2");
    ck_assert_uint_eq(req->ncells, 2);
    ck_assert_uint_eq(req->cells[0].memory, 2ULL << 30);
    ck_assert_uint_eq(req->cells[1].memory, 2ULL << 30);
    ck_assert_int_eq(req->cells[0].mode, VP_MEM_NONE);
    ck_assert_int_eq(req->cells[1].mode, VP_MEM_STRICT);
    cell1 = setText(req->cells[1].nodeset);
    ck_assert_str_eq(cell1, "2");
    ck_assert(!req->has_pins);
}
END_TEST

/* libvirt reads memory figures with strtoull: one leading '+' is taken, two are not. */
START_TEST(test_memory_plus_sign)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText(
        "<domain type='kvm'><name>n</name><memory>+1024</memory><currentMemory "
        "unit='MiB'>+1</currentMemory><cpu><numa><cell id='0' cpus='0' memory='+1' unit='MiB'/>"
        "</numa></cpu></domain>",
        &err);
    g_autoptr(vpRequest) bad = NULL;

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_uint_eq(req->memory, 1ULL << 20);
    ck_assert_uint_eq(req->cells[0].memory, 1ULL << 20);
    bad = parseText("<domain type='kvm'><name>n</name><memory>++1024</memory></domain>", &err);
    ck_assert_ptr_null(bad);
    ck_assert_msg(strstr(err->message, "<memory> '++1024'"), "%s", err->message);
}
END_TEST

START_TEST(test_domain_types)
{
    static const struct {
        const char *xml;
        bool qemu;
    } types[] = {
        {"<domain type='kvm'><name>a</name></domain>", true},
        {"<domain type='qemu'><name>a</name></domain>", true},
        {"<domain type='xen'><name>a</name></domain>", false},
        {"<domain type='lxc'><name>a</name></domain>", false},
        {"<domain type='bhyve'><name>a</name></domain>", false},
        {"<domain><name>a</name></domain>", false},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(types); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpRequest) req = parseText(types[i].xml, &err);

        ck_assert_msg(req, "%s", err ? err->message : "");
        ck_assert_int_eq(vpRequestIsQemu(req), types[i].qemu);
        ck_assert_int_eq(vpDomXMLIsQemu(types[i].xml, strlen(types[i].xml)), types[i].qemu);
    }
}
END_TEST

/* libvirt's own rendering of a domain whose policy was set with `virsh metadata`. */
START_TEST(test_libvirt_output)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseFixture("libvirt-test-driver.xml", NULL, &err);

    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_str_eq(req->name, "test");
    ck_assert_str_eq(req->uuid, "6695eb01-f6a4-8304-79aa-97f2502e193f");
    ck_assert_uint_eq(req->vcpus, 2);
    ck_assert(req->has_policy);
    ck_assert_int_eq(req->policy.smt, VP_SMT_PACK);
    ck_assert_str_eq(req->policy.group, "g1");
    ck_assert_int_eq(req->policy.emulator, VP_EMULATOR_DEDICATED);
}
END_TEST

START_TEST(test_escapes)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req =
        parseText("<domain><name>a&amp;b&#x41;</name><vcpu>\n  2\n</vcpu></domain>", &err);

    /* Predefined and character references are plain XML, not DTD entities. */
    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert_str_eq(req->name, "a&bA");
    ck_assert_uint_eq(req->vcpus, 2);
}
END_TEST

#define D(body) "<domain type='kvm'><name>x</name>" body "</domain>"

static const struct {
    const char *xml;
    const char *message;
} bad[] = {
    {"<domain><vcpu>1</vcpu></domain>", "domain XML: <name> is missing"},
    {"<domain><name></name></domain>",
     "domain XML: <name></name> is not a domain name (1..1024 bytes, no '/', no control "
     "characters)"},
    {"<domain><name>a/b</name></domain>",
     "domain XML: <name>a/b</name> is not a domain name (1..1024 bytes, no '/', no control "
     "characters)"},
    {"<domain><name>a&#x9;b</name></domain>",
     "domain XML: <name>a?b</name> is not a domain name (1..1024 bytes, no '/', no control "
     "characters)"},
    {"<domain><name>x</name><name>y</name></domain>", "domain XML: <name> appears twice"},
    {"<domainx><name>x</name></domainx>",
     "domain XML: the root element is <domainx>, not <domain>"},
    {"<v:domain xmlns:v='urn:x'><name>x</name></v:domain>",
     "domain XML: the root element is <v:domain>, not <domain>"},
    {D("<uuid>1234</uuid>"), "domain XML: <uuid>1234</uuid> is not a UUID (32 hex digits)"},
    {D("<uuid>c7a5fdbd-edaf-9455-926a-d65c16db1809-</uuid>"),
     "domain XML: <uuid>c7a5fdbd-edaf-9455-926a-d65c16db1809-</uuid> is not a UUID (32 hex "
     "digits)"},
    {D("<uuid>g7a5fdbd-edaf-9455-926a-d65c16db1809</uuid>"),
     "domain XML: <uuid>g7a5fdbd-edaf-9455-926a-d65c16db1809</uuid> is not a UUID (32 hex "
     "digits)"},
    {D("<vcpu>0</vcpu>"), "domain XML: <vcpu>0</vcpu> is not a whole number in 1..4096"},
    {D("<vcpu>4097</vcpu>"), "domain XML: <vcpu>4097</vcpu> is not a whole number in 1..4096"},
    {D("<vcpu>-1</vcpu>"), "domain XML: <vcpu>-1</vcpu> is not a whole number in 1..4096"},
    {D("<vcpu>four</vcpu>"), "domain XML: <vcpu>four</vcpu> is not a whole number in 1..4096"},
    {D("<vcpu>99999999999999999999</vcpu>"),
     "domain XML: <vcpu>99999999999999999999</vcpu> is not a whole number in 1..4096"},
    {D("<vcpu>2</vcpu><vcpu>2</vcpu>"), "domain XML: <vcpu> appears twice"},
    {D("<vcpu current='9'>8</vcpu>"),
     "domain XML: <vcpu current='9'> is not a whole number in 1..8"},
    {D("<vcpu current='0'>8</vcpu>"),
     "domain XML: <vcpu current='0'> is not a whole number in 1..8"},
    {D("<vcpu placement='numad'>8</vcpu>"),
     "domain XML: <vcpu placement='numad'> is not one of static, auto"},
    {D("<vcpu cpuset='1-'>2</vcpu>"),
     "domain XML: <vcpu> cpuset='1-' is not a CPU set of 0..16383 (e.g. 0-7,^3)"},
    {D("<vcpu>8</vcpu><cputune><vcpupin vcpu='8' cpuset='1'/></cputune>"),
     "domain XML: <vcpupin vcpu='8'> is not a whole number in 0..7"},
    {D("<vcpu>8</vcpu><cputune><vcpupin cpuset='1'/></cputune>"),
     "domain XML: <vcpupin> lacks the vcpu attribute"},
    {D("<vcpu>8</vcpu><cputune><vcpupin vcpu='1'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> lacks the cpuset attribute"},
    {D("<vcpu>8</vcpu><cputune><vcpupin vcpu='1' cpuset='1'/><vcpupin vcpu='1' "
       "cpuset='2'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> appears twice"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset=''/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='' is not a CPU set of 0..16383 (e.g. 0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='3-1'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='3-1' is not a CPU set of 0..16383 (e.g. 0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='0-7,^1-3'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='0-7,^1-3' is not a CPU set of 0..16383 (e.g. "
     "0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='1,,2'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='1,,2' is not a CPU set of 0..16383 (e.g. 0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='16384'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='16384' is not a CPU set of 0..16383 (e.g. "
     "0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='0x3'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='0x3' is not a CPU set of 0..16383 (e.g. 0-7,^3)"},
    {D("<vcpu>2</vcpu><cputune><vcpupin vcpu='1' cpuset='3,^3'/></cputune>"),
     "domain XML: <vcpupin vcpu='1'> cpuset='3,^3' selects no CPU"},
    {D("<cputune><emulatorpin cpuset='1'/><emulatorpin cpuset='2'/></cputune>"),
     "domain XML: <emulatorpin> appears twice"},
    {D("<cputune><emulatorpin/></cputune>"),
     "domain XML: <emulatorpin> lacks the cpuset attribute"},
    {D("<vcpu>8</vcpu><cpu><topology sockets='1' cores='2' threads='2'/></cpu>"),
     "domain XML: <topology> sockets=1 dies=1 clusters=1 cores=2 threads=2 gives 4 vCPUs, but "
     "<vcpu> is 8"},
    {D("<vcpu>8</vcpu><cpu><topology sockets='1' cores='8' threads='0'/></cpu>"),
     "domain XML: <topology threads='0'> is not a whole number in 1..4096"},
    {D("<vcpu>8</vcpu><cpu><topology sockets='1' threads='2'/></cpu>"),
     "domain XML: <topology> lacks the cores attribute"},
    {D("<vcpu>4</vcpu><cpu><topology sockets='1' dies='x' cores='2' threads='2'/></cpu>"),
     "domain XML: <topology dies='x'> is not a whole number in 1..4096"},
    {D("<iothreads>5000</iothreads>"),
     "domain XML: <iothreads>5000</iothreads> is not a whole number in 0..4096"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0' "
       "smt='foo'/></metadata>"),
     "policy element: smt='foo' is not one of isolate, pack, spread, share"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0' "
       "colour='red'/></metadata>"),
     "policy element: unknown policy attribute 'colour' (known: smt, group, coresched, "
     "locality, emulator, rebalance, unmet, cpus, ratio)"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0' "
       "p:smt='pack'/></metadata>"),
     "policy element: attribute p:smt must not have a namespace"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'><p:smt/></"
       "p:policy></metadata>"),
     "policy element: unexpected child element <smt>"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'>hello</"
       "p:policy></metadata>"),
     "policy element: unexpected text 'hello' (the policy is in its attributes)"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'>\n <![CDATA[ "
       "isolate]]></p:policy></metadata>"),
     "policy element: unexpected text '?  isolate' (the policy is in its attributes)"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'/>"
       "<policy xmlns='http://vcpuplace.org/xmlns/policy/1.0'/></metadata>"),
     "domain XML: <metadata> holds two policy elements of http://vcpuplace.org/xmlns/policy/1.0"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0' group='a b'/>"
       "</metadata>"),
     "policy element: group='a b' is not 1 to 64 characters of A-Z a-z 0-9 . _ -"},
    {D("<memory unit='MiB'>lots</memory>"), "domain XML: <memory> 'lots' is not a whole number"},
    {D("<memory unit='parsecs'>1</memory>"),
     "domain XML: <memory> unit 'parsecs' is not one of b, KB, KiB, MB, MiB, GB, GiB, TB, TiB, "
     "PB, PiB, EB, EiB (or k, M, G, T, P, E)"},
    {D("<memory unit='EiB'>99</memory>"), "domain XML: <memory> '99 EiB' is too large"},
    {D("<memoryBacking><hugepages><page size='3' unit='M'/></hugepages></memoryBacking>"),
     "domain XML: <page size='3'> is not a power of two bytes"},
    {D("<memoryBacking><hugepages><page unit='M'/></hugepages></memoryBacking>"),
     "domain XML: <page> lacks the size attribute"},
    {D("<numatune><memory mode='nearby' nodeset='0'/></numatune>"),
     "domain XML: <memory mode='nearby'> is not one of strict, restrictive, preferred, "
     "interleave"},
    {D("<numatune><memory mode='strict' nodeset='0-'/></numatune>"),
     "domain XML: <numatune><memory> nodeset='0-' is not a node set of 0..16383 (e.g. 0-7,^3)"},
    {D("<numatune><memory mode='strict' placement='numad'/></numatune>"),
     "domain XML: <numatune><memory placement='numad'> is not one of static, auto"},
    {D("<numatune><memory mode='strict'/></numatune>"),
     "domain XML: <numatune><memory> has neither nodeset nor placement='auto'"},
    {D("<vcpu>2</vcpu><cpu><numa><cell id='0' cpus='0-3' memory='1024'/></numa></cpu>"),
     "domain XML: <cell id='0'> cpus='0-3' names vCPUs beyond <vcpu> 2"},
    {D("<vcpu>4</vcpu><cpu><numa><cell id='0' cpus='0-1' memory='1'/>"
       "<cell id='1' cpus='1-2' memory='1'/></numa></cpu>"),
     "domain XML: <cell id='1'> cpus='1-2' names vCPUs another cell has"},
    {D("<vcpu>2</vcpu><cpu><numa><cell id='0' cpus='0-1'/></numa></cpu>"),
     "domain XML: <cell id='0'> lacks the memory attribute"},
    {D("<vcpu>2</vcpu><numatune><memnode cellid='3' mode='strict' nodeset='0'/></numatune>"),
     "domain XML: <memnode cellid='3'> names no guest NUMA <cell>"},
    {D("<vcpu>2</vcpu><cputune><vcpusched vcpus='0' scheduler='deadline'/></cputune>"),
     "domain XML: <vcpusched scheduler='deadline'> is not one of batch, idle, fifo, rr, other"},
    {D("<vcpu>2</vcpu><cputune><vcpusched vcpus='0-5' scheduler='fifo'/></cputune>"),
     "domain XML: <vcpusched vcpus='0-5'> names vCPUs beyond <vcpu> 2"},
    {D("<vcpu>2</vcpu><cputune><iothreadpin iothread='1' cpuset='x'/></cputune>"),
     "domain XML: <iothreadpin iothread='1'> cpuset='x' is not a CPU set of 0..16383 (e.g. "
     "0-7,^3)"},
    {D("<vcpu current='1'>2</vcpu><vcpus><vcpu id='0' enabled='no'/>"
       "<vcpu id='1' enabled='no'/></vcpus>"),
     "domain XML: <vcpus> has no <vcpu enabled='yes'>: a domain needs one vCPU online"},
    {D("<vcpu current='1'>2</vcpu><vcpus><vcpu id='0' enabled='maybe'/></vcpus>"),
     "domain XML: <vcpus><vcpu id='0' enabled='maybe'> is not yes or no"},
    {D("<metadata><p:polcy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'/></metadata>"),
     "domain XML: unknown element <polcy> in namespace http://vcpuplace.org/xmlns/policy/1.0 "
     "(the only one is <policy>)"},
    {D("<metadata><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/0.9' smt='share'/>"
       "</metadata>"),
     "domain XML: <policy> in namespace 'http://vcpuplace.org/xmlns/policy/0.9' is not "
     "vcpuplace's policy (namespace http://vcpuplace.org/xmlns/policy/1.0)"},
};

START_TEST(test_bad_values)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText(bad[_i].xml, &err);

    ck_assert_msg(!req, "accepted: %s", bad[_i].xml);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, bad[_i].message);
}
END_TEST

START_TEST(test_long_value_is_cut_in_message)
{
    g_autofree char *junk = g_strnfill(100000, 'z');
    g_autofree char *xml = g_strdup_printf(D("<vcpu>%s</vcpu>"), junk);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText(xml, &err);

    ck_assert_ptr_null(req);
    ck_assert_uint_lt(strlen(err->message), 200);
    ck_assert_ptr_nonnull(strstr(err->message, "zzz...</vcpu>"));
}
END_TEST

START_TEST(test_malformed)
{
    static const char *const texts[] = {
        "",
        "not xml at all",
        "<domain><name>x</name>",
        "<domain><name>x</nam></domain>",
        "<domain a='1' a='2'><name>x</name></domain>",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpRequest) req = parseText(texts[i], &err);

        ck_assert_msg(!req, "accepted: '%s'", texts[i]);
        ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
        ck_assert_msg(g_str_has_prefix(err->message, "domain XML: line "), "%s", err->message);
    }
}
END_TEST

START_TEST(test_malformed_file)
{
    g_autofree char *path = fixture("malformed.xml");
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = vpDomXMLParseFile(path, NULL, &err);
    g_autofree char *prefix = g_strdup_printf("%s: domain XML: line ", path);

    ck_assert_ptr_null(req);
    ck_assert_msg(g_str_has_prefix(err->message, prefix), "%s", err->message);
}
END_TEST

START_TEST(test_file_errors)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = vpDomXMLParseFile("/nonexistent/dom.xml", NULL, &err);

    ck_assert_ptr_null(req);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_SYSTEM));
    ck_assert_str_eq(err->message, "/nonexistent/dom.xml: No such file or directory");
    g_clear_error(&err);

    /* An endless file is cut off at the size bound, not read into memory. */
    req = vpDomXMLParseFile("/dev/zero", NULL, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message,
                     "/dev/zero: more than the 4194304 bytes accepted for domain XML");
}
END_TEST

START_TEST(test_too_large)
{
    gsize len = VP_DOMXML_MAX_BYTES + 1;
    g_autofree char *big = g_malloc(len);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = NULL;

    memset(big, ' ', len);
    memcpy(big, "<domain>", 8);
    req = vpDomXMLParse(big, len, NULL, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message, "domain XML: 4194305 bytes is more than the 4194304 accepted");
}
END_TEST

/* A domain with n attributes on one <metadata> child, or n such children. */
static char *
metadataXML(guint attrs, guint elements)
{
    GString *xml = g_string_new("<domain type='kvm'><name>big</name><vcpu>2</vcpu><metadata>");
    for (guint e = 0; e < elements; e++) {
        g_string_append(xml, "<t:x xmlns:t='urn:t'");
        for (guint a = 0; a < attrs; a++)
            g_string_append_printf(xml, " a%u='v=%u'", a, a);
        g_string_append(xml, "/>");
    }
    g_string_append(xml, "</metadata></domain>");
    return g_string_free(xml, FALSE);
}

/* 47,000 attributes (506 KB, accepted by virsh define) took 2.5 s in libxml2's duplicate
 * check, under the state lock; the pre-scan refuses them before libxml2 sees them. An '='
 * inside a quoted value is no attribute. */
START_TEST(test_attribute_bound)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *many = metadataXML(47000, 1);
    g_autoptr(vpRequest) req = parseText(many, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message, "domain XML: line 1: element <t:x> has more than 32 attributes");

    g_autofree char *fits = metadataXML(VP_DOMXML_MAX_ATTRS - 1, 1); /* plus xmlns:t */
    g_autoptr(vpRequest) ok = parseText(fits, NULL);
    ck_assert_ptr_nonnull(ok);

    g_autoptr(GError) all_err = NULL;
    g_autofree char *all = metadataXML(VP_DOMXML_MAX_ATTRS - 1, 400);
    g_autoptr(vpRequest) refused = parseText(all, &all_err);
    ck_assert_ptr_null(refused);
    ck_assert_str_eq(all_err->message, "domain XML: line 1: more than 10000 attributes in all");
}
END_TEST

START_TEST(test_reference_bound)
{
    g_autoptr(GString) xml = g_string_new("<domain type='kvm'><name>big</name><description>");
    for (int i = 0; i <= VP_DOMXML_MAX_REFS; i++)
        g_string_append(xml, "&#65;");
    g_string_append(xml, "</description><vcpu>2</vcpu></domain>");
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText(xml->str, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message,
                     "domain XML: line 1: more than 20000 character and entity references");
}
END_TEST

START_TEST(test_node_bound)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *many = metadataXML(0, VP_DOMXML_MAX_NODES);
    g_autoptr(vpRequest) req = parseText(many, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message,
                     "domain XML: line 1: more than 10000 elements, comments and other nodes");

    g_autofree char *fits = metadataXML(0, VP_DOMXML_MAX_NODES - 5);
    g_autoptr(vpRequest) ok = parseText(fits, NULL);
    ck_assert_ptr_nonnull(ok);
}
END_TEST

START_TEST(test_doctype_passwd)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseFixture("doctype-passwd.xml", NULL, &err);
    g_autofree char *path = fixture("doctype-passwd.xml");
    g_autofree char *want = g_strdup_printf("%s: domain XML: DOCTYPE is not accepted", path);

    ck_assert_ptr_null(req);
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, want);
    ck_assert_ptr_null(strstr(err->message, "root:"));
}
END_TEST

/* Each document names a FIFO holding a marker, through an entity, an external DTD or a
 * parameter entity. A parser that opened the FIFO would read the marker (or block on the
 * empty FIFO until Check's timeout kills the test); the marker must still be there. */
static const char *const hostile[] = {
    "<!DOCTYPE domain [<!ENTITY xxe SYSTEM \"file://@FIFO@\">]>"
    "<domain><name>&xxe;</name></domain>",
    "<!DOCTYPE domain SYSTEM \"@FIFO@\"><domain><name>x</name></domain>",
    "<!DOCTYPE domain [<!ENTITY % p SYSTEM \"@FIFO@\"> %p;]><domain><name>x</name></domain>",
    "<?xml version='1.0'?>\n<!DOCTYPE domain PUBLIC \"-//X//Y\" \"@FIFO@\">"
    "<domain><name>x</name></domain>",
};

START_TEST(test_doctype_never_fetched)
{
    static const char marker[] = "MARKER-vcpuplace-never-read";
    g_autofree char *dir = g_dir_make_tmp("vp-domxml-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "secret", NULL);
    g_autofree char *xml = NULL;
    g_auto(GStrv) parts = g_strsplit(hostile[_i], "@FIFO@", 2);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = NULL;
    char back[sizeof(marker)] = {0};
    int fd;

    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    /* Holding it open read-write lets us fill it without a reader and read it back. */
    fd = open(fifo, O_RDWR | O_NONBLOCK);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, marker, strlen(marker)), strlen(marker));

    xml = g_strjoin(fifo, parts[0], parts[1], NULL);
    req = parseText(xml, &err);
    ck_assert_ptr_null(req);
    ck_assert_str_eq(err->message, "domain XML: DOCTYPE is not accepted");

    ck_assert_int_eq(read(fd, back, sizeof(back)), strlen(marker));
    ck_assert_str_eq(back, marker);
    close(fd);
    g_unlink(fifo);
    g_rmdir(dir);
}
END_TEST

START_TEST(test_doctype_internal_only)
{
    static const char *const texts[] = {
        "<!DOCTYPE domain><domain><name>x</name></domain>",
        /* Billion laughs: refused before a single entity is declared. */
        "<!DOCTYPE d [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
        "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d "
        "\"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">"
        "]><domain><name>&d;</name></domain>",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(vpRequest) req = parseText(texts[i], &err);

        ck_assert_ptr_null(req);
        ck_assert_str_eq(err->message, "domain XML: DOCTYPE is not accepted");
    }
}
END_TEST

START_TEST(test_undeclared_entity)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = parseText("<domain><name>&xxe;</name></domain>", &err);

    ck_assert_ptr_null(req);
    ck_assert_msg(g_str_has_prefix(err->message, "domain XML: line 1: "), "%s", err->message);
}
END_TEST

START_TEST(test_policy_element)
{
    static const char *const forms[] = {
        /* What `virsh metadata --key vcpuplace` prints. */
        "<vcpuplace:policy xmlns:vcpuplace=\"http://vcpuplace.org/xmlns/policy/1.0\" "
        "smt=\"pack\" group=\"g1\"/>",
        "<policy xmlns='http://vcpuplace.org/xmlns/policy/1.0' smt='pack' group='g1'/>",
        "<x:policy xmlns:x='http://vcpuplace.org/xmlns/policy/1.0' group='g1' "
        "smt='pack'></x:policy>",
        /* What `virsh metadata DOMAIN --uri URI` prints with libvirt 9.0: no namespace. */
        "<policy smt=\"pack\" group=\"g1\"/>\n",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
        g_autoptr(GError) err = NULL;
        vpPolicy p;

        vpPolicyInitDefaults(&p);
        p.rebalance = VP_REBALANCE_OFF;
        ck_assert_msg(vpDomXMLParsePolicy(forms[i], strlen(forms[i]), &p, &err), "%zu: %s", i,
                      err ? err->message : "");
        ck_assert_int_eq(p.smt, VP_SMT_PACK);
        ck_assert_str_eq(p.group, "g1");
        /* Unset attributes keep what the caller had. */
        ck_assert_int_eq(p.rebalance, VP_REBALANCE_OFF);
        vpPolicyClear(&p);
    }
}
END_TEST

START_TEST(test_policy_element_bad)
{
    static const struct {
        const char *xml;
        const char *message;
    } cases[] = {
        {"<p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/2.0'/>",
         "policy XML: the root element is <policy> in namespace "
         "'http://vcpuplace.org/xmlns/policy/2.0', not <policy> in "
         "'http://vcpuplace.org/xmlns/policy/1.0' (or in none)"},
        {"<vcpuplace smt='pack'/>",
         "policy XML: the root element is <vcpuplace> in namespace '', not <policy> in "
         "'http://vcpuplace.org/xmlns/policy/1.0' (or in none)"},
        {"<p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0' group='ok' smt='x'/>",
         "policy element: smt='x' is not one of isolate, pack, spread, share"},
        {"<!DOCTYPE p><p:policy xmlns:p='http://vcpuplace.org/xmlns/policy/1.0'/>",
         "policy XML: DOCTYPE is not accepted"},
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        vpPolicy p;

        vpPolicyInitDefaults(&p);
        ck_assert(!vpDomXMLParsePolicy(cases[i].xml, strlen(cases[i].xml), &p, &err));
        ck_assert_str_eq(err->message, cases[i].message);
        /* A refused element changes nothing, the valid group before the bad smt included. */
        ck_assert_ptr_null(p.group);
        ck_assert_int_eq(p.smt, VP_SMT_SPREAD);
        vpPolicyClear(&p);
    }
}
END_TEST

START_TEST(test_format_policy)
{
    g_autofree char *plain = NULL;
    g_autofree char *grouped = NULL;
    g_autoptr(GError) err = NULL;
    vpPolicy p, back;

    vpPolicyInitDefaults(&p);
    plain = vpDomXMLFormatPolicy(&p);
    /* No namespace: virDomainSetMetadata refuses an element that declares one. */
    ck_assert_str_eq(plain, "<policy smt=\"spread\" coresched=\"vm\" locality=\"auto\" "
                            "emulator=\"housekeeping\" rebalance=\"auto\" unmet=\"refuse\"/>");

    ck_assert(vpPolicySetAttr(&p, "group", "tenant.a-1", NULL));
    ck_assert(vpPolicySetAttr(&p, "smt", "isolate", NULL));
    ck_assert(vpPolicySetAttr(&p, "coresched", "group", NULL));
    ck_assert(vpPolicySetAttr(&p, "locality", "l3", NULL));
    ck_assert(vpPolicySetAttr(&p, "emulator", "dedicated", NULL));
    ck_assert(vpPolicySetAttr(&p, "rebalance", "off", NULL));
    ck_assert(vpPolicySetAttr(&p, "unmet", "degrade", NULL));
    grouped = vpDomXMLFormatPolicy(&p);

    vpPolicyInitDefaults(&back);
    ck_assert_msg(vpDomXMLParsePolicy(grouped, strlen(grouped), &back, &err), "%s",
                  err ? err->message : "");
    ck_assert_str_eq(back.group, "tenant.a-1");
    ck_assert_int_eq(back.smt, VP_SMT_ISOLATE);
    ck_assert_int_eq(back.coresched, VP_CORESCHED_GROUP);
    ck_assert_int_eq(back.locality, VP_LOCALITY_L3);
    ck_assert_int_eq(back.emulator, VP_EMULATOR_DEDICATED);
    ck_assert_int_eq(back.rebalance, VP_REBALANCE_OFF);
    ck_assert_int_eq(back.unmet, VP_UNMET_DEGRADE);
    vpPolicyClear(&p);
    vpPolicyClear(&back);
}
END_TEST

/* A live XML as libvirt 9.0 writes it after vcpuplace pinned the domain and recorded it. */
static char *
liveXML(const char *pins, const char *record)
{
    return g_strdup_printf(
        "<domain type='kvm' id='3'><name>web</name><vcpu placement='static'>3</vcpu>"
        "<cputune><shares>2048</shares>%s</cputune>"
        "<metadata><vcpuplace:policy xmlns:vcpuplace='" VP_XML_NS "' smt='spread'/>%s"
        "</metadata><os><type>hvm</type></os></domain>",
        pins, record);
}

#define APPLIED_RECORD(attrs)                                                                      \
    "<vcpuplace-applied:applied xmlns:vcpuplace-applied='" VP_APPLIED_NS "' " attrs "/>"

/* The daemon's key, as far as these tests are concerned. */
static GBytes *
testKey(void)
{
    return g_bytes_new_static("0123456789abcdef0123456789abcdef", 32);
}

/* The record vcpuplaced writes for domain name, in the applied namespace, signed with key. */
static char *
signedRecord(GBytes *key, const char *name, const char *vcpus, const char *emulator)
{
    g_auto(GStrv) cpus = g_strsplit(vcpus, ",", -1);
    g_autoptr(vpPlan) plan = vpPlanNew(name, g_strv_length(cpus));
    for (guint i = 0; cpus[i]; i++)
        plan->vcpu_pu[i] = strcmp(cpus[i], "-") == 0 ? -1 : atoi(cpus[i]);
    if (emulator)
        hwloc_bitmap_list_sscanf(plan->emulator, emulator);
    g_autofree char *record = vpDomXMLFormatApplied(plan, key);
    const char *sig = strstr(record, "sig=\"");
    ck_assert_ptr_nonnull(sig);
    return g_strdup_printf("<vcpuplace-applied:applied xmlns:vcpuplace-applied='" VP_APPLIED_NS
                           "' vcpus='%s'%s%s%s %.70s/>",
                           vcpus, emulator ? " emulator='" : "", emulator ? emulator : "",
                           emulator ? "'" : "", sig);
}

START_TEST(test_applied_record_round_trip)
{
    g_autoptr(vpPlan) plan = vpPlanNew("web", 3);
    g_autoptr(GError) err = NULL;

    plan->vcpu_pu[0] = 2;
    plan->vcpu_pu[1] = 3;
    plan->vcpu_pu[2] = 11;
    hwloc_bitmap_set_range(plan->emulator, 0, 1);
    g_autoptr(GBytes) key = testKey();
    g_autofree char *record = vpDomXMLFormatApplied(plan, key);
    ck_assert_msg(g_str_has_prefix(record, "<applied vcpus=\"2,3,11\" emulator=\"0-1\" sig=\"") &&
                      strlen(record) ==
                          strlen("<applied vcpus=\"2,3,11\" emulator=\"0-1\" sig=\"\"/>") + 64,
                  "%s", record);
    g_autofree char *signed_record = signedRecord(key, "web", "2,3,11", "0-1");

    /* What a saved image brings back: the pins vcpuplace applied, its record, and the rest. */
    g_autofree char *xml = liveXML("<vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='3'/>"
                                   "<vcpupin vcpu='2' cpuset='11'/><emulatorpin cpuset='0-1'/>"
                                   "<iothreadpin iothread='1' cpuset='0,1'/>",
                                   signed_record);
    g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, &err);
    ck_assert_msg(out, "%s", err ? err->message : "no rewrite");
    ck_assert_ptr_null(strstr(out, "pin"));
    ck_assert_ptr_null(strstr(out, VP_APPLIED_NS));
    ck_assert_ptr_nonnull(strstr(out, "<shares>2048</shares>"));
    ck_assert_ptr_nonnull(strstr(out, "smt=\"spread\""));
    /* The result is a domain vcpuplace places: no pins of its own left. */
    g_autoptr(vpRequest) req = vpDomXMLParse(out, strlen(out), NULL, &err);
    ck_assert_msg(req, "%s", err ? err->message : "");
    ck_assert(!req->has_pins);
    ck_assert_ptr_null(req->emulator_pin);
    ck_assert_uint_eq(req->vcpus, 3);

    /* Only pins left: <cputune> goes with them. */
    g_autofree char *bare_record = signedRecord(key, "a", "5", NULL);
    g_autofree char *bare =
        g_strdup_printf("<domain type='kvm'><name>a</name><vcpu>1</vcpu><cputune><vcpupin vcpu='0' "
                        "cpuset='5'/></cputune><metadata>%s</metadata></domain>",
                        bare_record);
    g_autofree char *bare_out = vpDomXMLStripApplied(bare, strlen(bare), key, &err);
    ck_assert_msg(bare_out, "%s", err ? err->message : "no rewrite");
    ck_assert_ptr_null(strstr(bare_out, "cputune"));
}
END_TEST

/* Pins changed since vcpuplace applied them, or never its own: the XML stays as it is. */
START_TEST(test_applied_record_kept)
{
    static const char *const cases[][2] = {
        {"<vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='4'/>",
         APPLIED_RECORD("vcpus='2,3'")},
        {"<vcpupin vcpu='0' cpuset='2-3'/>", APPLIED_RECORD("vcpus='2,3'")},
        {"<vcpupin vcpu='2' cpuset='2'/>", APPLIED_RECORD("vcpus='2,3'")},
        {"<vcpupin vcpu='1' cpuset='3'/>", APPLIED_RECORD("vcpus='2,-'")},
        {"<emulatorpin cpuset='0'/>", APPLIED_RECORD("vcpus='2,3'")},
        {"<emulatorpin cpuset='0'/>", APPLIED_RECORD("vcpus='2,3' emulator='0-1'")},
        {"<vcpupin vcpu='0' cpuset='2'/>", ""},
        {"<vcpupin vcpu='0' cpuset='2'/>", "<applied vcpus='2'/>"},
    };
    g_autoptr(GBytes) key = testKey();

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *xml = liveXML(cases[i][0], cases[i][1]);
        g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, &err);

        ck_assert_msg(!out && !err, "case %" G_GSIZE_FORMAT ": %s", i, out ? out : err->message);
    }
}
END_TEST

/* A tenant writes its domain's metadata: an <applied> record naming the domain's own pins
 * (Nova's) once had them taken out at a restore, and the domain placed anew. Only a record
 * signed with vcpuplaced's key, for this domain's name, is believed. */
START_TEST(test_applied_record_forged)
{
    const char *pins = "<vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='3'/>"
                       "<emulatorpin cpuset='0-1'/>";
    g_autoptr(GBytes) key = testKey();
    g_autoptr(GBytes) other = g_bytes_new_static("another host's key, 32 bytes lon", 32);
    g_autofree char *theirs = signedRecord(other, "web", "2,3", "0-1");
    g_autofree char *renamed = signedRecord(key, "db", "2,3", "0-1");
    g_autofree char *truth = signedRecord(key, "web", "2,3", "0-1");
    g_autofree char *widened = g_strdup(truth);
    memcpy(strstr(widened, "vcpus='2,3'"), "vcpus='2,4'", 11);
    const char *const forged[] = {
        APPLIED_RECORD("vcpus='2,3' emulator='0-1'"),
        APPLIED_RECORD("vcpus='2,3' emulator='0-1' sig=''"),
        APPLIED_RECORD("vcpus='2,3' emulator='0-1' "
                       "sig='0000000000000000000000000000000000000000000000000000000000000000'"),
        theirs,
        renamed,
        widened,
    };

    for (gsize i = 0; i < G_N_ELEMENTS(forged); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *xml = liveXML(pins, forged[i]);
        g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, &err);
        ck_assert_msg(!out && !err, "forged record %" G_GSIZE_FORMAT " believed: %s", i,
                      out ? out : err->message);
    }
    g_autofree char *xml = liveXML(pins, truth);
    g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, NULL);
    ck_assert_msg(out && !strstr(out, "pin"), "%s", out ? out : "the true record is not");
}
END_TEST

/* A hot-plugged vCPU vcpuplace could not place floats over its domain's other vCPUs' CPUs:
 * that pin is vcpuplace's too, and goes with the rest; a float set of other CPUs does not. */
START_TEST(test_applied_record_floating)
{
    g_autoptr(GBytes) key = testKey();
    g_autofree char *record = signedRecord(key, "web", "2,3,-", NULL);
    g_autofree char *xml = liveXML("<vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='3'/>"
                                   "<vcpupin vcpu='2' cpuset='2-3'/>",
                                   record);
    g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, NULL);
    ck_assert_msg(out && !strstr(out, "pin"), "%s", out ? out : "kept");
    g_autofree char *wider = liveXML("<vcpupin vcpu='0' cpuset='2'/><vcpupin vcpu='1' cpuset='3'/>"
                                     "<vcpupin vcpu='2' cpuset='2-4'/>",
                                     record);
    ck_assert_ptr_null(vpDomXMLStripApplied(wider, strlen(wider), key, NULL));
}
END_TEST

START_TEST(test_applied_record_bad)
{
    static const char *const cases[][2] = {
        {APPLIED_RECORD(""), "no usable vcpus attribute"},
        {APPLIED_RECORD("vcpus=''"), "no usable vcpus attribute"},
        {APPLIED_RECORD("vcpus='2,x'"), "item 1 'x'"},
        {APPLIED_RECORD("vcpus='99999'"), "item 0 '99999'"},
        {APPLIED_RECORD("vcpus='1' emulator='3-1'"), "emulator"},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *xml = liveXML("<vcpupin vcpu='0' cpuset='1'/>", cases[i][0]);
        g_autoptr(GBytes) key = testKey();
        g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), key, &err);

        ck_assert_ptr_null(out);
        ck_assert_msg(err && strstr(err->message, cases[i][1]), "case %" G_GSIZE_FORMAT ": %s", i,
                      err ? err->message : "no error");
    }
    g_autoptr(GError) err = NULL;
    ck_assert_ptr_null(vpDomXMLStripApplied("<domain", 7, NULL, &err));
    ck_assert_ptr_nonnull(err);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("domxml");
    TCase *tc = tcase_create("parse");
    TCase *hostile_tc = tcase_create("hostile");
    TCase *policy_tc = tcase_create("policy");

    tcase_add_test(tc, test_basic);
    tcase_add_test(tc, test_minimal);
    tcase_add_test(tc, test_pins);
    tcase_add_test(tc, test_vcpu_cpuset);
    tcase_add_test(tc, test_libvirt_output);
    tcase_add_test(tc, test_escapes);
    tcase_add_loop_test(tc, test_bad_values, 0, G_N_ELEMENTS(bad));
    tcase_add_test(tc, test_numa_elements);
    tcase_add_test(tc, test_memory_plus_sign);
    tcase_add_test(tc, test_domain_types);
    tcase_add_test(tc, test_long_value_is_cut_in_message);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_malformed_file);
    tcase_add_test(tc, test_file_errors);
    tcase_add_test(tc, test_too_large);
    tcase_add_test(tc, test_attribute_bound);
    tcase_add_test(tc, test_node_bound);
    tcase_add_test(tc, test_reference_bound);
    suite_add_tcase(s, tc);

    tcase_add_test(hostile_tc, test_doctype_passwd);
    tcase_add_loop_test(hostile_tc, test_doctype_never_fetched, 0, G_N_ELEMENTS(hostile));
    tcase_add_test(hostile_tc, test_doctype_internal_only);
    tcase_add_test(hostile_tc, test_undeclared_entity);
    suite_add_tcase(s, hostile_tc);

    tcase_add_test(policy_tc, test_policy_element);
    tcase_add_test(policy_tc, test_policy_element_bad);
    tcase_add_test(policy_tc, test_format_policy);
    tcase_add_test(policy_tc, test_applied_record_round_trip);
    tcase_add_test(policy_tc, test_applied_record_kept);
    tcase_add_test(policy_tc, test_applied_record_forged);
    tcase_add_test(policy_tc, test_applied_record_floating);
    tcase_add_test(policy_tc, test_applied_record_bad);
    suite_add_tcase(s, policy_tc);

    return s;
}
