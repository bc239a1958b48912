/*
 * The daemon's listening socket: a Unix socket at a path, bound and listening, root's only;
 * and its watch, which takes a rest when descriptors run out.
 */
#pragma once

#include <gio/gio.h>

/* Creates path's directory (0700) when missing, replaces a stale socket file there (an
 * error when a daemon listens on it or it is no socket), binds it 0600 from birth and
 * listens with the system's largest backlog. */
GSocket *vpServerSocketListen(const char *path, GError **error);

/* Watches a listening socket on a main context. Out of file descriptors, the socket stays
 * readable and each accept fails at once: watching it would spin the thread (5.5 s of CPU
 * in 5 s, a million log lines). The watch then rests VP_SERVER_REARM_MS, libvirt's RPC
 * server's way, and the connections wait in the backlog. */
#define VP_SERVER_REARM_MS 100
typedef struct {
    GSocket *sock; /* non-blocking */
    GMainContext *ctx;
    GSource *accept;   /* sock readable: ready(data); NULL while resting */
    GSource *rearm;    /* the end of a rest */
    guint64 paused;    /* rests since the last accept */
    GSourceFunc ready; /* called as a GSocketSourceFunc */
    gpointer data;
} vpServerWatch;

void vpServerWatchStart(vpServerWatch *w, GSocket *sock, GMainContext *ctx, GSourceFunc ready,
                        gpointer data);
/* One connection from the backlog (unref it); NULL when none is waiting, or when
 * descriptors ran out: the watch then rests (w->accept NULL; logged once per shortage). */
GSocket *vpServerWatchAccept(vpServerWatch *w);
/* Stops watching and closes the socket. */
void vpServerWatchStop(vpServerWatch *w);
