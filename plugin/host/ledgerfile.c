/*
 * Ledger file I/O. The save relies on GLib's consistent and durable file replacement, the
 * load refuses a file too large to be a ledger before reading it.
 */
#include "host/ledgerfile.h"
#include "core/error.h"

#include <errno.h>
#include <glib/gstdio.h>

/* A ledger for thousands of domains is well under a megabyte; this only stops a
 * mistaken path (a disk image, /dev/zero) from being read into memory. */
#define VP_LEDGER_MAX_BYTES (64 * 1024 * 1024)

gboolean
vpLedgerFileSave(const vpLedger *ledger, const char *path, GError **error)
{
    g_autofree char *data = vpLedgerToText(ledger);
    g_autoptr(GError) local = NULL;

    /* GLib 2.74 writes a temporary file beside path, fsyncs it, renames it over path and
     * fsyncs the directory with these flags (checked with strace): a crash leaves the old
     * ledger or the new one, never a mix. */
    if (!g_file_set_contents_full(path, data, -1,
                                  G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                  0600, &local)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, local->message);
        return FALSE;
    }
    return TRUE;
}

vpLedger *
vpLedgerFileLoad(const vpTopology *topo, const char *path, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *data = NULL;
    GStatBuf st;
    gsize len;

    if (g_stat(path, &st) < 0) {
        int err = errno;

        if (err == ENOENT)
            return vpLedgerNew(topo);
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, g_strerror(err));
        return NULL;
    }
    if (st.st_size > VP_LEDGER_MAX_BYTES) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "ledger %s: %lld bytes is more than a ledger can be (%d)", path,
                    (long long)st.st_size, VP_LEDGER_MAX_BYTES);
        return NULL;
    }
    if (!g_file_get_contents(path, &data, &len, &local)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, local->message);
        return NULL;
    }
    return vpLedgerFromText(topo, data, len, path, error);
}

char *
vpLedgerFileSetAside(const char *path, GError **error)
{
    g_autofree char *aside = g_strdup_printf("%s.unreadable-%" G_GINT64_FORMAT, path,
                                             g_get_real_time() / G_USEC_PER_SEC);

    if (g_rename(path, aside) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s", g_strerror(errno));
        return NULL;
    }
    return g_steal_pointer(&aside);
}

gboolean
vpLedgerFileMakeDir(const char *path, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);

    if (g_mkdir_with_parents(dir, 0700) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "cannot create state directory %s: %s", dir,
                    g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}
