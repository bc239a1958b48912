/*
 * The applied-pins records' key (appliedkey.h).
 */
#include "daemon/appliedkey.h"
#include "core/model/error.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define VP_APPLIED_KEY_BYTES 32

static GBytes *
randomKey(GError **error)
{
    guint8 key[VP_APPLIED_KEY_BYTES];
    if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "applied-pins key: getrandom: %s",
                    g_strerror(errno));
        return NULL;
    }
    return g_bytes_new(key, sizeof(key));
}

/* O_NOFOLLOW and fstat on what was opened: a link or a file someone else can read or
 * write is no key of vcpuplace's. */
static GBytes *
readKey(int fd, const char *path, GError **error)
{
    struct stat st;
    guint8 key[VP_APPLIED_KEY_BYTES];
    const char *why = NULL;
    if (fstat(fd, &st) < 0)
        why = g_strerror(errno);
    else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
        why = "not a regular file of vcpuplaced's user";
    else if (st.st_mode & 077)
        why = "readable or writable by others (chmod 0600 it)";
    else if (st.st_size != VP_APPLIED_KEY_BYTES || read(fd, key, sizeof(key)) != sizeof(key))
        why = "not 32 bytes";
    if (why) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "applied-pins key %s: %s", path, why);
        return NULL;
    }
    return g_bytes_new(key, sizeof(key));
}

static GBytes *
createKey(const char *path, GError **error)
{
    g_autoptr(GBytes) key = randomKey(error);
    if (!key)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    gsize len = 0;
    const void *data = g_bytes_get_data(key, &len);
    gboolean ok = fd >= 0 && write(fd, data, len) == (ssize_t)len && fsync(fd) == 0;
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        if (fd >= 0)
            unlink(path);
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "applied-pins key %s cannot be written: %s; a key for this run only "
                         "(a restore after a restart keeps vcpuplace's old pins as its own)",
                         path, g_strerror(err));
    }
    return g_steal_pointer(&key);
}

GBytes *
vpAppliedKeyLoad(const char *state_path, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(state_path);
    g_autofree char *path = g_build_filename(dir, "applied.key", NULL);
    g_mkdir_with_parents(dir, 0700);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return createKey(path, error);
    if (fd < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "applied-pins key %s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    GBytes *key = readKey(fd, path, error);
    close(fd);
    return key;
}
