/*
 * vcpuplace-hook's inputs as libvirt (or anyone who can run it) supplies them: the
 * arguments, vcpuplaced.conf and the domain XML on stdin, and the reply that comes back,
 * through the hook's own code. What the hook would send must come out of the daemon's
 * decoder as what went in.
 *
 * Input: ARG\0ARG\0...\0\0CONFIG\0\0STDIN\0\0REPLY. Arguments beyond 8 are dropped; a
 * missing section is empty.
 */
#include "proto/proto.h"
#include "fuzz.h"
#include "hook/input.h"
#include "proto/hookclient.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_HOOK_MAX_ARGS 8

/* The rest of [*p, end) up to the next "\0\0" (or the end), and *p moved past it. */
static GBytes *
section(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *start = *p;
    const uint8_t *sep = start;
    while (sep + 1 < end && !(sep[0] == 0 && sep[1] == 0))
        sep++;
    if (sep + 1 >= end)
        sep = end;
    *p = sep == end ? end : sep + 2;
    return g_bytes_new(start, sep - start);
}

/* A file holding data, read through /proc/self/fd like any path. */
static int
memFile(GBytes *data)
{
    int fd = memfd_create("vp-fuzz-hook", MFD_CLOEXEC);
    g_assert(fd >= 0);
    gsize len;
    const char *bytes = g_bytes_get_data(data, &len);
    g_assert(len == 0 || write(fd, bytes, len) == (ssize_t)len);
    g_assert(lseek(fd, 0, SEEK_SET) == 0);
    return fd;
}

static void
checkRoundTrip(const vpHookCall *call, const char *xml)
{
    char why[512];
    size_t len = 0;
    g_autofree char *line = vpHookRequest(call, xml, &len, why, sizeof(why));
    g_assert(line);
    g_assert(len > 0 && line[len - 1] == '\n');
    g_assert(memchr(line, '\n', len - 1) == NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) back = vpProtoDecodeObject(line, len - 1, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(vpProtoGetString(back, "op", TRUE, NULL), ==, call->request);
    g_assert_cmpstr(vpProtoGetString(back, "name", TRUE, NULL), ==, call->domain);
    g_assert_cmpstr(vpProtoGetString(back, "xml", FALSE, NULL), ==, xml);
}

static void
checkReply(GBytes *bytes)
{
    gsize len;
    const char *text = g_bytes_get_data(bytes, &len);
    vpHookReply reply = {0};
    vpHookReplyDecode(text ? text : "", len, &reply);
    g_assert(reply.status <= VP_HOOK_PROTOCOL);
    g_assert((reply.status == VP_HOOK_OK) == (reply.what[0] == '\0'));
    g_assert(!reply.xml || reply.status == VP_HOOK_OK);
    vpHookReplyClear(&reply);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    g_autoptr(GBytes) args = section(&p, end);
    g_autoptr(GBytes) config = section(&p, end);
    g_autoptr(GBytes) in = section(&p, end);
    g_autoptr(GBytes) reply = g_bytes_new(p, end - p);
    checkReply(reply);

    /* argv[0] is the hook's path, as libvirt runs it. */
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup("/etc/libvirt/hooks/qemu.d/vcpuplace"));
    gsize alen;
    const char *a = g_bytes_get_data(args, &alen);
    for (gsize off = 0; alen && off <= alen && argv->len <= FUZZ_HOOK_MAX_ARGS;) {
        const char *nul = memchr(a + off, '\0', alen - off);
        gsize n = nul ? (gsize)(nul - (a + off)) : alen - off;
        g_ptr_array_add(argv, g_strndup(a + off, n));
        off += n + 1;
    }
    g_ptr_array_add(argv, NULL);

    vpHookCall call;
    char why[512];
    if (!vpHookParseArgs((int)argv->len - 1, (char **)argv->pdata, &call, why, sizeof(why)))
        return 0;

    int cfd = memFile(config);
    g_autofree char *cpath = g_strdup_printf("/proc/self/fd/%d", cfd);
    vpHookConfig cfg;
    char *error = NULL;
    bool loaded = vpHookConfigLoad(&cfg, cpath, false, &error);
    close(cfd);
    if (loaded) {
        g_assert(cfg.socket && cfg.socket[0] == '/');
        g_assert(cfg.timeout_ms >= 1 && cfg.timeout_ms <= 60000);
    } else {
        g_assert(error && strstr(error, cpath));
    }
    free(error);
    vpHookConfigClear(&cfg);

    g_autofree char *xml = NULL;
    if (call.wants_xml) {
        int ifd = memFile(in);
        size_t len = 0;
        /* A small bound here, so that the fuzzer also reaches the too-big refusal. */
        bool too_large = false;
        xml = vpHookReadXML(ifd, 4096, &len, &too_large, why, sizeof(why));
        close(ifd);
        if (!xml) {
            g_assert(why[0]);
            return 0;
        }
        g_assert(len == strlen(xml));
    }
    checkRoundTrip(&call, xml);
    return 0;
}
