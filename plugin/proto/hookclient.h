/*
 * The hook's side of the vcpuplaced protocol (proto.h describes it): one request line out,
 * one reply line back, in libc and jansson only, because libvirt runs the hook three times
 * per start and loading GLib, GIO and json-glib cost more than the rest of the run.
 *
 * The daemon end must belong to root (SO_PEERCRED): whoever else answers could refuse
 * starts or hand libvirt a replacement domain XML.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The largest domain XML sent, as VP_DOMXML_MAX_BYTES: what the daemon parses. */
#define VP_HOOK_MAX_XML (4 * 1024 * 1024)
/* Longest reply line accepted, newline included; as VP_PROTO_MAX_MESSAGE. */
#define VP_HOOK_MAX_REPLY (2 * VP_HOOK_MAX_XML + 65536)

typedef enum {
    VP_HOOK_OK,          /* ok:true */
    VP_HOOK_REFUSED,     /* ok:false, refused:true: the policy cannot be met */
    VP_HOOK_FAILED,      /* ok:false: the daemon failed */
    VP_HOOK_UNREACHABLE, /* no daemon (or not root's) at the socket, or no answer in time */
    VP_HOOK_PROTOCOL,    /* the answer is not a reply */
} vpHookStatus;

typedef struct {
    vpHookStatus status;
    char *xml;      /* a string member "xml" of an ok reply, else NULL (free()) */
    char what[512]; /* why, for every status but OK */
    bool retry;     /* the daemon was full: "retry": true in its reply */
} vpHookReply;

/* Sends line (len bytes, ending in a newline) to the socket at path and reads one reply,
 * all within timeout_ms. A full listen queue, and a daemon that answers it is full, are
 * waited out until then. */
void vpHookCallDaemon(const char *path, const char *line, size_t len, int timeout_ms,
                      vpHookReply *reply);

/* One reply line (without its newline): a JSON object with a boolean "ok", and nothing
 * after it. jansson bounds nesting (2048 levels, then "maximum parsing depth reached"),
 * refuses \u0000 in strings, integers beyond long long, and duplicate members. */
void vpHookReplyDecode(const char *text, size_t len, vpHookReply *reply);
void vpHookReplyClear(vpHookReply *reply);
