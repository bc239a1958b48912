/*
 * The daemon's Unix socket: accepts root peers only, reads JSON lines with a size bound,
 * hands each request to one handler and writes its reply. A bad message gets an error
 * reply; an oversized one gets an error reply and the connection is closed. Runs on the
 * thread-default main context.
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

/* Returns the reply (the server takes it); may fill *after. */
typedef JsonNode *(*vpServerHandleFunc)(JsonObject *request, vpServerAfter *after,
                                        gpointer user_data);

/* Binds path (mode 0600; a stale socket is replaced, a live one is an error), creating
 * its directory (0700: root's peers only) when missing. */
vpServer *vpServerNew(const char *path, vpServerHandleFunc handle, gpointer user_data,
                      GError **error);
/* Closes the listener and every connection; pending after-work is dropped. */
void vpServerFree(vpServer *srv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpServer, vpServerFree)

/* Connections currently open (tests). */
guint vpServerNClients(const vpServer *srv);
