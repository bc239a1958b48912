/*
 * Socket server, on a thread and main context of its own. Each connection owns a read
 * buffer bounded by VP_PROTO_MAX_MESSAGE and a queue of replies written one at a time; a
 * reply's after-work runs from the write's completion, so it can never run while the peer
 * still waits for that reply. Connections are reference counted because their async reads
 * and writes outlive a close, and so is the server, because kept calls outlive it.
 */
#include "daemon/server.h"
#include "daemon/serversock.h"
#include "proto/proto.h"

#include <glib/gstdio.h>
#include <string.h>

/* A root peer can open many connections; beyond this each new one is answered and closed.
 * The last VP_SERVER_HOOK_SLOTS are kept for the hook: a connection admitted into them must
 * ask a hook operation first, and soon (the hook asks as soon as it is connected), so idle
 * or busy CLI peers can never leave a start without an answer. */
#define VP_SERVER_MAX_CLIENTS 256
#define VP_SERVER_HOOK_SLOTS 32
#define VP_SERVER_HOOK_SLOT_IDLE_MS 1000
/* With every slot taken, a connection that has asked nothing for this long makes room for
 * a new one: the hook asks at once, an idle peer never does. */
#define VP_SERVER_EVICT_SILENT_MS 100
/* Per connection: hook messages are small, and a 4 MiB domain XML, escaped, is 512 reads. */
#define VP_SERVER_READ_CHUNK 16384
/* A peer that sends requests without reading replies is not answered beyond this: lines
 * past it wait in the read buffer (which then is not refilled) until replies drain. */
#define VP_SERVER_MAX_QUEUED 64
#define VP_SERVER_SWEEP_MS 250
/* Connections accepted per turn of the loop. A turn costs in proportion to the connections
 * open (GLib prepares, polls and checks one source each), and one accept per turn left a
 * hook queued in the backlog behind hundreds of idle peers' connects (bench-hookload.sh:
 * half the socket thread's time in the loop itself). */
#define VP_SERVER_ACCEPT_BATCH 64

struct _vpServer {
    gint ref;
    char *path;
    GMainContext *ctx;
    GThread *thread;
    gint quit;           /* atomic: the thread stops serving */
    vpServerWatch watch; /* the listening socket */
    vpServerHandleFunc handle;
    gpointer user_data;
    GQueue clients; /* vpClient by its link, newest first; the server's thread only */
    GMutex lock;    /* guards stopped */
    gboolean stopped;
    guint idle_ms;       /* atomic */
    guint n_general;     /* connections outside the hook's slots; the server's thread only */
    gint64 last_warn;    /* when a refusal was last logged */
    guint unlogged;      /* refusals since */
    vpServerStats stats; /* atomic members */
    GSource *sweep;      /* the idle check, on ctx */
};

struct _vpServerCall {
    vpServer *srv;
    gpointer client;
};

typedef struct {
    char *line;
    gsize len;
    vpServerAfter after;
} vpReply;

typedef struct {
    gint ref;
    GList link;    /* in the server's clients */
    vpServer *srv; /* NULL once the server is gone */
    GSocketConnection *conn;
    GCancellable *cancel;
    GByteArray *buf;
    gsize scanned; /* bytes at buf's start known to hold no newline */
    guint8 chunk[VP_SERVER_READ_CHUNK];
    GQueue replies;
    vpReply *inflight; /* being written: its buffer must outlive a close */
    gboolean closing;  /* stop reading; close once the replies are out */
    gboolean reading;  /* a read is in flight */
    gboolean closed;
    gboolean eof;       /* the peer has half-closed: answer what is buffered, then close */
    gboolean kept;      /* a handler kept the call being answered: read nothing more */
    gboolean hook_slot; /* admitted into the hook's slots */
    gboolean asked;     /* has sent a request */
    gint64 active;      /* monotonic us of the last request or reply */
    char *peer;         /* "pid 123 uid 0" for log lines */
} vpClient;

static void clientRead(vpClient *c);
static void clientFlush(vpClient *c);
static gboolean clientConsume(vpClient *c);
static void clientResume(vpClient *c);
static void clientRefuse(vpClient *c, const char *why, gint *counter, gboolean retry);
static gboolean serverEvictSilent(vpServer *srv, gboolean general);

static vpServer *
serverRef(vpServer *srv)
{
    g_atomic_int_inc(&srv->ref);
    return srv;
}

static void
serverUnref(vpServer *srv)
{
    if (!g_atomic_int_dec_and_test(&srv->ref))
        return;
    g_main_context_unref(srv->ctx);
    g_mutex_clear(&srv->lock);
    g_free(srv->path);
    g_free(srv);
}

static void
replyFree(vpReply *r, gboolean run_after)
{
    if (run_after && r->after.func)
        r->after.func(r->after.data);
    if (r->after.destroy)
        r->after.destroy(r->after.data);
    g_free(r->line);
    g_free(r);
}

static vpClient *
clientRef(vpClient *c)
{
    g_atomic_int_inc(&c->ref);
    return c;
}

static void
clientUnref(vpClient *c)
{
    if (!g_atomic_int_dec_and_test(&c->ref))
        return;
    vpReply *r;
    while ((r = g_queue_pop_head(&c->replies)))
        replyFree(r, FALSE);
    g_object_unref(c->conn);
    g_object_unref(c->cancel);
    g_byte_array_unref(c->buf);
    g_free(c->peer);
    g_free(c);
}

static void
clientClose(vpClient *c)
{
    if (c->closed)
        return;
    c->closed = TRUE;
    g_cancellable_cancel(c->cancel);
    g_io_stream_close(G_IO_STREAM(c->conn), NULL, NULL);
    if (c->srv) {
        g_queue_unlink(&c->srv->clients, &c->link);
        if (!c->hook_slot)
            c->srv->n_general--;
    }
    /* After-work of replies never written still runs: the peer is gone, the work is not. */
    vpReply *r;
    while ((r = g_queue_pop_head(&c->replies))) {
        if (c->srv)
            g_atomic_int_dec_and_test(&c->srv->stats.queued);
        replyFree(r, c->srv != NULL);
    }
    clientUnref(c);
}

static void
clientQueue(vpClient *c, JsonNode *reply, vpServerAfter *after)
{
    vpReply *r = g_new0(vpReply, 1);
    r->line = vpProtoEncode(reply, &r->len);
    if (after)
        r->after = *after;
    json_node_unref(reply);
    g_queue_push_tail(&c->replies, r);
    if (c->srv)
        g_atomic_int_inc(&c->srv->stats.queued);
    clientFlush(c);
}

static void
writeDone(GObject *source, GAsyncResult *res, gpointer data)
{
    vpClient *c = data;
    g_autoptr(GError) err = NULL;
    gboolean ok = g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), res, NULL, &err);
    replyFree(g_steal_pointer(&c->inflight), c->srv != NULL);
    c->active = g_get_monotonic_time();
    if (!c->closed) {
        if (!ok) {
            g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                             "client %s: write failed: %s", c->peer, err->message);
            clientClose(c);
        } else {
            clientFlush(c);
            clientResume(c);
        }
    }
    clientUnref(c);
}

static void
clientFlush(vpClient *c)
{
    if (c->closed || c->inflight)
        return;
    vpReply *r = g_queue_pop_head(&c->replies);
    if (!r) {
        if (c->closing && !c->kept)
            clientClose(c);
        return;
    }
    c->inflight = r;
    if (c->srv)
        g_atomic_int_dec_and_test(&c->srv->stats.queued);
    GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(c->conn));
    g_output_stream_write_all_async(out, r->line, r->len, G_PRIORITY_DEFAULT, c->cancel, writeDone,
                                    clientRef(c));
}

static void
clientHandleLine(vpClient *c, const char *line, gsize len)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) req = vpProtoDecodeObject(line, len, &err);
    c->active = g_get_monotonic_time();
    if (c->hook_slot && !c->asked) {
        const char *op = req ? vpProtoGetString(req, "op", FALSE, NULL) : NULL;
        /* An operator's request takes the general slot of a silent peer, if one holds
         * one: under a flood of idle connections, `vcpuplace status` was refused. */
        if ((!op || !vpProtoIsHookOp(op)) && serverEvictSilent(c->srv, TRUE)) {
            c->hook_slot = FALSE;
            c->srv->n_general++;
        } else if (!op || !vpProtoIsHookOp(op)) {
            c->asked = TRUE;
            clientRefuse(c, "too many connections to vcpuplaced; try again",
                         &c->srv->stats.refused_full, TRUE);
            return;
        }
    }
    /* The hook asks one thing per connection: a hook slot is free again once answered. */
    if (c->hook_slot)
        c->closing = TRUE;
    c->asked = TRUE;
    if (!req) {
        clientQueue(c, vpProtoReplyError(err->message, FALSE), NULL);
        return;
    }
    vpServerAfter after = {0};
    vpServerCall *call = g_new0(vpServerCall, 1);
    call->srv = serverRef(c->srv);
    call->client = clientRef(c);
    JsonNode *reply = c->srv->handle(req, call, &after, c->srv->user_data);
    if (!reply) {
        c->kept = TRUE;
        return;
    }
    serverUnref(call->srv);
    clientUnref(c);
    g_free(call);
    clientQueue(c, reply, &after);
}

typedef struct {
    vpServerCall *call;
    JsonNode *reply;
    vpServerAfter after;
} vpKeptReply;

static void
keptReplyFree(gpointer data)
{
    vpKeptReply *k = data;
    if (k->reply)
        json_node_unref(k->reply);
    if (k->after.destroy)
        k->after.destroy(k->after.data);
    clientUnref(k->call->client);
    serverUnref(k->call->srv);
    g_free(k->call);
    g_free(k);
}

/* On the server's thread: the kept call's reply goes out, and reading resumes. */
static gboolean
keptReplyDeliver(gpointer data)
{
    vpKeptReply *k = data;
    vpClient *c = k->call->client;
    c->kept = FALSE;
    if (c->closed || !c->srv)
        return G_SOURCE_REMOVE;
    clientQueue(c, g_steal_pointer(&k->reply), &k->after);
    k->after = (vpServerAfter){0};
    clientResume(c);
    return G_SOURCE_REMOVE;
}

void
vpServerCallReply(vpServerCall *call, JsonNode *reply, const vpServerAfter *after)
{
    vpKeptReply *k = g_new0(vpKeptReply, 1);
    k->call = call;
    k->reply = reply;
    if (after)
        k->after = *after;
    vpServer *srv = call->srv;
    g_mutex_lock(&srv->lock);
    gboolean stopped = srv->stopped;
    if (!stopped)
        g_main_context_invoke_full(srv->ctx, G_PRIORITY_DEFAULT, keptReplyDeliver, k,
                                   keptReplyFree);
    g_mutex_unlock(&srv->lock);
    if (stopped)
        keptReplyFree(k);
}

/* Handles the complete lines in the buffer while the reply queue has room; FALSE once the
 * connection must stop reading. The size bound holds for complete lines too: one read may
 * bring the newline of a line that is already past it. A line that comes in many reads is
 * searched for its newline once: scanning it whole after each of a 1 MiB line's 64 reads
 * took 6% of the socket thread under hostile load (bench-hookload.sh, perf). */
static gboolean
clientConsume(vpClient *c)
{
    gsize start = 0;
    gboolean too_long = FALSE, partial = FALSE;
    while (!c->closed && c->srv && !c->kept && !c->closing &&
           g_queue_get_length(&c->replies) < VP_SERVER_MAX_QUEUED && start < c->buf->len) {
        gsize skip = start == 0 ? MIN(c->scanned, c->buf->len) : 0;
        guint8 *nl = memchr(c->buf->data + start + skip, '\n', c->buf->len - start - skip);
        gsize len = nl ? (gsize)(nl - (c->buf->data + start)) : c->buf->len - start;
        if (len >= VP_PROTO_MAX_MESSAGE) {
            too_long = TRUE;
            break;
        }
        if (!nl) {
            partial = TRUE;
            break;
        }
        clientHandleLine(c, (const char *)c->buf->data + start, len);
        start += len + 1;
    }
    g_byte_array_remove_range(c->buf, 0, start);
    c->scanned = partial ? c->buf->len : 0;
    if (too_long && !c->closed && c->srv) {
        g_autofree char *msg = g_strdup_printf(
            "message exceeds %d bytes without a newline; closing", VP_PROTO_MAX_MESSAGE);
        clientRefuse(c, msg, &c->srv->stats.refused_long, FALSE);
        return FALSE;
    }
    return !c->closed && c->srv;
}

static void
readDone(GObject *source, GAsyncResult *res, gpointer data)
{
    vpClient *c = data;
    g_autoptr(GError) err = NULL;
    gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), res, &err);
    c->reading = FALSE;
    if (c->closed) {
        clientUnref(c);
        return;
    }
    if (n < 0) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE", "client %s: read failed: %s",
                         c->peer, err->message);
        clientClose(c);
    } else if (n == 0) {
        /* A trailing line without newline is still a message: a client may half-close. */
        c->eof = TRUE;
        if (c->buf->len > 0 && c->buf->data[c->buf->len - 1] != '\n')
            g_byte_array_append(c->buf, (const guint8 *)"\n", 1);
        clientResume(c);
    } else {
        g_byte_array_append(c->buf, c->chunk, n);
        clientResume(c);
    }
    clientUnref(c);
}

static gboolean
bufHasLine(const vpClient *c)
{
    gsize skip = MIN(c->scanned, c->buf->len);
    return c->buf->len > skip && memchr(c->buf->data + skip, '\n', c->buf->len - skip);
}

/* Answers what the buffer holds while there is room for replies, then reads more only
 * when every complete line there has been answered: the buffer and the queue both stay
 * bounded however fast the peer sends. */
static void
clientResume(vpClient *c)
{
    /* Resumed once half the queue is out: answering one line per written reply would move
     * the rest of the buffer once per line. */
    if (c->closed || c->closing || c->kept || !c->srv ||
        g_queue_get_length(&c->replies) > VP_SERVER_MAX_QUEUED / 2 || !clientConsume(c))
        return;
    if (c->eof && !c->kept && !bufHasLine(c)) {
        c->closing = TRUE;
        clientFlush(c);
        return;
    }
    if (c->eof || c->reading || c->kept || c->closing ||
        g_queue_get_length(&c->replies) >= VP_SERVER_MAX_QUEUED || bufHasLine(c))
        return;
    clientRead(c);
}

/* Logs what happened to a peer, at most once a second, with how many were not logged. */
static void
serverLogLimited(vpServer *srv, const char *peer, const char *what)
{
    gint64 now = g_get_monotonic_time();
    if (now - srv->last_warn < G_USEC_PER_SEC) {
        srv->unlogged++;
        return;
    }
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                     "client %s: %s (%u more refusals not logged)", peer, what, srv->unlogged);
    srv->last_warn = now;
    srv->unlogged = 0;
}

/* Answers a peer that is not served with why, closes it once that is written, counts it
 * and logs it. */
static void
clientRefuse(vpClient *c, const char *why, gint *counter, gboolean retry)
{
    g_atomic_int_inc(counter);
    g_autofree char *what = g_strdup_printf("refused: %s", why);
    serverLogLimited(c->srv, c->peer, what);
    c->closing = TRUE;
    JsonNode *reply = vpProtoReplyError(why, FALSE);
    /* Full for now, not failed: the hook connects again until its deadline. */
    if (retry)
        json_object_set_boolean_member(json_node_get_object(reply), "retry", TRUE);
    clientQueue(c, reply, NULL);
}

/* Closes the connection silent longest (of the general slots only, when general), if it
 * has been silent long enough; FALSE when none was. A silent connection's last activity is
 * its accept, so the oldest is the first found from the queue's tail (clients that asked
 * something leave the queue soon). */
static gboolean
serverEvictSilent(vpServer *srv, gboolean general)
{
    gint64 now = g_get_monotonic_time();
    vpClient *oldest = NULL;
    for (GList *l = srv->clients.tail; l && !oldest; l = l->prev) {
        vpClient *o = l->data;
        if (!o->asked && !o->closing && !(general && o->hook_slot))
            oldest = o;
    }
    if (!oldest || now - oldest->active < VP_SERVER_EVICT_SILENT_MS * 1000)
        return FALSE;
    g_atomic_int_inc(&srv->stats.closed_idle);
    serverLogLimited(srv, oldest->peer, "closed: asked nothing while every slot was taken");
    clientClose(oldest);
    return TRUE;
}

/* Every VP_SERVER_SWEEP_MS: a connection with nothing asked of it or owed to it for
 * longer than its idle limit is closed, so idle peers cannot hold the slots for ever. */
static gboolean
serverSweep(gpointer data)
{
    vpServer *srv = data;
    gint64 now = g_get_monotonic_time();
    gint64 idle = (gint64)g_atomic_int_get(&srv->idle_ms) * 1000;
    GList *idle_clients = NULL;
    for (GList *l = srv->clients.head; l; l = l->next) {
        vpClient *c = l->data;
        gint64 limit = c->hook_slot && !c->asked
                           ? MIN(idle, VP_SERVER_HOOK_SLOT_IDLE_MS * (gint64)1000)
                           : idle;
        if (!c->closing && !c->kept && !c->inflight && g_queue_is_empty(&c->replies) &&
            now - c->active > limit)
            idle_clients = g_list_prepend(idle_clients, c);
    }
    for (GList *l = idle_clients; l; l = l->next) {
        vpClient *c = l->data;
        g_atomic_int_inc(&srv->stats.closed_idle);
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                         "client %s: closed after %" G_GINT64_FORMAT " ms idle", c->peer,
                         (now - c->active) / 1000);
        clientClose(c);
    }
    g_list_free(idle_clients);
    return G_SOURCE_CONTINUE;
}

static void
clientRead(vpClient *c)
{
    c->reading = TRUE;
    GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(c->conn));
    g_input_stream_read_async(in, c->chunk, sizeof(c->chunk), G_PRIORITY_DEFAULT, c->cancel,
                              readDone, clientRef(c));
}

/* On the server's thread, last: nothing is accepted or read any more. */
static void
serverStop(vpServer *srv)
{
    vpServerWatchStop(&srv->watch);
    g_source_destroy(srv->sweep);
    g_clear_pointer(&srv->sweep, g_source_unref);
    GList *l;
    while ((l = g_queue_pop_head_link(&srv->clients))) {
        vpClient *c = l->data;
        c->srv = NULL;
        clientClose(c);
    }
}

static gpointer
serverMain(gpointer data)
{
    vpServer *srv = data;
    g_main_context_push_thread_default(srv->ctx);
    while (!g_atomic_int_get(&srv->quit))
        g_main_context_iteration(srv->ctx, TRUE);
    serverStop(srv);
    g_main_context_pop_thread_default(srv->ctx);
    return NULL;
}

static void
serverAdmit(vpServer *srv, GSocketConnection *conn)
{
    vpClient *c = g_new0(vpClient, 1);
    c->ref = 1;
    c->link.data = c;
    c->srv = srv;
    c->conn = g_object_ref(conn);
    c->cancel = g_cancellable_new();
    c->buf = g_byte_array_new();
    g_queue_init(&c->replies);
    c->active = g_get_monotonic_time();
    if (srv->clients.length >= VP_SERVER_MAX_CLIENTS)
        serverEvictSilent(srv, FALSE);
    g_queue_push_head_link(&srv->clients, &c->link);
    guint n = srv->clients.length;
    c->hook_slot = srv->n_general >= VP_SERVER_MAX_CLIENTS - VP_SERVER_HOOK_SLOTS;
    if (!c->hook_slot)
        srv->n_general++;

    g_autoptr(GError) err = NULL;
    g_autoptr(GCredentials) cred =
        g_socket_get_credentials(g_socket_connection_get_socket(conn), &err);
    uid_t uid = cred ? g_credentials_get_unix_user(cred, NULL) : (uid_t)-1;
    pid_t pid = cred ? g_credentials_get_unix_pid(cred, NULL) : -1;
    c->peer = g_strdup_printf("pid %d uid %d", (int)pid, (int)uid);

    if (!cred || uid != 0) {
        g_autofree char *msg =
            cred ? g_strdup_printf("permission denied: peer uid %d is not root; vcpuplaced "
                                   "answers root only",
                                   (int)uid)
                 : g_strdup_printf("permission denied: peer credentials unavailable: %s",
                                   err->message);
        clientRefuse(c, msg, &srv->stats.refused_peer, FALSE);
        return;
    }
    /* Every slot busy with a request or a peer that spoke (silent ones made room above):
     * refused at once, so that a burst of idle peers cannot queue ahead of hooks in the
     * backlog. */
    if (n > VP_SERVER_MAX_CLIENTS) {
        clientRefuse(c, "too many connections to vcpuplaced; try again", &srv->stats.refused_full,
                     TRUE);
        return;
    }
    clientRead(c);
}

/* Takes the backlog, up to a batch per turn of the loop. */
static gboolean
onListenReady(GSocket *sock, GIOCondition cond, gpointer data)
{
    (void)sock, (void)cond;
    vpServer *srv = data;
    for (int i = 0; i < VP_SERVER_ACCEPT_BATCH; i++) {
        GSocket *peer = vpServerWatchAccept(&srv->watch);
        if (!peer)
            return srv->watch.accept ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
        g_autoptr(GSocketConnection) conn = g_socket_connection_factory_create_connection(peer);
        g_object_unref(peer);
        serverAdmit(srv, conn);
    }
    return G_SOURCE_CONTINUE;
}

vpServer *
vpServerNew(const char *path, vpServerHandleFunc handle, gpointer user_data, GError **error)
{
    g_autoptr(GSocket) sock = vpServerSocketListen(path, error);
    if (!sock)
        return NULL;

    vpServer *srv = g_new0(vpServer, 1);
    srv->ref = 1;
    srv->path = g_strdup(path);
    srv->handle = handle;
    srv->user_data = user_data;
    g_mutex_init(&srv->lock);
    srv->ctx = g_main_context_new();
    vpServerWatchStart(&srv->watch, sock, srv->ctx, G_SOURCE_FUNC(onListenReady), srv);
    srv->idle_ms = VP_SERVER_IDLE_MS;
    srv->sweep = g_timeout_source_new(VP_SERVER_SWEEP_MS);
    g_source_set_callback(srv->sweep, serverSweep, srv, NULL);
    g_source_attach(srv->sweep, srv->ctx);
    srv->thread = g_thread_new("vp-socket", serverMain, srv);
    return srv;
}

void
vpServerSetIdleTimeout(vpServer *srv, guint ms)
{
    g_atomic_int_set(&srv->idle_ms, ms);
}

void
vpServerGetStats(vpServer *srv, vpServerStats *out)
{
    out->refused_full = g_atomic_int_get(&srv->stats.refused_full);
    out->refused_peer = g_atomic_int_get(&srv->stats.refused_peer);
    out->refused_long = g_atomic_int_get(&srv->stats.refused_long);
    out->closed_idle = g_atomic_int_get(&srv->stats.closed_idle);
    out->queued = g_atomic_int_get(&srv->stats.queued);
}

void
vpServerFree(vpServer *srv)
{
    if (!srv)
        return;
    g_mutex_lock(&srv->lock);
    srv->stopped = TRUE;
    g_mutex_unlock(&srv->lock);
    g_atomic_int_set(&srv->quit, 1);
    g_main_context_wakeup(srv->ctx);
    g_thread_join(srv->thread);
    /* What the cancelled reads and writes still have to say. */
    while (g_main_context_iteration(srv->ctx, FALSE))
        ;
    g_unlink(srv->path);
    serverUnref(srv);
}
