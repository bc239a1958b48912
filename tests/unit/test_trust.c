/*
 * The trust rule (core/model/trust.h): who a holder is to a domain for every pairing of
 * smt, trust group and coresched that decides it, and that the answer both sides give
 * agrees with whether they may share a core.
 */
#include "core/model/trust.h"

#include "checkmain.h"
#include "rebalfix.h"

#include <check.h>

static vpPolicy
policyOf(const char *smt, const char *group, const char *coresched)
{
    vpPolicy p;

    vpPolicyInitDefaults(&p);
    ck_assert(vpPolicySetAttr(&p, "smt", smt, NULL));
    if (group)
        ck_assert(vpPolicySetAttr(&p, "group", group, NULL));
    ck_assert(vpPolicySetAttr(&p, "coresched", coresched, NULL));
    return p;
}

static const struct {
    const char *why;
    const char *a_smt, *a_group, *a_coresched;
    const char *b_smt, *b_group, *b_coresched;
    vpTrust b_to_a;
    bool mutual;
} pairs[] = {
    {"one group cookie", "spread", "tg", "group", "pack", "tg", "group", VP_TRUST_GROUP, true},
    {"one group, no cookie", "spread", "tg", "off", "spread", "tg", "off", VP_TRUST_GROUP, true},
    {"group mates at coresched=vm carry a cookie each", "spread", "tg", "vm", "spread", "tg", "vm",
     VP_TRUST_STRANGER, false},
    {"a group cookie and no cookie", "spread", "tg", "group", "spread", "tg", "off",
     VP_TRUST_STRANGER, false},
    {"two groups", "spread", "tg", "group", "spread", "other", "group", VP_TRUST_STRANGER, false},
    {"no group", "spread", NULL, "group", "spread", NULL, "group", VP_TRUST_STRANGER, false},
    {"a share holder takes any neighbour", "spread", NULL, "vm", "share", NULL, "vm",
     VP_TRUST_SHARE, false},
    {"two share domains take each other", "share", NULL, "vm", "share", NULL, "vm", VP_TRUST_SHARE,
     true},
    {"a share holder of one's cookie group is a mate", "spread", "tg", "group", "share", "tg",
     "group", VP_TRUST_GROUP, true},
};

START_TEST(test_pairs)
{
    vpPolicy a = policyOf(pairs[_i].a_smt, pairs[_i].a_group, pairs[_i].a_coresched);
    vpPolicy b = policyOf(pairs[_i].b_smt, pairs[_i].b_group, pairs[_i].b_coresched);

    ck_assert_msg(vpTrustOf("a", &a, "b", &b) == pairs[_i].b_to_a, "%s: %d", pairs[_i].why,
                  vpTrustOf("a", &a, "b", &b));
    ck_assert_msg(vpTrustMutual("a", &a, "b", &b) == pairs[_i].mutual, "%s", pairs[_i].why);
    ck_assert_msg(vpTrustMutual("b", &b, "a", &a) == pairs[_i].mutual, "%s (b's view)",
                  pairs[_i].why);
    vpPolicyClear(&a);
    vpPolicyClear(&b);
}
END_TEST

/* A cpus=shared holder carries its cookie: smt=share does not make it anyone's VP_TRUST_SHARE,
 * its cookie group mates are its own cookie, and a stranger's smt=share domain is not. */
START_TEST(test_shared_holders)
{
    vpPolicy a = policyOf("share", "g", "group");
    vpPolicy mate = policyOf("spread", "g", "group");
    vpPolicy other = policyOf("share", NULL, "vm");

    a.cpus = mate.cpus = VP_CPUS_SHARED;
    ck_assert_int_eq(vpTrustOf("b", &other, "a", &a), VP_TRUST_STRANGER);
    ck_assert(!vpTrustMutual("a", &a, "b", &other));
    ck_assert(vpTrustOwnCookie("a", &a, "m", &mate));
    ck_assert(vpTrustOwnCookie("a", &a, "a", &a));
    ck_assert(!vpTrustOwnCookie("a", &a, "b", &other));
    other.cpus = VP_CPUS_SHARED;
    ck_assert(!vpTrustOwnCookie("b", &other, "a", &a));
    vpPolicyClear(&a);
    vpPolicyClear(&mate);
    vpPolicyClear(&other);
}
END_TEST

/* A domain is itself whatever its policy: a stranger's smt or coresched changes nothing. */
START_TEST(test_self)
{
    vpPolicy p = policyOf("isolate", "tg", "vm");

    ck_assert_int_eq(vpTrustOf("a", &p, "a", &p), VP_TRUST_SELF);
    ck_assert(vpTrustMutual("a", &p, "a", &p));
    ck_assert(!vpTrustGroupCookie(&p));
    vpPolicyClear(&p);
}
END_TEST

/* The ledger's holders as the rebalancer and the pressure model ask about them. */
START_TEST(test_holder)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);

    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", (int[]){0}, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "tg", (int[]){4}, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "c", "spread", "tg", (int[]){1}, 1, NULL, 0));

    const vpPlan *a = vpLedgerLookup(ledger, "a");
    ck_assert_int_eq(vpTrustHolder(ledger, a, "a"), VP_TRUST_SELF);
    ck_assert_int_eq(vpTrustHolder(ledger, a, "b"), VP_TRUST_GROUP);
    ck_assert_int_eq(vpTrustHolder(ledger, a, "c"), VP_TRUST_STRANGER);
    ck_assert_int_eq(vpTrustHolder(ledger, a, "gone"), VP_TRUST_STRANGER);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("trust");
    TCase *tc = tcase_create("trust");

    tcase_add_test(tc, test_shared_holders);
    tcase_add_loop_test(tc, test_pairs, 0, G_N_ELEMENTS(pairs));
    tcase_add_test(tc, test_self);
    tcase_add_test(tc, test_holder);
    suite_add_tcase(s, tc);
    return s;
}
