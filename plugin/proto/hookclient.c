/*
 * The hook's client. One deadline runs across connect, send and receive on a
 * non-blocking socket: the hook's whole budget is a few hundred milliseconds.
 */
#include "proto/hookclient.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void __attribute__((format(printf, 3, 4)))
say(vpHookReply *reply, vpHookStatus status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reply->what, sizeof(reply->what), fmt, ap);
    va_end(ap);
    reply->status = status;
}

static long long
nowMs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline; false when it passed. */
static bool
waitFor(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - nowMs();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

/* A Unix stream socket refuses a non-blocking connect with EAGAIN while the listener's
 * queue is full; a busy but healthy daemon empties it within milliseconds, so the hook
 * tries again, a little later each time, until its deadline. */
static int
connectTo(const char *path, long long deadline, vpHookReply *reply)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        say(reply, VP_HOOK_UNREACHABLE, "cannot connect to vcpuplaced at %s: path too long", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        say(reply, VP_HOOK_UNREACHABLE, "socket: %s", strerror(errno));
        return -1;
    }
    int pause_ms = 1;
    while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN && nowMs() + pause_ms < deadline) {
            poll(NULL, 0, pause_ms);
            pause_ms = pause_ms < 16 ? pause_ms * 2 : 16;
            continue;
        }
        if (errno == EAGAIN)
            say(reply, VP_HOOK_UNREACHABLE,
                "no connection from vcpuplaced at %s within the time limit (its queue stayed "
                "full)",
                path);
        else
            say(reply, VP_HOOK_UNREACHABLE, "cannot connect to vcpuplaced at %s: %s", path,
                strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The daemon runs as root; a socket at its path bound by anyone else is not it. */
static bool
peerIsRoot(int fd, const char *path, vpHookReply *reply)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        say(reply, VP_HOOK_UNREACHABLE, "cannot tell who owns vcpuplaced's socket %s: %s", path,
            strerror(errno));
        return false;
    }
    if (cred.uid != 0) {
        say(reply, VP_HOOK_UNREACHABLE,
            "the socket %s is served by uid %u (pid %d), not root: not vcpuplaced; nothing "
            "sent",
            path, (unsigned)cred.uid, (int)cred.pid);
        return false;
    }
    return true;
}

/* The daemon may answer and close before reading a word (too many connections): its
 * reply, waiting in the receive buffer, says more than EPIPE; so a failed send is
 * reported only when no reply follows. */
static bool
sendAll(int fd, const char *data, size_t len, long long deadline, const char *path,
        vpHookReply *reply)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(fd, data + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!waitFor(fd, POLLOUT, deadline)) {
                say(reply, VP_HOOK_UNREACHABLE,
                    "no room to send from vcpuplaced at %s within the time limit", path);
                return false;
            }
            continue;
        }
        if (n < 0) {
            say(reply, VP_HOOK_UNREACHABLE, "cannot send to vcpuplaced at %s: %s", path,
                strerror(errno));
            return false;
        }
        done += n;
    }
    return true;
}

/* One line, without its newline, into a malloc()ed buffer. */
static char *
receiveLine(int fd, long long deadline, const char *path, size_t *len, vpHookReply *reply)
{
    size_t cap = 16384, used = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (used == cap) {
            char *grown = cap >= VP_HOOK_MAX_REPLY ? NULL : realloc(buf, cap * 2);
            if (!grown) {
                say(reply, VP_HOOK_PROTOCOL, "reply from vcpuplaced exceeds %d bytes",
                    VP_HOOK_MAX_REPLY);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + used, cap - used, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!waitFor(fd, POLLIN, deadline)) {
                say(reply, VP_HOOK_UNREACHABLE,
                    "no reply from vcpuplaced at %s within the time limit", path);
                break;
            }
            continue;
        }
        if (n < 0) {
            say(reply, VP_HOOK_UNREACHABLE, "cannot read from vcpuplaced at %s: %s", path,
                strerror(errno));
            break;
        }
        if (n == 0) {
            say(reply, VP_HOOK_PROTOCOL, "vcpuplaced at %s closed the connection without a reply",
                path);
            break;
        }
        char *nl = memchr(buf + used, '\n', n);
        used += n;
        if (nl) {
            *len = nl - buf;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

void
vpHookReplyDecode(const char *text, size_t len, vpHookReply *reply)
{
    if (memchr(text, '\0', len)) {
        say(reply, VP_HOOK_PROTOCOL, "bad reply from vcpuplaced: it contains a NUL byte");
        return;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        say(reply, VP_HOOK_PROTOCOL, "bad reply from vcpuplaced: invalid JSON: %s", jerr.text);
        return;
    }
    json_t *ok = json_object_get(root, "ok");
    if (!json_is_object(root) || !json_is_boolean(ok)) {
        say(reply, VP_HOOK_PROTOCOL,
            "bad reply from vcpuplaced: not an object with a boolean member 'ok'");
    } else if (json_is_true(ok)) {
        json_t *xml = json_object_get(root, "xml");
        reply->status = VP_HOOK_OK;
        reply->what[0] = '\0';
        if (json_is_string(xml) && !(reply->xml = strdup(json_string_value(xml))))
            say(reply, VP_HOOK_PROTOCOL, "out of memory");
    } else {
        json_t *error = json_object_get(root, "error");
        reply->retry = json_is_true(json_object_get(root, "retry"));
        say(reply,
            json_is_true(json_object_get(root, "refused")) ? VP_HOOK_REFUSED : VP_HOOK_FAILED, "%s",
            json_is_string(error) ? json_string_value(error)
                                  : "vcpuplaced reported an error without a message");
    }
    json_decref(root);
}

static void
callOnce(const char *path, const char *line, size_t len, long long deadline, vpHookReply *reply)
{
    memset(reply, 0, sizeof(*reply));
    int fd = connectTo(path, deadline, reply);
    if (fd < 0)
        return;
    if (!peerIsRoot(fd, path, reply)) {
        close(fd);
        return;
    }
    vpHookReply send_failed = {0};
    bool sent = sendAll(fd, line, len, deadline, path, &send_failed);
    size_t n = 0;
    char *text = receiveLine(fd, deadline, path, &n, reply);
    close(fd);
    if (!text) {
        if (!sent)
            *reply = send_failed;
        return;
    }
    vpHookReplyDecode(text, n, reply);
    free(text);
}

/* A daemon with every connection slot taken (a flood of idle peers) says so and closes:
 * as with a full listen queue, the hook tries again until its deadline. */
void
vpHookCallDaemon(const char *path, const char *line, size_t len, int timeout_ms, vpHookReply *reply)
{
    long long deadline = nowMs() + timeout_ms;
    int pause_ms = 1;
    for (;;) {
        callOnce(path, line, len, deadline, reply);
        if (!reply->retry || nowMs() + pause_ms >= deadline)
            return;
        vpHookReplyClear(reply);
        poll(NULL, 0, pause_ms);
        pause_ms = pause_ms < 16 ? pause_ms * 2 : 16;
    }
}

void
vpHookReplyClear(vpHookReply *reply)
{
    free(reply->xml);
    reply->xml = NULL;
}
