/*
 * Binding the daemon's Unix socket (serversock.h).
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
