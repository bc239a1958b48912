/*
 * vcpuplace-hook's inputs, each read and checked here: libvirt's arguments, the [daemon]
 * keys of vcpuplaced.conf the hook uses (the whole file checked by plugin/conf, as the
 * daemon checks it), and the domain XML on stdin; and the request line made of them. No
 * I/O beyond reading them, so the fuzz tier drives the same code the hook runs.
 *
 * libc, jansson and plugin/conf only: libvirt runs the hook three times per start.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* What one run of the hook asks of the daemon. */
typedef struct {
    const char *domain;  /* argv[1], borrowed */
    const char *request; /* protocol operation: reserve, started, release, reconnect, rewrite */
    bool wants_xml;      /* the operation carries the domain XML from stdin */
    bool is_start;       /* reserve: refused or, failing, decided by hook_failure */
    bool rewrites;       /* restore, migrate begin: the reply may carry XML for stdout, which
                          * libvirt then uses; never refuses, whatever fails */
} vpHookCall;

/* libvirt's `NAME OP SUBOP EXTRA` -> call. false when vcpuplace has nothing to do with it
 * (the hook then exits 0); why (size whylen) is then a line for stderr, or empty. */
bool vpHookParseArgs(int argc, char **argv, vpHookCall *call, char *why, size_t whylen);

typedef struct {
    char *socket;
    bool fail_closed;
    int timeout_ms;
    char **domains; /* [daemon] domains as vpConfManages() takes it; NULL: every domain */
    bool off;       /* [daemon] hook=off: every operation goes on untouched */
    bool report;    /* [daemon] mode=report: the hook refuses nothing either */
    char *bad;      /* why vcpuplaced refuses the file, whose right [daemon] lines these are */
} vpHookConfig;

/* Reads path with the daemon's reader (a missing file means defaults when missing_ok),
 * then the VCPUPLACE_HOOK_FAILURE override. A file the daemon refuses is salvaged
 * (vpConfSalvage(): the [daemon] lines right on their own), its error in cfg->bad: the
 * hook must not refuse starts vcpuplaced does not manage over it, and vcpuplaced runs on
 * its last good configuration. false with *error (free()) when out of memory, or the
 * override is neither open nor closed. */
bool vpHookConfigLoad(vpHookConfig *cfg, const char *path, bool missing_ok, char **error);
void vpHookConfigClear(vpHookConfig *cfg);

/* The domain XML from fd: at most limit bytes, no NUL, UTF-8, not empty. NULL with why
 * otherwise; free() it. Past limit, fd is read to its end and *too_large set: why then
 * names the whole size. */
char *vpHookReadXML(int fd, size_t limit, size_t *len, bool *too_large, char *why, size_t whylen);

/* The request line sent to the daemon, newline included (free()); NULL with why when
 * the domain name or XML is not UTF-8. */
char *vpHookRequest(const vpHookCall *call, const char *xml, size_t *len, char *why, size_t whylen);
