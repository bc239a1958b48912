/*
 * The key vcpuplaced signs its applied-pins records with (libvirt/domxml.h): the records
 * travel in a domain's metadata, which its tenant writes too, so only a record signed with
 * a key no tenant and no unprivileged process reads is believed. It lives beside the
 * ledger, root's and 0600; hosts that migrate domains between them share the file.
 */
#pragma once

#include <glib.h>

/* The key in applied.key beside the ledger at state_path, made (32 random bytes, 0600)
 * when missing. A file that is no regular file of root's, is readable by others or is not
 * 32 bytes is refused, naming why. A state directory that cannot hold it (read-only):
 * a key for this process only, logged; records then count until the daemon restarts. */
GBytes *vpAppliedKeyLoad(const char *state_path, GError **error);
