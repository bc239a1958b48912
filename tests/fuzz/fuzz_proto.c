/*
 * The daemon's socket from a root peer: the bytes, as one or more lines, go through the
 * real server (buffering, line splitting, size bound), decoder and dispatcher of a
 * vcpuplaced that has no libvirt connection (vpDaemonStart is never called, so work
 * that needs libvirt is queued and dropped). A fresh daemon per input, with its ledger on
 * tmpfs, so that an input that crashes replays alone.
 *
 * Checked: every reply is one JSON object with a boolean "ok", no more replies than
 * requests, the server closes once the peer has half-closed, and the ledger never holds a
 * PU twice.
 */
#include "core/model/ledger.h"
#include "daemon/daemon.h"
#include "proto/proto.h"
#include "fuzz.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char *dir, *confpath, *sockpath, *statepath;

typedef struct {
    int fd;
    const uint8_t *data;
    size_t size, sent;
    GByteArray *in;
    gboolean eof;
} vpPeer;

/* The daemon's own messages would drown libFuzzer's; the harness's errors must not. */
static GLogWriterOutput
quiet(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    if (level & G_LOG_LEVEL_ERROR)
        return g_log_writer_standard_streams(level, fields, n, data);
    return G_LOG_WRITER_HANDLED;
}

static void
setup(void)
{
    g_log_set_writer_func(quiet, NULL, NULL);
    dir = g_strdup("/dev/shm/vp-fuzz-proto-XXXXXX");
    g_assert(g_mkdtemp(dir));
    confpath = g_build_filename(dir, "vcpuplaced.conf", NULL);
    sockpath = g_build_filename(dir, "sock", NULL);
    statepath = g_build_filename(dir, "ledger.json", NULL);
    /* qemu:///system so that status also looks for QEMU's pidfile by domain name. */
    g_autofree char *conf =
        g_strdup_printf("[daemon]\nmode=enforce\nadopt_running=yes\nuri=qemu:///system\n"
                        "topology=" VP_FUZZ_TOPOLOGY "\n"
                        "housekeeping_cpus=0-1\n"
                        "socket=%s\nstate=%s\n",
                        sockpath, statepath);
    g_assert(g_file_set_contents(confpath, conf, -1, NULL));
}

static gboolean
onWritable(gint fd, GIOCondition cond, gpointer data)
{
    vpPeer *p = data;
    ssize_t n = send(fd, p->data + p->sent, p->size - p->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0)
        p->sent += n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
        p->sent = p->size; /* the server closed on us: nothing more to say */
    if (p->sent < p->size)
        return G_SOURCE_CONTINUE;
    shutdown(fd, SHUT_WR);
    return G_SOURCE_REMOVE;
}

static gboolean
onReadable(gint fd, GIOCondition cond, gpointer data)
{
    vpPeer *p = data;
    for (;;) {
        guint8 buf[16384];
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            g_byte_array_append(p->in, buf, n);
            continue;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            p->eof = TRUE;
        break;
    }
    return p->eof ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static void
checkReplies(const vpPeer *p)
{
    gsize lines = 0, replies = 0;
    for (gsize i = 0; i < p->size; i++)
        lines += p->data[i] == '\n';
    lines++; /* a last line without newline is a request too */
    const char *text = (const char *)p->in->data;
    gsize start = 0;
    for (gsize i = 0; i < p->in->len; i++) {
        if (text[i] != '\n')
            continue;
        g_autoptr(GError) err = NULL;
        g_autoptr(JsonObject) reply = vpProtoDecodeObject(text + start, i - start, &err);
        if (!reply)
            g_error("reply %" G_GSIZE_FORMAT " is no reply (%s): %.*s", replies + 1, err->message,
                    (int)(i - start), text + start);
        JsonNode *ok = json_object_get_member(reply, "ok");
        g_assert(ok && json_node_get_value_type(ok) == G_TYPE_BOOLEAN);
        replies++;
        start = i + 1;
    }
    g_assert_cmpuint(start, ==, p->in->len);
    g_assert_cmpuint(replies, <=, lines);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir)
        setup();
    g_autoptr(GError) err = NULL;
    vpConfig *cfg = vpConfigLoad(confpath, &err);
    g_assert_no_error(err);
    g_autoptr(vpDaemon) d = vpDaemonNew(cfg, &err);
    g_assert_no_error(err);

    vpPeer p = {.data = data, .size = size, .in = g_byte_array_new()};
    p.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert(p.fd >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    g_strlcpy(addr.sun_path, sockpath, sizeof(addr.sun_path));
    g_assert(connect(p.fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
    guint writer = 0;
    if (size == 0)
        shutdown(p.fd, SHUT_WR);
    else
        writer = g_unix_fd_add(p.fd, G_IO_OUT | G_IO_ERR, onWritable, &p);
    g_unix_fd_add(p.fd, G_IO_IN | G_IO_HUP | G_IO_ERR, onReadable, &p);
    /* libFuzzer's -timeout catches a server that never closes. */
    while (!p.eof)
        g_main_context_iteration(NULL, TRUE);
    if (p.sent < p.size)
        g_source_remove(writer);
    close(p.fd);

    checkReplies(&p);
    g_assert(vpLedgerCheck(vpManagerLedger(vpDaemonManager(d)), NULL));
    g_clear_pointer(&d, vpDaemonFree);
    /* Dropped work (saves, syncs for a daemon that is gone) must not fire later. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_unlink(statepath);
    g_byte_array_unref(p.in);
    return 0;
}
