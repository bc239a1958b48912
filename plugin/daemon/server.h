/*
 * The daemon's Unix socket: accepts root peers only, reads JSON lines with a size bound,
 * hands each request to one handler and writes its reply. A bad message gets an error
 * reply; an oversized one gets an error reply and the connection is closed. Connections
 * are limited in number (some slots kept for the hook's operations), time out when idle,
 * and get at most a bounded number of replies queued; refusals are logged and counted.
 */
#pragma once

#include <json-glib/json-glib.h>

typedef struct _vpServer vpServer;

/* Work a handler wants done once its reply has been written (or the peer has gone):
 * the hook's peer is libvirt, blocked until it reads the reply, so nothing that calls
 * libvirt may run before. */
typedef struct {
    void (*func)(gpointer data);
    gpointer data;
    GDestroyNotify destroy;
} vpServerAfter;

/* A request whose reply a handler gives later, from whichever thread it is on. */
typedef struct _vpServerCall vpServerCall;

/* Runs on the server's thread. Returns the reply (the server takes it), or NULL after
 * keeping call, to be answered with vpServerCallReply(): the connection reads no further
 * request until then, so replies keep their order. May fill *after, which then runs on
 * the server's thread. */
typedef JsonNode *(*vpServerHandleFunc)(JsonObject *request, vpServerCall *call,
                                        vpServerAfter *after, gpointer user_data);

/* Binds path (mode 0600; a stale socket is replaced, a live one is an error), creating
 * its directory (0700: root's peers only) when missing, and serves it from a thread of
 * its own, so that a caller busy elsewhere (libvirt) never keeps a hook waiting. */
vpServer *vpServerNew(const char *path, vpServerHandleFunc handle, gpointer user_data,
                      GError **error);
/* Stops the thread, closes the listener and every connection; pending after-work is
 * dropped. */
void vpServerFree(vpServer *srv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpServer, vpServerFree)

/* Answers a kept call; takes reply, *after (may be NULL) and call. Any thread; once the
 * server is freed the reply is dropped and after's destroy runs. */
void vpServerCallReply(vpServerCall *call, JsonNode *reply, const vpServerAfter *after);

/* A connection with no request pending, no reply owed and nothing asked for this long is
 * closed. */
#define VP_SERVER_IDLE_MS 10000
/* Any thread; applies from the next check (four times a second). */
void vpServerSetIdleTimeout(vpServer *srv, guint ms);

/* What the server refused and closed since it started, for metrics and tests. */
typedef struct {
    gint refused_full; /* every slot busy with peers that spoke, or a hook
                        * slot asked something else */
    gint refused_peer; /* not root, or no credentials */
    gint refused_long; /* a message over VP_PROTO_MAX_MESSAGE */
    gint closed_idle;  /* closed by the idle timeout */
    gint queued;       /* replies now waiting to be written, all connections */
} vpServerStats;
/* Any thread. */
void vpServerGetStats(vpServer *srv, vpServerStats *out);
