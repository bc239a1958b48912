/*
 * The trust rule: who a holder of a core's sibling is to a domain, and so whether the two
 * may run on one core at once. The placer, compaction, grow, the scorer, the pressure model
 * and the rebalancer all ask here.
 *
 * Siblings run one core-scheduling cookie at a time (DESIGN.md "Core scheduling"), so only
 * holders that carry one cookie, or none, may share a core: a domain with itself, and the
 * domains of one trust group that share its cookie (coresched=group) or carry none
 * (coresched=off, and the same coresched). At coresched=vm each domain has a cookie of its
 * own: its group mates are strangers to it, under load as on an idle host. A domain that
 * asked smt=share accepts any neighbour, which a stranger may use (its siblings come before
 * those of domains that did not ask) but which makes it no one's trust.
 *
 * A cpus=shared domain holds whole cores with other shared domains (the ledger keeps them
 * within the ratio) and carries its cookie like any other: its smt is not read, so it is
 * never VP_TRUST_SHARE; only itself and its cookie group are its own. The shared placer
 * asks vpTrustOwnCookie() which holders of a core those are.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/policy.h"

#include <stdbool.h>

/* From closest to farthest, so that the worst of a core's holders is the largest. */
typedef enum {
    VP_TRUST_NONE,     /* no holder: an idle PU or core */
    VP_TRUST_SELF,     /* the domain itself */
    VP_TRUST_GROUP,    /* a mate of its trust group, one cookie (or none) for both */
    VP_TRUST_SHARE,    /* a stranger that asked smt=share: it accepts any neighbour */
    VP_TRUST_STRANGER, /* anyone else: a cookie of its own */
} vpTrust;

/* Whether the domains of policy's trust group share one cookie (or none), so that they
 * may share cores: a group, and coresched=group or off. */
bool vpTrustGroupCookie(const vpPolicy *policy);

/* Who domain b (its policy pb) is to domain a (its policy pa): never VP_TRUST_NONE. */
vpTrust vpTrustOf(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb);

/* Whether a and b may run on siblings of one core, as both see it: one domain, one cookie
 * group, or two domains that asked smt=share. */
bool vpTrustMutual(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb);

/* Whether b runs under a's cookie (or both under none): itself, or its cookie group. */
bool vpTrustOwnCookie(const char *a, const vpPolicy *pa, const char *b, const vpPolicy *pb);

/* Who ledger's holder domain is to plan's domain: vpTrustOf with the policy the ledger
 * records for it (VP_TRUST_STRANGER when it records none). */
vpTrust vpTrustHolder(const vpLedger *ledger, const vpPlan *plan, const char *domain);
