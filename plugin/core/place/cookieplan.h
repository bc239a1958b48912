/*
 * Which core-scheduling cookie each running domain must carry, and the prctl steps that get
 * it there: a pure function of the domains (policy, trust group, where their emulator runs,
 * the cookies their threads carry now), whether the kernel can do cookies at all, and
 * libvirt's own qemu.conf sched_core. The daemon observes, asks, acts, observes again.
 *
 * Rules (issue 4, DESIGN.md "Core scheduling"):
 * - coresched=vm: a cookie of the domain's own; coresched=group with a trust group: one
 *   cookie for every such member of that group; coresched=group without a group is vm.
 * - coresched=off: vcpuplace gives no cookie. When the domain carries one anyway (libvirt's
 *   sched_core gives every QEMU its own) and has a trust group, the group's off members
 *   share one, because the placer lets them share siblings and distinct cookies would force
 *   each other idle there.
 * - A cookie already carried is kept when only its own set of domains carries it (libvirt's
 *   per-VM cookie, or one given earlier); a cookie carried by domains of two sets belongs to
 *   the set with more holders and the others get fresh ones: two untrusted VMs never end up
 *   with one cookie, and a VM that asks for a cookie never ends up without one.
 * - Scope: every thread of the QEMU process when its emulator threads run only on PUs the
 *   domain holds (no foreign task shares those cores, so protecting them costs nothing) or
 *   when libvirt already cookies the emulator (sched_core=emulator|full); otherwise the vCPU
 *   threads only, so that emulator threads on shared housekeeping CPUs do not force the
 *   host's tasks and other VMs' emulators idle there.
 */
#pragma once

#include "core/model/policy.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* libvirt's qemu.conf sched_core (libvirt >= 8.9). */
typedef enum {
    VP_SCHED_CORE_NONE = 0, /* libvirt sets no cookie (its default) */
    VP_SCHED_CORE_VCPUS,    /* one cookie per VM on its vCPU threads */
    VP_SCHED_CORE_EMULATOR, /* one cookie per VM on every thread of QEMU */
    VP_SCHED_CORE_FULL,     /* ... and on its helper processes */
    VP_SCHED_CORE_UNKNOWN,  /* qemu.conf could not be read: only observed cookies count */
    VP_SCHED_CORE_LAST
} vpSchedCore;

/* "none", "vcpus", "emulator", "full", "unknown". */
const char *vpSchedCoreName(vpSchedCore mode);

/* The sched_core setting in the text of a libvirt qemu.conf (virConf syntax: `key = "value"`
 * lines, # comments, lists in brackets possibly spanning lines). Absent: NONE, libvirt's
 * default. A value libvirt would refuse is an error naming path, line and value. */
bool vpSchedCoreParse(const char *text, gsize len, const char *path, vpSchedCore *mode,
                      GError **error);

/* A cookie id as the kernel's GET gives it; 0 is no cookie. */
#define VP_COOKIE_MIXED UINT64_MAX /* threads carry two different non-zero ids */

typedef enum {
    VP_COOKIE_SEEN = 0,   /* the ids below are what the kernel answered */
    VP_COOKIE_PENDING,    /* ids read 0 because the kernel's random pool is not ready */
    VP_COOKIE_NO_THREADS, /* no QEMU threads to look at (driver without processes, gone) */
} vpCookieSeen;

/* What one domain is and carries. */
typedef struct {
    const char *name;
    vpCoresched coresched;
    const char *group; /* NULL: alone */
    bool emulator_own; /* its emulator threads run only on PUs it holds */
    vpCookieSeen seen;
    uint64_t vcpus;  /* the one non-zero id among its vCPU threads, 0 or VP_COOKIE_MIXED */
    bool vcpus_all;  /* ... carried by every vCPU thread */
    uint64_t others; /* the same for its other threads (emulator, I/O) */
    bool others_all;
} vpCookieDomain;

typedef struct {
    bool kernel_ok; /* the kernel can set cookies (SCHED_CORE and SMT) */
    vpSchedCore libvirt;
} vpCookieEnv;

typedef enum {
    VP_COOKIE_SCOPE_VCPUS = 0, /* each vCPU thread */
    VP_COOKIE_SCOPE_PROCESS,   /* every thread of the QEMU process */
} vpCookieScope;

typedef enum {
    VP_COOKIE_STATE_OK = 0,      /* carries what it should (or needs nothing) */
    VP_COOKIE_STATE_APPLY,       /* the actions below get it there */
    VP_COOKIE_STATE_PENDING,     /* cannot tell yet: ids read 0 (random pool) */
    VP_COOKIE_STATE_UNSUPPORTED, /* the kernel cannot set cookies */
    VP_COOKIE_STATE_NO_THREADS,  /* nothing to look at */
    VP_COOKIE_STATE_LAST
} vpCookieState;

/* What one domain should carry, in input order. */
typedef struct {
    const char *name; /* borrowed from the input */
    char *set;        /* "vm:NAME", "group:G", "off-group:G"; NULL: no cookie wanted */
    vpCookieScope scope;
    vpCookieState state;
    uint64_t cookie; /* the set's cookie when it exists already, else 0 */
    bool kept;       /* that cookie was there before vcpuplace acted (libvirt's or earlier) */
} vpCookieExpect;

typedef enum {
    VP_COOKIE_CREATE = 0, /* a fresh cookie for domain's scope */
    VP_COOKIE_SHARE,      /* copy from's cookie (id cookie, or from's fresh one when 0) */
} vpCookieOp;

typedef struct {
    vpCookieOp op;
    const char *domain; /* borrowed */
    vpCookieScope scope;
    const char *from; /* SHARE: a domain whose vCPU threads carry the cookie */
    uint64_t cookie;  /* SHARE: its id; 0 when from got it by a CREATE just before */
} vpCookieAction;

typedef struct {
    GArray *expect;  /* vpCookieExpect, one per input domain */
    GArray *actions; /* vpCookieAction, to be run in order */
} vpCookiePlan;

/* Decides for doms[0..n): names must be unique. */
vpCookiePlan *vpCookiePlanDecide(const vpCookieDomain *doms, gsize n, const vpCookieEnv *env);
void vpCookiePlanFree(vpCookiePlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCookiePlan, vpCookiePlanFree)

/* "ok", "apply", "pending", "unsupported", "no-threads". */
const char *vpCookieStateName(vpCookieState state);
/* "vcpus", "process". */
const char *vpCookieScopeName(vpCookieScope scope);
