/*
 * Cookie decisions: libvirt's qemu.conf sched_core as libvirt reads it, and the decision
 * checked exhaustively against a model of the kernel's cookies. Every combination of
 * policies, trust groups, emulator placement, libvirt's sched_core and the cookies the
 * threads carry before (none, the VM's own, one another VM also carries, a partly cookied
 * VM after a vCPU hotplug) is decided, the actions are carried out on the model, and what
 * an operator relies on is checked: every VM that asks for a cookie has one on every thread
 * of its scope; trust-group members share it; VMs of different sets never share one; a
 * cookie that only its own set carries is kept; coresched=off VMs are never touched; a
 * second decision finds nothing left to do.
 */
#include "core/place/cookieplan.h"
#include "checkmain.h"

#include <check.h>
#include <string.h>

/* ---- qemu.conf ------------------------------------------------------------------------ */

static vpSchedCore
parseOk(const char *text)
{
    g_autoptr(GError) error = NULL;
    vpSchedCore mode = VP_SCHED_CORE_UNKNOWN;

    ck_assert_msg(vpSchedCoreParse(text, strlen(text), "qemu.conf", &mode, &error), "%s",
                  error ? error->message : "");
    return mode;
}

static char *
parseError(const char *text)
{
    g_autoptr(GError) error = NULL;
    vpSchedCore mode = VP_SCHED_CORE_FULL;

    ck_assert(!vpSchedCoreParse(text, strlen(text), "/etc/libvirt/qemu.conf", &mode, &error));
    ck_assert_int_eq(mode, VP_SCHED_CORE_FULL);
    ck_assert(g_error_matches(error, VP_ERROR, VP_ERROR_INVALID));
    return g_strdup(error->message);
}

START_TEST(test_schedcore_values)
{
    ck_assert_int_eq(parseOk(""), VP_SCHED_CORE_NONE);
    ck_assert_int_eq(parseOk("sched_core = \"vcpus\"\n"), VP_SCHED_CORE_VCPUS);
    ck_assert_int_eq(parseOk("sched_core=\"emulator\""), VP_SCHED_CORE_EMULATOR);
    ck_assert_int_eq(parseOk("  sched_core = 'full'  # every helper too\n"), VP_SCHED_CORE_FULL);
    ck_assert_int_eq(parseOk("sched_core = \"none\"\n"), VP_SCHED_CORE_NONE);
    /* the last of repeated keys counts, as in libvirt */
    ck_assert_int_eq(parseOk("sched_core = \"full\"\nsched_core = \"vcpus\"\n"),
                     VP_SCHED_CORE_VCPUS);
    ck_assert_int_eq(parseOk("user = \"root\"; sched_core = \"emulator\"\n"),
                     VP_SCHED_CORE_EMULATOR);
}
END_TEST

START_TEST(test_schedcore_not_fooled)
{
    /* Debian's qemu.conf ships the key commented out. */
    ck_assert_int_eq(parseOk("# sched_core = \"full\"\n#sched_core = \"vcpus\"\n"),
                     VP_SCHED_CORE_NONE);
    /* inside a list spanning lines, and inside strings, it is not a setting */
    ck_assert_int_eq(parseOk("cgroup_device_acl = [\n    \"/dev/null\",\n"
                             "    sched_core = \"full\"\n]\n"),
                     VP_SCHED_CORE_NONE);
    ck_assert_int_eq(parseOk("vnc_listen = \"sched_core = 'full'\"\n"), VP_SCHED_CORE_NONE);
    ck_assert_int_eq(parseOk("x = \"a # b\"\nsched_core = \"vcpus\" # c\n"), VP_SCHED_CORE_VCPUS);
    ck_assert_int_eq(parseOk("sched_core_x = \"full\"\n"), VP_SCHED_CORE_NONE);
}
END_TEST

START_TEST(test_schedcore_errors)
{
    g_autofree char *bad = parseError("user = \"root\"\n\nsched_core = \"all\"\n");
    g_autofree char *unquoted = parseError("sched_core = vcpus\n");
    g_autofree char *number = parseError("sched_core = 1\n");

    ck_assert_str_eq(bad, "/etc/libvirt/qemu.conf:3: sched_core='all' is not one of none, "
                          "vcpus, emulator, full");
    ck_assert_str_eq(unquoted, "/etc/libvirt/qemu.conf:1: sched_core = vcpus is not a quoted "
                               "string");
    ck_assert_str_eq(number, "/etc/libvirt/qemu.conf:1: sched_core = 1 is not a quoted string");
}
END_TEST

/* ---- a model of the kernel's cookies ------------------------------------------------------ */

#define NV 2 /* vCPU threads per VM */
#define NO 1 /* other threads (the emulator) */
#define NDOM 3

/* What a VM's threads carry before the decision. */
typedef enum {
    INIT_NONE = 0,
    INIT_OWN,     /* a cookie nobody else has (libvirt's sched_core, or given earlier) */
    INIT_X,       /* cookie X, which other VMs of this case may carry too */
    INIT_PARTIAL, /* cookie X on vCPU 0 only: a vCPU hot-plugged without it */
    INIT_LAST
} Init;

typedef struct {
    const char *name;
    vpCoresched coresched;
    const char *group;
    bool emulator_own;
    uint64_t vcpu[NV];
    uint64_t other[NO];
} Vm;

typedef struct {
    Vm vm[NDOM];
    int n;
    vpSchedCore libvirt;
    uint64_t next; /* next fresh cookie id */
} Host;

#define COOKIE_X 7

static void
summarize(const uint64_t *ids, int n, uint64_t *id, bool *all)
{
    *id = 0;
    *all = true;
    for (int i = 0; i < n; i++) {
        if (!ids[i]) {
            *all = false;
        } else if (*id && *id != ids[i]) {
            *id = VP_COOKIE_MIXED;
        } else if (!*id) {
            *id = ids[i];
        }
    }
    if (!*id)
        *all = false;
}

static void
observe(const Host *h, vpCookieDomain *doms)
{
    for (int i = 0; i < h->n; i++) {
        const Vm *vm = &h->vm[i];

        doms[i] = (vpCookieDomain){
            .name = vm->name,
            .coresched = vm->coresched,
            .group = vm->group,
            .emulator_own = vm->emulator_own,
            .seen = VP_COOKIE_SEEN,
        };
        summarize(vm->vcpu, NV, &doms[i].vcpus, &doms[i].vcpus_all);
        summarize(vm->other, NO, &doms[i].others, &doms[i].others_all);
    }
}

static Vm *
vmByName(Host *h, const char *name)
{
    for (int i = 0; i < h->n; i++) {
        if (strcmp(h->vm[i].name, name) == 0)
            return &h->vm[i];
    }
    ck_abort_msg("action names unknown domain '%s'", name);
    return NULL;
}

static void
give(Vm *vm, vpCookieScope scope, uint64_t id)
{
    for (int t = 0; t < NV; t++)
        vm->vcpu[t] = id;
    for (int t = 0; scope == VP_COOKIE_SCOPE_PROCESS && t < NO; t++)
        vm->other[t] = id;
}

/* What the daemon's actuator does: CREATE gives the scope a fresh cookie; SHARE copies the
 * cookie of a vCPU thread of from that carries the id (from's first vCPU thread after a
 * CREATE). */
static void
apply(Host *h, const vpCookiePlan *plan)
{
    for (guint i = 0; i < plan->actions->len; i++) {
        const vpCookieAction *a = &g_array_index(plan->actions, vpCookieAction, i);
        Vm *vm = vmByName(h, a->domain);
        uint64_t id = 0;

        if (a->op == VP_COOKIE_CREATE) {
            give(vm, a->scope, h->next++);
            continue;
        }
        Vm *from = vmByName(h, a->from);
        for (int t = 0; t < NV; t++) {
            if (a->cookie ? from->vcpu[t] == a->cookie : from->vcpu[t] != 0) {
                id = from->vcpu[t];
                break;
            }
        }
        ck_assert_msg(id, "share from %s: no vCPU thread carries %#" G_GINT64_MODIFIER "x", a->from,
                      (guint64)a->cookie);
        give(vm, a->scope, id);
    }
}

/* Two buffers: messages describe the case before and after. */
static const char *
describe(const Host *h)
{
    static char bufs[2][512];
    static int next;
    char *buf = bufs[next++ % 2];
    GString *s = g_string_new(NULL);

    g_string_append_printf(s, "libvirt=%s;", vpSchedCoreName(h->libvirt));
    for (int i = 0; i < h->n; i++) {
        const Vm *vm = &h->vm[i];
        g_string_append_printf(
            s, " %s:%s/%s/%s/[%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "]",
            vm->name, vpCoreschedName(vm->coresched), vm->group ? vm->group : "-",
            vm->emulator_own ? "own" : "hk", (guint64)vm->vcpu[0], (guint64)vm->vcpu[1],
            (guint64)vm->other[0]);
    }
    g_strlcpy(buf, s->str, sizeof(bufs[0]));
    g_string_free(s, TRUE);
    return buf;
}

static bool
wantsCookie(const Vm *vm)
{
    return vm->coresched != VP_CORESCHED_OFF;
}

static bool
sharedGroup(const Vm *a, const Vm *b)
{
    return a->coresched == VP_CORESCHED_GROUP && b->coresched == VP_CORESCHED_GROUP && a->group &&
           b->group && strcmp(a->group, b->group) == 0;
}

static bool
touchesScope(const Host *h, const Vm *vm)
{
    return vm->emulator_own || h->libvirt == VP_SCHED_CORE_EMULATOR ||
           h->libvirt == VP_SCHED_CORE_FULL;
}

/* A cookie that its set carries whole and alone must be kept: the set of a cookied VM, as
 * far as this property goes, is its trust group when both say coresched=group, else the VM
 * itself. */
static bool
keepable(const Host *h, int i)
{
    const Vm *vm = &h->vm[i];

    if (!wantsCookie(vm) || !vm->vcpu[0] || vm->vcpu[0] != vm->vcpu[1])
        return false;
    for (int j = 0; j < h->n; j++) {
        const Vm *o = &h->vm[j];
        bool carries = false, whole = true;

        for (int t = 0; t < NV; t++) {
            carries |= o->vcpu[t] == vm->vcpu[0];
            whole &= o->vcpu[t] == vm->vcpu[0];
        }
        if (j == i)
            continue;
        if (sharedGroup(vm, o) ? !whole : carries)
            return false;
    }
    return true;
}

static void
checkCase(Host *h)
{
    vpCookieDomain doms[NDOM];
    vpCookieEnv env = {true, h->libvirt};
    Host before = *h;
    g_autoptr(vpCookiePlan) plan = NULL;
    g_autoptr(vpCookiePlan) again = NULL;

    observe(h, doms);
    plan = vpCookiePlanDecide(doms, h->n, &env);
    apply(h, plan);
    observe(h, doms);
    again = vpCookiePlanDecide(doms, h->n, &env);
    ck_assert_msg(again->actions->len == 0, "%s: %u actions left after applying", describe(&before),
                  again->actions->len);
    for (int i = 0; i < h->n; i++) {
        const vpCookieExpect *e = &g_array_index(again->expect, vpCookieExpect, i);
        ck_assert_msg(e->state == VP_COOKIE_STATE_OK, "%s: %s is %s after applying",
                      describe(&before), e->name, vpCookieStateName(e->state));
    }

    for (int i = 0; i < h->n; i++) {
        const Vm *vm = &h->vm[i];
        const Vm *was = &before.vm[i];

        if (wantsCookie(vm)) {
            ck_assert_msg(vm->vcpu[0] && vm->vcpu[0] == vm->vcpu[1],
                          "%s -> %s: %s has no cookie on every vCPU thread", describe(&before),
                          describe(h), vm->name);
            ck_assert_msg(!touchesScope(h, vm) || vm->other[0] == vm->vcpu[0],
                          "%s -> %s: %s's emulator thread lacks the VM's cookie", describe(&before),
                          describe(h), vm->name);
        } else if (!vm->group || !was->vcpu[0]) {
            ck_assert_msg(memcmp(vm, was, sizeof(*vm)) == 0, "%s -> %s: coresched=off %s touched",
                          describe(&before), describe(h), vm->name);
        }
        if (keepable(&before, i))
            ck_assert_msg(vm->vcpu[0] == was->vcpu[0], "%s -> %s: %s lost a cookie it could keep",
                          describe(&before), describe(h), vm->name);
        for (int j = i + 1; j < h->n; j++) {
            const Vm *o = &h->vm[j];
            bool same = vm->vcpu[0] == o->vcpu[0];

            if (sharedGroup(vm, o))
                ck_assert_msg(same, "%s -> %s: group members %s and %s differ", describe(&before),
                              describe(h), vm->name, o->name);
            else if ((wantsCookie(vm) || wantsCookie(o)) && vm->vcpu[0])
                ck_assert_msg(!same, "%s -> %s: untrusted %s and %s share a cookie",
                              describe(&before), describe(h), vm->name, o->name);
        }
    }
}

static const vpCoresched schedValues[] = {VP_CORESCHED_VM, VP_CORESCHED_GROUP, VP_CORESCHED_OFF};
static const char *const groupValues[] = {NULL, "a"};
static const char *const names[NDOM] = {"vm-a", "vm-b", "vm-c"};

/* One VM's share of a case, numbered: coresched x group x emulator x init x others. */
#define PER_VM (3 * 2 * 2 * INIT_LAST * 2)

static void
setVm(Host *h, int i, int code)
{
    Vm *vm = &h->vm[i];
    Init init;
    bool othersToo;

    memset(vm, 0, sizeof(*vm));
    vm->name = names[i];
    vm->coresched = schedValues[code % 3];
    code /= 3;
    vm->group = groupValues[code % 2];
    code /= 2;
    vm->emulator_own = code % 2;
    code /= 2;
    init = code % INIT_LAST;
    code /= INIT_LAST;
    othersToo = code % 2;
    switch (init) {
    case INIT_NONE:
        break;
    case INIT_OWN:
        vm->vcpu[0] = vm->vcpu[1] = 100 + i;
        break;
    case INIT_X:
        vm->vcpu[0] = vm->vcpu[1] = COOKIE_X;
        break;
    case INIT_PARTIAL:
        vm->vcpu[0] = COOKIE_X;
        break;
    case INIT_LAST:
        break;
    }
    if (othersToo)
        vm->other[0] = vm->vcpu[0];
}

static const vpSchedCore libvirtValues[] = {VP_SCHED_CORE_VCPUS, VP_SCHED_CORE_FULL};

START_TEST(test_exhaustive_two_vms)
{
    unsigned cases = 0;

    for (gsize l = 0; l < G_N_ELEMENTS(libvirtValues); l++) {
        for (int a = 0; a < PER_VM; a++) {
            for (int b = 0; b < PER_VM; b++) {
                Host h = {.n = 2, .libvirt = libvirtValues[l], .next = 1000};

                setVm(&h, 0, a);
                setVm(&h, 1, b);
                checkCase(&h);
                cases++;
            }
        }
    }
    ck_assert_uint_eq(cases, 2 * PER_VM * PER_VM);
}
END_TEST

/* Three VMs: every policy and group combination, with the cookies that make sets compete. */
START_TEST(test_exhaustive_three_vms)
{
    static const Init inits[] = {INIT_NONE, INIT_OWN, INIT_X, INIT_PARTIAL};
    unsigned cases = 0;

    for (int p = 0; p < 6 * 6 * 6; p++) {
        for (int c = 0; c < 4 * 4 * 4; c++) {
            Host h = {.n = 3, .libvirt = VP_SCHED_CORE_VCPUS, .next = 1000};
            int pp = p, cc = c;

            for (int i = 0; i < 3; i++) {
                /* coresched and group from p; init from c; emulator on housekeeping */
                int code = (pp % 6) + 6 * 2 * (int)inits[cc % 4];
                setVm(&h, i, code);
                pp /= 6;
                cc /= 4;
            }
            checkCase(&h);
            cases++;
        }
    }
    ck_assert_uint_eq(cases, 216 * 64);
}
END_TEST

/* ---- the decision's own answers ------------------------------------------------------------ */

static vpCookieDomain
dom(const char *name, vpCoresched coresched, const char *group, uint64_t vcpus)
{
    return (vpCookieDomain){
        .name = name,
        .coresched = coresched,
        .group = group,
        .seen = VP_COOKIE_SEEN,
        .vcpus = vcpus,
        .vcpus_all = vcpus != 0,
    };
}

START_TEST(test_unsupported_kernel_acts_on_nothing)
{
    vpCookieDomain doms[] = {dom("a", VP_CORESCHED_VM, NULL, 0),
                             dom("b", VP_CORESCHED_GROUP, "g", 0),
                             dom("c", VP_CORESCHED_OFF, NULL, 0)};
    vpCookieEnv env = {false, VP_SCHED_CORE_NONE};
    g_autoptr(vpCookiePlan) plan = vpCookiePlanDecide(doms, 3, &env);

    ck_assert_uint_eq(plan->actions->len, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_str_eq(vpCookieStateName(g_array_index(plan->expect, vpCookieExpect, i).state),
                         "unsupported");
    /* what it would want is still said */
    ck_assert_str_eq(g_array_index(plan->expect, vpCookieExpect, 1).set, "group:g");
    ck_assert_ptr_null(g_array_index(plan->expect, vpCookieExpect, 2).set);
}
END_TEST

START_TEST(test_pending_waits_for_its_set_only)
{
    vpCookieDomain doms[] = {
        dom("a", VP_CORESCHED_GROUP, "g", 0), dom("b", VP_CORESCHED_GROUP, "g", 0),
        dom("c", VP_CORESCHED_VM, NULL, 0), dom("d", VP_CORESCHED_VM, NULL, 0)};
    vpCookieEnv env = {true, VP_SCHED_CORE_NONE};
    g_autoptr(vpCookiePlan) plan = NULL;

    doms[1].seen = VP_COOKIE_PENDING;
    doms[3].seen = VP_COOKIE_NO_THREADS;
    plan = vpCookiePlanDecide(doms, 4, &env);
    ck_assert_uint_eq(plan->actions->len, 1);
    ck_assert_str_eq(g_array_index(plan->actions, vpCookieAction, 0).domain, "c");
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 0).state, VP_COOKIE_STATE_PENDING);
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 1).state, VP_COOKIE_STATE_PENDING);
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 3).state,
                     VP_COOKIE_STATE_NO_THREADS);
}
END_TEST

/* libvirt's sched_core=vcpus gave each VM its own: a VM keeps its own, a trust group merges
 * onto one member's, and the hot-plugged vCPU of a VM gets the VM's cookie shared. */
START_TEST(test_libvirt_cookies_kept_and_merged)
{
    vpCookieDomain doms[] = {
        dom("a", VP_CORESCHED_VM, NULL, 11), dom("b", VP_CORESCHED_GROUP, "g", 12),
        dom("c", VP_CORESCHED_GROUP, "g", 13), dom("d", VP_CORESCHED_VM, NULL, 14)};
    vpCookieEnv env = {true, VP_SCHED_CORE_VCPUS};
    g_autoptr(vpCookiePlan) plan = NULL;
    const vpCookieAction *a;

    doms[3].vcpus_all = false; /* a vCPU hot-plugged without the cookie */
    plan = vpCookiePlanDecide(doms, 4, &env);
    ck_assert_uint_eq(plan->actions->len, 2);
    a = &g_array_index(plan->actions, vpCookieAction, 0);
    ck_assert_int_eq(a->op, VP_COOKIE_SHARE);
    ck_assert_str_eq(a->domain, "c");
    ck_assert_str_eq(a->from, "b");
    ck_assert_uint_eq(a->cookie, 12);
    ck_assert_int_eq(a->scope, VP_COOKIE_SCOPE_VCPUS);
    a = &g_array_index(plan->actions, vpCookieAction, 1);
    ck_assert_str_eq(a->domain, "d");
    ck_assert_str_eq(a->from, "d");
    ck_assert_uint_eq(a->cookie, 14);
    ck_assert(g_array_index(plan->expect, vpCookieExpect, 0).kept);
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 0).state, VP_COOKIE_STATE_OK);
}
END_TEST

/* Emulator threads on the VM's own PUs take its cookie; on housekeeping CPUs they do not,
 * unless libvirt already cookies them. */
START_TEST(test_scope_follows_emulator)
{
    vpCookieDomain doms[] = {dom("a", VP_CORESCHED_VM, NULL, 0),
                             dom("b", VP_CORESCHED_VM, NULL, 0)};
    vpCookieEnv env = {true, VP_SCHED_CORE_NONE};
    g_autoptr(vpCookiePlan) plan = NULL;
    g_autoptr(vpCookiePlan) full = NULL;

    doms[0].emulator_own = true;
    plan = vpCookiePlanDecide(doms, 2, &env);
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 0).scope, VP_COOKIE_SCOPE_PROCESS);
    ck_assert_int_eq(g_array_index(plan->expect, vpCookieExpect, 1).scope, VP_COOKIE_SCOPE_VCPUS);
    env.libvirt = VP_SCHED_CORE_EMULATOR;
    full = vpCookiePlanDecide(doms, 2, &env);
    ck_assert_int_eq(g_array_index(full->expect, vpCookieExpect, 1).scope, VP_COOKIE_SCOPE_PROCESS);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("cookieplan");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_schedcore_values);
    tcase_add_test(tc, test_schedcore_not_fooled);
    tcase_add_test(tc, test_schedcore_errors);
    tcase_add_test(tc, test_unsupported_kernel_acts_on_nothing);
    tcase_add_test(tc, test_pending_waits_for_its_set_only);
    tcase_add_test(tc, test_libvirt_cookies_kept_and_merged);
    tcase_add_test(tc, test_scope_follows_emulator);
    tcase_add_test(tc, test_exhaustive_two_vms);
    tcase_add_test(tc, test_exhaustive_three_vms);
    suite_add_tcase(s, tc);
    return s;
}
