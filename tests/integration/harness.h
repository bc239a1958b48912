/*
 * What the integration tests share: a scratch directory per test (Check fixtures), the
 * configuration file there, vcpuplaced run in-process on the test's own thread, and the
 * real binaries run while the daemon's main loop turns.
 */
#pragma once

#include "daemon/daemon.h"

#include <check.h>

#define POLICY_NS "http://vcpuplace.org/xmlns/policy/1.0"

/* Set by setupTmp() for the running test: its scratch directory and the vcpuplaced.conf
 * in it, which the daemon and the binaries run() starts read. */
extern char *tmpdir;
extern char *confpath;

void setupTmp(void);
void teardownTmp(void);

/* The daemon's section: uri, topology, and the socket and ledger under tmpdir; extra
 * (keys of [daemon], then any other sections) is appended as it is. */
void writeConfig(const char *uri, const char *topology, const char *extra);

/* Lets only errors and criticals through: the daemon's info lines would drown Check's. */
GLogWriterOutput quietWriter(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data);

/* Turns the main loop until the daemon has nothing in flight and nothing is pending. */
void waitIdle(vpDaemon *d);

/* Starts a daemon from confpath, connected and idle; listener (may be NULL) hears of
 * every domain the daemon takes up or lets go. */
vpDaemon *startDaemonWith(vpDaemonDomainFunc listener, gpointer data);
vpDaemon *startDaemon(void);

/* A test-driver domain; policy (attributes of vcpuplace:policy) and cputune may be NULL. */
char *domainXML(const char *name, unsigned vcpus, const char *policy, const char *cputune);
virDomainPtr define(virConnectPtr conn, const char *xml);

/* Runs argv with input on stdin and VCPUPLACE_CONFIG=confpath while the main loop turns;
 * returns the exit status. Output not asked for is dropped, but a failure's stderr is
 * shown, so that an assertion on the status comes with the reason. */
int run(const char *const *argv, const char *input, char **out, char **errout);
/* The same without turning the daemon's main loop: for a test that keeps the main thread
 * where the daemon waits on libvirt (state lock let go, not polling). */
int runNow(const char *const *argv, const char *input, char **errout);
