/*
 * Ledger file I/O. The save relies on GLib's consistent and durable file replacement, the
 * load reads only regular files, and no more than a ledger can be.
 */
#include "host/ledgerfile.h"
#include "core/model/error.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A ledger for thousands of domains is well under a megabyte; this only stops a
 * mistaken path (a disk image, /dev/zero) from being read into memory. */
#define VP_LEDGER_MAX_BYTES (64 * 1024 * 1024)

gboolean
vpLedgerFileSave(const vpLedger *ledger, const char *path, GError **error)
{
    g_autofree char *data = vpLedgerToText(ledger);
    return vpLedgerFileWrite(data, path, error);
}

gboolean
vpLedgerFileWrite(const char *data, const char *path, GError **error)
{
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

/* Reads path into *data: a regular file of at most VP_LEDGER_MAX_BYTES, opened without
 * blocking (a FIFO) and read with that limit (st_size says 0 for /dev/zero and /proc).
 * A missing file is not an error: TRUE with *data NULL. */
static gboolean
ledgerReadFile(const char *path, char **data, gsize *len, GError **error)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return TRUE;
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, g_strerror(errno));
        return FALSE;
    }
    struct stat st;
    g_autoptr(GString) buf = NULL;
    gboolean ok = FALSE;
    if (fstat(fd, &st) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, g_strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s is not a regular file", path);
        goto out;
    }
    buf = g_string_sized_new(MIN(st.st_size, VP_LEDGER_MAX_BYTES) + 1);
    for (;;) {
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "ledger %s: %s", path, g_strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if (buf->len + n > VP_LEDGER_MAX_BYTES) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "ledger %s: more than a ledger can be (%d bytes)", path,
                        VP_LEDGER_MAX_BYTES);
            goto out;
        }
        g_string_append_len(buf, chunk, n);
    }
    *len = buf->len;
    *data = g_string_free(g_steal_pointer(&buf), FALSE);
    ok = TRUE;
out:
    close(fd);
    return ok;
}

/* g_file_set_contents_full() writes "NAME.XXXXXX" (g_mkstemp's six characters) beside
 * NAME and renames it over NAME; a SIGKILL between the two leaves it for ever. */
static gboolean
isTemporary(const char *base, const char *entry)
{
    gsize n = strlen(base);
    if (strncmp(entry, base, n) != 0 || entry[n] != '.' || strlen(entry + n + 1) != 6)
        return FALSE;
    for (const char *c = entry + n + 1; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '_' && *c != '-')
            return FALSE;
    return TRUE;
}

guint
vpLedgerFileClearTemporaries(const char *path)
{
    g_autofree char *dirname = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    g_autoptr(GDir) dir = g_dir_open(dirname, 0, NULL);
    guint removed = 0;
    const char *entry;
    while (dir && (entry = g_dir_read_name(dir))) {
        if (!isTemporary(base, entry))
            continue;
        g_autofree char *full = g_build_filename(dirname, entry, NULL);
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && unlink(full) == 0)
            removed++;
    }
    return removed;
}

vpLedger *
vpLedgerFileLoad(const vpTopology *topo, const char *path, GError **error)
{
    g_autofree char *data = NULL;
    gsize len = 0;

    if (!ledgerReadFile(path, &data, &len, error))
        return NULL;
    if (!data)
        return vpLedgerNew(topo);
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
