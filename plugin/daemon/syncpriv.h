/*
 * The sync's memory half (syncmem.c), for sync.c: where libvirt binds a running domain's
 * memory against where vcpuplace put its vCPUs, made to agree one way or the other.
 */
#pragma once

#include "daemon/jobs.h"
#include "daemon/manager.h"

#include <libvirt/libvirt.h>

/* The ledger's memory of the domain against the memory it runs with now: `virsh setmem` and
 * `virsh numatune --live` change only the live XML, and send no event of their own, so every
 * sync looks. live is the request from the live XML when the sync already read it (NULL: it
 * is read here, as job's); req the domain's request (its placement). TRUE when the domain
 * was placed anew (its vCPUs following libvirt's nodeset: placement='auto', or a live
 * nodeset change) and needs pinning; FALSE too once the job is no longer current. */
bool vpSyncReconcileMemory(vpManager *mgr, vpJob *job, virDomainPtr dom, vpRequest *live,
                           vpRequest *req);
