/*
 * Binding the daemon's Unix socket, and watching it (serversock.h).
 */
#include "daemon/serversock.h"

#include <errno.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* A socket file at path: replaced when nobody listens, an error when a daemon does. */
static gboolean
clearStale(const char *path, GError **error)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return TRUE;
    if (!S_ISSOCK(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                    "socket path %s exists and is not a socket", path);
        return FALSE;
    }
    g_autoptr(GSocket) probe =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, NULL);
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    if (probe && g_socket_connect(probe, addr, NULL, NULL)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
                    "socket %s: another vcpuplaced is listening", path);
        return FALSE;
    }
    if (g_unlink(path) < 0 && errno != ENOENT) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "cannot remove stale socket %s: %s", path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

GSocket *
vpServerSocketListen(const char *path, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);
    if (g_mkdir_with_parents(dir, 0700) < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "cannot create socket directory %s: %s", dir, g_strerror(errno));
        return NULL;
    }
    if (!clearStale(path, error))
        return NULL;

    g_autoptr(GSocket) sock =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, error);
    if (!sock)
        return NULL;
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    /* The umask makes the socket 0600 from birth: no window where others may connect. */
    mode_t old = umask(0177);
    gboolean bound = g_socket_bind(sock, addr, FALSE, error);
    umask(old);
    if (!bound) {
        g_prefix_error(error, "cannot bind %s: ", path);
        return NULL;
    }
    /* GLib's default backlog of 10 made a burst of hooks fail to connect while the daemon
     * was healthy. */
    g_socket_set_listen_backlog(sock, SOMAXCONN);
    if (g_chmod(path, 0600) < 0 || !g_socket_listen(sock, error)) {
        if (error && !*error)
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "chmod %s: %s", path,
                        g_strerror(errno));
        g_unlink(path);
        return NULL;
    }
    return g_steal_pointer(&sock);
}

static void
dropSource(GSource **src)
{
    if (*src)
        g_source_destroy(*src);
    g_clear_pointer(src, g_source_unref);
}

static void
watchArm(vpServerWatch *w)
{
    w->accept = g_socket_create_source(w->sock, G_IO_IN, NULL);
    g_source_set_callback(w->accept, w->ready, w->data, NULL);
    g_source_attach(w->accept, w->ctx);
}

static gboolean
watchRearm(gpointer data)
{
    vpServerWatch *w = data;
    g_clear_pointer(&w->rearm, g_source_unref);
    watchArm(w);
    return G_SOURCE_REMOVE;
}

static void
watchRest(vpServerWatch *w, const GError *err)
{
    if (w->paused++ == 0)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "socket: cannot accept: %s; not accepting for %d ms at a time until "
                         "descriptors free up",
                         err->message, VP_SERVER_REARM_MS);
    dropSource(&w->accept);
    w->rearm = g_timeout_source_new(VP_SERVER_REARM_MS);
    g_source_set_callback(w->rearm, watchRearm, w, NULL);
    g_source_attach(w->rearm, w->ctx);
}

void
vpServerWatchStart(vpServerWatch *w, GSocket *sock, GMainContext *ctx, GSourceFunc ready,
                   gpointer data)
{
    *w = (vpServerWatch){.sock = g_object_ref(sock), .ctx = ctx, .ready = ready, .data = data};
    g_socket_set_blocking(sock, FALSE);
    watchArm(w);
}

GSocket *
vpServerWatchAccept(vpServerWatch *w)
{
    for (;;) {
        g_autoptr(GError) err = NULL;
        GSocket *peer = g_socket_accept(w->sock, NULL, &err);
        if (peer && w->paused) {
            g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                             "socket: accepting again after %" G_GUINT64_FORMAT " rests",
                             w->paused);
            w->paused = 0;
        }
        if (peer || g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            return peer;
        if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TOO_MANY_OPEN_FILES) ||
            g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NO_SPACE)) {
            watchRest(w, err);
            return NULL;
        }
    }
}

void
vpServerWatchStop(vpServerWatch *w)
{
    dropSource(&w->accept);
    dropSource(&w->rearm);
    if (w->sock)
        g_socket_close(w->sock, NULL);
    g_clear_object(&w->sock);
}
