/*
 * Who holds which PU. One entry per PU at most: a vCPU of a domain, a domain's emulator,
 * or a sibling reserved idle for a domain. Domains carry their trust group so the placer
 * can tell who may share a core. The ledger is what vcpuplace reserved; libvirt is the
 * truth for what is applied, and the daemon reconciles the two.
 */
#pragma once

#include "core/model/plan.h"
#include "core/model/request.h"
#include "core/model/topology.h"

#include <stdbool.h>

typedef enum {
    VP_OWN_NONE = 0,
    VP_OWN_VCPU,
    VP_OWN_EMULATOR,
    VP_OWN_RESERVED,
    VP_OWN_PINNED, /* named by the domain's own multi-CPU pins; other domains' own pins may
                    * name it too (vpLedgerNOwners() counts them) */
    VP_OWN_SHARED, /* in a cpus=shared domain's cores: held with other shared domains, each
                    * for its share (vpLedgerSharedLoad()), never with anyone else */
    VP_OWN_LAST
} vpOwnKind;

typedef struct {
    const char *domain; /* NULL when free */
    vpOwnKind kind;
    int vcpu; /* vCPU index for VP_OWN_VCPU, else -1 */
} vpOwner;

typedef struct _vpLedger vpLedger;

vpLedger *vpLedgerNew(const vpTopology *topo);
void vpLedgerFree(vpLedger *ledger);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpLedger, vpLedgerFree)

/* Records a plan (the ledger keeps a copy). Fails, changing nothing, when the domain is
 * already present or any PU it needs is held by someone else; a shared plan's CPUs may be
 * held by other shared plans as long as no CPU carries more vCPUs than the ratio of any
 * shared domain on it (VP_ERROR_REFUSED with the figures). */
bool vpLedgerAdd(vpLedger *ledger, const vpPlan *plan, GError **error);
/* Frees everything the domain holds; false when it held nothing. */
bool vpLedgerRemove(vpLedger *ledger, const char *domain);
/* Replaces a domain's plan atomically (rebalance moves, reconcile). */
bool vpLedgerReplace(vpLedger *ledger, const vpPlan *plan, GError **error);

const vpPlan *vpLedgerLookup(const vpLedger *ledger, const char *domain);
/* Owner of logical PU index pu (the first, when smt=share domains time-share it). */
vpOwner vpLedgerOwner(const vpLedger *ledger, int pu);
/* How many domains' vCPUs hold pu: 0 free, 1 usually, more when overcommitted share
 * domains time-share it; vpLedgerOwnerAt() names each (0 is vpLedgerOwner()). */
unsigned vpLedgerNOwners(const vpLedger *ledger, int pu);
vpOwner vpLedgerOwnerAt(const vpLedger *ledger, int pu, unsigned i);
bool vpLedgerPUFree(const vpLedger *ledger, int pu);
/* vCPUs of shared domains on logical PU pu, as a fraction of it: the sum of
 * vpPlanSharedLoad() over its holders (0 when no shared domain holds it). */
double vpLedgerSharedLoad(const vpLedger *ledger, int pu);
/* The smallest ratio among the shared domains holding pu (0 when none does). */
double vpLedgerSharedRatio(const vpLedger *ledger, int pu);
/* Domain names, sorted (caller frees the array, not the strings). */
GPtrArray *vpLedgerDomains(const vpLedger *ledger);
unsigned vpLedgerNDomains(const vpLedger *ledger);
const vpTopology *vpLedgerTopology(const vpLedger *ledger);
/* A number that changes with every change of what the ledger holds (an add, a remove, a
 * replace, a memory reconcile; not a failed one), unique among the process's ledgers: what
 * is computed from a ledger is still true while its number is the same. */
guint64 vpLedgerGeneration(const vpLedger *ledger);
/* Checks the no-double-booking invariant from scratch (tests, after reconcile). */
bool vpLedgerCheck(const vpLedger *ledger, GError **error);

/* A ledger on topo (the same machine, possibly other usable sets) holding what ledger
 * holds, domain by domain in name order as a save and load would; fails with
 * vpLedgerAdd()'s error when a plan does not fit topo. */
vpLedger *vpLedgerCopy(const vpLedger *ledger, const vpTopology *topo, GError **error);

JsonNode *vpLedgerToJson(const vpLedger *ledger);
vpLedger *vpLedgerFromJson(const vpTopology *topo, JsonNode *node, GError **error);
/* The text of a ledger file (pretty JSON and a newline); host/ledgerfile.h writes it. */
char *vpLedgerToText(const vpLedger *ledger);
/* Copies of the plans in name order, as a file holds them (free with g_ptr_array_unref()):
 * taken while the ledger may not change, turned into text after (vpLedgerPlansToText()),
 * so that a large ledger's JSON is not written under the lock its changes take. */
GPtrArray *vpLedgerPlansCopy(const vpLedger *ledger);
/* The text of a ledger file holding plans (vpLedgerPlansCopy()) on topo: what
 * vpLedgerToText() gives for the ledger they were copied from. */
char *vpLedgerPlansToText(const vpTopology *topo, const GPtrArray *plans);
/* Parses len bytes of a ledger file; name (its path) goes into the messages. Empty, corrupt
 * or truncated text is an error naming it. */
vpLedger *vpLedgerFromText(const vpTopology *topo, const char *text, gsize len, const char *name,
                           GError **error);

const char *vpOwnKindName(vpOwnKind kind);

/* Bytes the ledger's plans hold on Linux node `node` in pages of page_size (0: base pages). */
guint64 vpLedgerNodeMemory(const vpLedger *ledger, unsigned node, guint64 page_size);

/* Corrects what the domain holds per node to libvirt's live XML (live: the request read from
 * it, its nodeset the live binding): <currentMemory> after `virsh setmem`, a <numatune>
 * nodeset changed with `virsh numatune --live`. Each holding is scaled to the live size; a
 * base-page holding outside the live nodeset is spread inside it (over the domain's vCPUs'
 * nodes there, as first touch would, else evenly), since the kernel migrates those pages
 * with cpuset.mems; a huge-page holding stays on its node, since nothing moves a running
 * domain's huge pages, and the text names it. A domain that held nothing gains the live size
 * in its huge page size, spread the same way. Returns what changed ("node 5: 4 GiB -> node
 * 3: 2 GiB ...; huge pages outside the live nodeset stay (...)", caller frees), NULL when the
 * ledger already agreed, the live size is unknown or the domain holds nothing here. */
char *vpLedgerReconcileMemory(vpLedger *ledger, const char *domain, const vpRequest *live);
