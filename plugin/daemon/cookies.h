/*
 * Core-scheduling cookies for the running domains vcpuplaced manages: whenever a domain is
 * placed, released or changes shape, a pass on the main loop reads every QEMU thread's
 * cookie, asks core/cookieplan.h what each domain must carry, sets it with prctl
 * (host/coresched.h), reads it back, and keeps the per-thread result for `vcpuplace
 * status`. A kernel that cannot set cookies is reported once in the log and per thread in
 * the status; placement goes on regardless.
 */
#pragma once

#include "daemon/daemon.h"

#include <json-glib/json-glib.h>

typedef struct _vpCookies vpCookies;

/* Probes the kernel (once) and listens to the daemon's domain notifications. */
vpCookies *vpCookiesNew(vpDaemon *d);
void vpCookiesFree(vpCookies *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCookies, vpCookiesFree)

/* Something may have changed (a vCPU thread appeared): a pass runs soon. */
void vpCookiesKick(vpCookies *c);
/* TRUE while a pass or a retry is due (tests wait for FALSE). */
gboolean vpCookiesBusy(const vpCookies *c);

/* {kernel, kernel_reason, qemu_conf, libvirt_sched_core} for the status reply. */
JsonNode *vpCookiesSummaryJson(const vpCookies *c);
/* A domain's cookies as of the last pass: {state, reason, set, scope, cookie, kept,
 * threads: [{tid, name, vcpu, expected, expected_id, actual, state}]}; NULL when no pass
 * has seen the domain yet. */
JsonNode *vpCookiesDomainJson(const vpCookies *c, const char *name);
/* Adds the summary to a status reply and each domain's cookies to its entry. */
void vpCookiesAddStatus(const vpCookies *c, JsonObject *reply, JsonArray *domains);
