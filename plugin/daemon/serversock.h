/*
 * The daemon's listening socket: a Unix socket at a path, bound and listening, root's only.
 */
#pragma once

#include <gio/gio.h>

/* Creates path's directory (0700) when missing, replaces a stale socket file there (an
 * error when a daemon listens on it or it is no socket), binds it 0600 from birth and
 * listens with the system's largest backlog. */
GSocket *vpServerSocketListen(const char *path, GError **error);
