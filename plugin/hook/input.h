/*
 * vcpuplace-hook's inputs, each read and checked here: libvirt's arguments, the three
 * [daemon] keys of vcpuplaced.conf the hook uses, and the domain XML on stdin. No I/O
 * beyond reading them, so the fuzz tier drives the same code the hook runs.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#define VP_HOOK_TIMEOUT_DEFAULT_MS 500

/* What one run of the hook asks of the daemon. */
typedef struct {
    const char *domain;  /* argv[1], borrowed */
    const char *request; /* protocol operation: reserve, started, release, reconnect, rewrite */
    gboolean wants_xml;  /* the operation carries the domain XML from stdin */
    gboolean is_start;   /* reserve: refused or, failing, decided by hook_failure */
    gboolean rewrites;   /* restore, migrate begin: the reply may carry XML for stdout, which
                          * libvirt then uses; never refuses, whatever fails */
} vpHookCall;

/* libvirt's `NAME OP SUBOP EXTRA` -> call. FALSE when vcpuplace has nothing to do with it
 * (the hook then exits 0); *why is set when that deserves a line on stderr. */
gboolean vpHookParseArgs(int argc, char **argv, vpHookCall *call, char **why);

typedef struct {
    char *socket;
    gboolean fail_closed;
    int timeout_ms;
} vpHookConfig;

/* Reads path (a missing file means defaults) and the VCPUPLACE_HOOK_FAILURE override.
 * Never fails: the hook reads only its own keys and tolerates the rest, since validating
 * the whole file is the daemon's job and a hook that failed on it would block every
 * start. *warning is set when the file exists but cannot be read. */
void vpHookConfigLoad(vpHookConfig *cfg, const char *path, char **warning);
void vpHookConfigClear(vpHookConfig *cfg);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpHookConfig, vpHookConfigClear)

/* The domain XML from fd: at most limit bytes, no NUL, UTF-8, not empty. NULL with *why
 * otherwise. */
char *vpHookReadXML(int fd, gsize limit, gsize *len, char **why);

/* The request sent to the daemon. */
JsonObject *vpHookRequest(const vpHookCall *call, const char *xml);
