/*
 * Policy names, attribute parsing and the daemon's key-file defaults: every value the
 * schema names parses back to itself, and every bad value or key is refused with a
 * message that names it.
 */
#include "core/model/policy.h"

#include "core/model/topology.h"
#include "checkmain.h"

#include <check.h>
#include <string.h>

START_TEST(test_defaults)
{
    vpPolicy p;

    vpPolicyInitDefaults(&p);
    ck_assert_str_eq(vpSmtName(p.smt), "spread");
    ck_assert_ptr_null(p.group);
    ck_assert_str_eq(vpCoreschedName(p.coresched), "vm");
    ck_assert_str_eq(vpLocalityName(p.locality), "auto");
    ck_assert_str_eq(vpEmulatorName(p.emulator), "housekeeping");
    ck_assert_str_eq(vpRebalanceName(p.rebalance), "auto");
    ck_assert_str_eq(vpUnmetName(p.unmet), "refuse");
    vpPolicyClear(&p);
}
END_TEST

/* Each attribute's values, as the schema spells them. */
static const struct {
    const char *field;
    const char *values[8];
} attrs[] = {
    {"smt", {"isolate", "pack", "spread", "share"}},
    {"coresched", {"vm", "group", "off"}},
    {"locality", {"auto", "l3", "numa", "package", "host", "numa:2", "numa:64"}},
    {"emulator", {"housekeeping", "vcpus", "dedicated"}},
    {"rebalance", {"auto", "off"}},
    {"unmet", {"refuse", "degrade"}},
};

static const char *
nameOf(const vpPolicy *p, const char *field)
{
    if (strcmp(field, "smt") == 0)
        return vpSmtName(p->smt);
    if (strcmp(field, "coresched") == 0)
        return vpCoreschedName(p->coresched);
    if (strcmp(field, "locality") == 0)
        return vpLocalityName(p->locality);
    if (strcmp(field, "emulator") == 0)
        return vpEmulatorName(p->emulator);
    if (strcmp(field, "rebalance") == 0)
        return vpRebalanceName(p->rebalance);
    return vpUnmetName(p->unmet);
}

START_TEST(test_every_value_round_trips)
{
    for (size_t a = 0; a < G_N_ELEMENTS(attrs); a++) {
        for (size_t v = 0; attrs[a].values[v]; v++) {
            g_autoptr(GError) err = NULL;
            vpPolicy p;

            vpPolicyInitDefaults(&p);
            ck_assert_msg(vpPolicySetAttr(&p, attrs[a].field, attrs[a].values[v], &err),
                          "%s=%s: %s", attrs[a].field, attrs[a].values[v], err ? err->message : "");
            ck_assert_str_eq(nameOf(&p, attrs[a].field), attrs[a].values[v]);
            vpPolicyClear(&p);
        }
    }
}
END_TEST

START_TEST(test_unknown_value_names_field_and_choices)
{
    g_autoptr(GError) err = NULL;
    vpPolicy p;

    vpPolicyInitDefaults(&p);
    ck_assert(!vpPolicySetAttr(&p, "smt", "foo", &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_str_eq(err->message, "smt='foo' is not one of isolate, pack, spread, share");
    ck_assert_int_eq(p.smt, VP_SMT_SPREAD);
    g_clear_error(&err);

    ck_assert(!vpPolicySetAttr(&p, "cpus", "overcommit", &err));
    ck_assert_str_eq(err->message, "cpus='overcommit' is not one of dedicated, shared");
    ck_assert_int_eq(p.cpus, VP_CPUS_DEDICATED);
    g_clear_error(&err);
    for (const char *const *bad = (const char *const[]){"0", "0.0", "65", "4.", ".5", "-1", "1e2",
                                                        "4.0001", " 4", "4,0", "", NULL};
         *bad; bad++) {
        ck_assert_msg(!vpPolicySetAttr(&p, "ratio", *bad, &err), "%s", *bad);
        ck_assert(g_str_has_prefix(err->message, "ratio='"));
        ck_assert_ptr_nonnull(strstr(err->message, "is not a number above 0 and at most 64"));
        g_clear_error(&err);
    }
    ck_assert_double_eq_tol(p.ratio, VP_RATIO_DEFAULT, 1e-9);
    for (const char *const *good = (const char *const[]){"16", "1.5", "0.5", "64", "4.125", NULL};
         *good; good++) {
        g_autofree char *back = NULL;

        ck_assert_msg(vpPolicySetAttr(&p, "ratio", *good, &err), "%s", *good);
        back = vpRatioFormat(p.ratio);
        ck_assert_str_eq(back, *good);
    }
    ck_assert(vpPolicySetAttr(&p, "cpus", "shared", NULL));
    ck_assert_str_eq(vpCpusName(p.cpus), "shared");

    ck_assert(!vpPolicySetAttr(&p, "unmet", "Refuse", &err));
    ck_assert_str_eq(err->message, "unmet='Refuse' is not one of refuse, degrade");
    g_clear_error(&err);

    ck_assert(!vpPolicySetAttr(&p, "locality", "", &err));
    ck_assert_str_eq(err->message, "locality='' is not one of auto, l3, numa, package, host, "
                                   "numa:N (N from 2 to 64)");
    g_clear_error(&err);

    for (const char *const *bad =
             (const char *const[]){"numa:", "numa:1", "numa:0", "numa:65", "numa:02", "numa:+2",
                                   "numa:2 ", "numa:x", "numa:99999999999999999999", NULL};
         *bad; bad++) {
        g_autofree char *want = g_strdup_printf(
            "locality='%s': N of numa:N must be a whole number from 2 to 64 (the NUMA nodes to "
            "split the VM over)",
            *bad);

        ck_assert_msg(!vpPolicySetAttr(&p, "locality", *bad, &err), "%s accepted", *bad);
        ck_assert_str_eq(err->message, want);
        ck_assert_int_eq(p.locality, VP_LOCALITY_AUTO);
        g_clear_error(&err);
    }
    ck_assert_uint_eq(vpLocalitySplit(VP_LOCALITY_NUMA), 0);
    ck_assert(vpPolicySetAttr(&p, "locality", "numa:3", &err));
    ck_assert_uint_eq(vpLocalitySplit(p.locality), 3);
    vpPolicyClear(&p);
}
END_TEST

/* numa:N cells: whole guest cores, the first cells one guest core larger where N does not
 * divide them (libvirt's unequal <cell>s); none when there are fewer guest cores than cells. */
START_TEST(test_cell_vcpus)
{
    static const struct {
        unsigned nvcpus, threads, cells, sizes[4];
    } cases[] = {
        {4, 0, 2, {2, 2, 0, 0}},    {4, 1, 3, {2, 1, 1, 0}}, {26, 0, 2, {13, 13, 0, 0}},
        {26, 2, 2, {14, 12, 0, 0}}, {8, 2, 3, {4, 2, 2, 0}}, {62, 2, 4, {16, 16, 16, 14}},
        {6, 4, 3, {2, 2, 2, 0}},    {6, 2, 4, {0, 0, 0, 0}}, {3, 1, 4, {0, 0, 0, 0}},
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (unsigned k = 0; k < 4; k++)
            ck_assert_msg(vpLocalityCellVcpus(cases[i].nvcpus, cases[i].threads, cases[i].cells,
                                              k) == cases[i].sizes[k],
                          "case %zu cell %u", i, k);
    }
}
END_TEST

START_TEST(test_unknown_attribute)
{
    g_autoptr(GError) err = NULL;
    vpPolicy p;

    vpPolicyInitDefaults(&p);
    ck_assert(!vpPolicySetAttr(&p, "smt_mode", "isolate", &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    ck_assert_ptr_nonnull(strstr(err->message, "'smt_mode'"));
    vpPolicyClear(&p);
}
END_TEST

START_TEST(test_group_names)
{
    g_autofree char *longest = g_strnfill(64, 'g');
    g_autofree char *too_long = g_strnfill(65, 'g');
    g_autoptr(GError) err = NULL;
    vpPolicy p;

    ck_assert(vpPolicyValidGroup("tenant-a.prod_1"));
    ck_assert(vpPolicyValidGroup(longest));
    ck_assert(!vpPolicyValidGroup(too_long));
    ck_assert(!vpPolicyValidGroup(""));
    ck_assert(!vpPolicyValidGroup(NULL));
    ck_assert(!vpPolicyValidGroup("a b"));
    ck_assert(!vpPolicyValidGroup("a/b"));
    ck_assert(!vpPolicyValidGroup("caf\xc3\xa9"));

    vpPolicyInitDefaults(&p);
    ck_assert(vpPolicySetAttr(&p, "group", "blue", NULL));
    ck_assert_str_eq(p.group, "blue");
    ck_assert(!vpPolicySetAttr(&p, "group", "red team", &err));
    ck_assert_ptr_nonnull(strstr(err->message, "group='red team'"));
    ck_assert_str_eq(p.group, "blue");
    vpPolicyClear(&p);
    ck_assert_ptr_null(p.group);
}
END_TEST

START_TEST(test_copy_is_deep)
{
    vpPolicy a, b;

    vpPolicyInitDefaults(&a);
    vpPolicyInitDefaults(&b);
    ck_assert(vpPolicySetAttr(&a, "group", "blue", NULL));
    ck_assert(vpPolicySetAttr(&a, "smt", "pack", NULL));
    vpPolicyCopy(&b, &a);
    vpPolicyClear(&a);
    ck_assert_str_eq(b.group, "blue");
    ck_assert_int_eq(b.smt, VP_SMT_PACK);
    vpPolicyClear(&b);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("policy");

    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_value_round_trips);
    tcase_add_test(tc, test_unknown_value_names_field_and_choices);
    tcase_add_test(tc, test_cell_vcpus);
    tcase_add_test(tc, test_unknown_attribute);
    tcase_add_test(tc, test_group_names);
    tcase_add_test(tc, test_copy_is_deep);
    suite_add_tcase(s, tc);
    return s;
}
