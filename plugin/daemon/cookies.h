/*
 * Core-scheduling cookies for the running domains vcpuplaced manages: whenever a domain is
 * placed, released or changes shape, a pass on the main loop reads every QEMU thread's
 * cookie, asks core/place/cookieplan.h what each domain must carry, sets it with prctl
 * (host/coresched.h), reads it back, and keeps the per-thread result for `vcpuplace
 * status`. A kernel that cannot set cookies is reported once in the log and per thread in
 * the status; placement goes on regardless.
 */
#pragma once

#include "daemon/config.h"
#include "daemon/manager.h"
#include "libvirt/connection.h"

#include <json-glib/json-glib.h>

typedef struct _vpCookies vpCookies;

/* Probes the kernel (once). lock is the state lock (daemon.h), held whenever the main
 * loop runs this module and let go around libvirt calls; cfg, mgr and vc are borrowed. */
vpCookies *vpCookiesNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpVirConn *vc);
void vpCookiesFree(vpCookies *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCookies, vpCookiesFree)

/* After a configuration reload. */
void vpCookiesSetConfig(vpCookies *c, const vpConfig *cfg);

/* Something may have changed (a domain placed or released, a vCPU thread appeared): a
 * pass runs soon. */
void vpCookiesKick(vpCookies *c);
/* TRUE while a pass or a retry is due (tests wait for FALSE). */
gboolean vpCookiesBusy(const vpCookies *c);

/* {kernel, kernel_reason, qemu_conf, libvirt_sched_core} for the status reply. */
JsonNode *vpCookiesSummaryJson(const vpCookies *c);
/* A domain's cookie state as of the last pass (ok, none, pending, mismatch, failed, or the
 * kernel's reason there are none); NULL when no pass has seen the domain yet. */
const char *vpCookiesDomainState(const vpCookies *c, const char *name);
/* A domain's cookies as of the last pass: {state, reason, set, scope, cookie, kept,
 * threads: [{tid, name, vcpu, expected, expected_id, actual, state}]}; NULL when no pass
 * has seen the domain yet. */
JsonNode *vpCookiesDomainJson(const vpCookies *c, const char *name);
/* Adds the summary to a status reply and each domain's cookies to its entry. */
void vpCookiesAddStatus(const vpCookies *c, JsonObject *reply, JsonArray *domains);
