#include "core/model/trust.h"

#include <string.h>

bool
vpTrustGroupCookie(const vpPolicy *policy)
{
    return policy->group && policy->coresched != VP_CORESCHED_VM;
}

vpTrust
vpTrustOf(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb)
{
    if (strcmp(a, b) == 0)
        return VP_TRUST_SELF;
    if (vpTrustGroupCookie(pa) && pb->group && strcmp(pa->group, pb->group) == 0 &&
        pa->coresched == pb->coresched)
        return VP_TRUST_GROUP;
    if (pb->smt == VP_SMT_SHARE && pb->cpus != VP_CPUS_SHARED)
        return VP_TRUST_SHARE;
    return VP_TRUST_STRANGER;
}

bool
vpTrustMutual(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb)
{
    vpTrust t = vpTrustOf(a, pa, b, pb);

    return t <= VP_TRUST_GROUP ||
           (t == VP_TRUST_SHARE && pa->smt == VP_SMT_SHARE && pa->cpus != VP_CPUS_SHARED);
}

bool
vpTrustOwnCookie(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb)
{
    return vpTrustOf(a, pa, b, pb) <= VP_TRUST_GROUP;
}

vpTrust
vpTrustHolder(const vpLedger *ledger, const vpPlan *plan, const char *domain)
{
    const vpPlan *other = vpLedgerLookup(ledger, domain);

    if (!other)
        return VP_TRUST_STRANGER;
    return vpTrustOf(plan->domain, &plan->policy, other->domain, &other->policy);
}
