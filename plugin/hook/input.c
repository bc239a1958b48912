/*
 * The hook's inputs. See input.h.
 */
#include "hook/input.h"
#include "conf/conf.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool
is(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

bool
vpHookParseArgs(int argc, char **argv, vpHookCall *call, char *why, size_t whylen)
{
    why[0] = '\0';
    if (argc != 5) {
        snprintf(why, whylen,
                 "vcpuplace: hook called with %d arguments, expected 4 (DOMAIN OP SUBOP "
                 "EXTRA); ignored",
                 argc - 1);
        return false;
    }
    const char *op = argv[2], *subop = argv[3];
    memset(call, 0, sizeof(*call));
    call->domain = argv[1];
    if (is(op, "prepare") && is(subop, "begin")) {
        call->request = "reserve";
        call->wants_xml = true;
        call->is_start = true;
    } else if ((is(op, "restore") || is(op, "migrate")) && is(subop, "begin")) {
        call->request = "rewrite";
        call->wants_xml = true;
        call->rewrites = true;
    } else if (is(op, "started") && is(subop, "begin")) {
        call->request = "started";
    } else if ((is(op, "stopped") || is(op, "release")) && is(subop, "end")) {
        call->request = "release";
    } else if (is(op, "reconnect") && is(subop, "begin")) {
        call->request = "reconnect";
    } else {
        return false;
    }
    /* The name goes into a JSON string: jansson takes UTF-8 only. */
    json_t *name = json_string(call->domain);
    bool ok = *call->domain && name;
    json_decref(name);
    if (!ok)
        snprintf(why, whylen,
                 "vcpuplace: hook called with an empty or non-UTF-8 domain name; "
                 "ignored");
    return ok;
}

bool
vpHookConfigLoad(vpHookConfig *cfg, const char *path, bool missing_ok, char **error)
{
    memset(cfg, 0, sizeof(*cfg));
    *error = NULL;
    vpConf *conf = vpConfSalvage(path, missing_ok, error);
    cfg->bad = *error;
    *error = NULL;
    if (!conf)
        return false;
    cfg->socket = strdup(vpConfGet(conf, "daemon", "socket"));
    cfg->fail_closed = is(vpConfGet(conf, "daemon", "hook_failure"), "closed");
    cfg->timeout_ms = (int)vpConfGetUint(conf, "daemon", "hook_timeout_ms");
    const char *globs = vpConfGet(conf, "daemon", "domains");
    cfg->domains = globs ? vpConfList(globs) : NULL;
    cfg->off = is(vpConfGet(conf, "daemon", "hook"), "off");
    cfg->report = is(vpConfGet(conf, "daemon", "mode"), "report");
    vpConfFree(conf);
    const char *env = getenv("VCPUPLACE_HOOK_FAILURE");
    if (env && !is(env, "open") && !is(env, "closed")) {
        if (asprintf(error, "VCPUPLACE_HOOK_FAILURE='%s' is not one of open, closed", env) < 0)
            *error = NULL;
        return false;
    }
    if (env)
        cfg->fail_closed = is(env, "closed");
    return cfg->socket != NULL;
}

void
vpHookConfigClear(vpHookConfig *cfg)
{
    free(cfg->socket);
    cfg->socket = NULL;
    free(cfg->bad);
    cfg->bad = NULL;
    if (cfg->domains)
        vpConfListFree(cfg->domains);
    cfg->domains = NULL;
}

/* The rest of an input past the limit, counted so that a refusal can name its size. */
static size_t
drain(int fd, size_t used)
{
    char sink[65536];
    for (;;) {
        ssize_t n = read(fd, sink, sizeof(sink));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return used;
        used += (size_t)n;
    }
}

/* Grows buf to hold one more read: false when out of memory (buf is then freed). */
static bool
grow(char **buf, size_t *cap, size_t used)
{
    if (used < *cap)
        return true;
    char *grown = realloc(*buf, *cap * 2 + 1);
    if (!grown) {
        free(*buf);
        *buf = NULL;
        return false;
    }
    *buf = grown;
    *cap *= 2;
    return true;
}

char *
vpHookReadXML(int fd, size_t limit, size_t *len, bool *too_large, char *why, size_t whylen)
{
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap + 1);
    why[0] = '\0';
    *too_large = false;
    while (buf && grow(&buf, &cap, used)) {
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, whylen, "cannot read the domain XML on stdin: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > limit) {
            *too_large = true;
            snprintf(why, whylen,
                     "its domain XML of %zu bytes exceeds the %zu bytes vcpuplace reads",
                     drain(fd, used), limit);
            free(buf);
            return NULL;
        }
    }
    if (!buf) {
        snprintf(why, whylen, "cannot read the domain XML on stdin: out of memory");
        return NULL;
    }
    buf[used] = '\0';
    json_t *utf8 = used ? json_stringn(buf, used) : NULL;
    if (!utf8 || memchr(buf, '\0', used)) {
        json_decref(utf8);
        snprintf(why, whylen, "no usable domain XML on stdin (empty, NUL bytes or not UTF-8)");
        free(buf);
        return NULL;
    }
    json_decref(utf8);
    *len = used;
    return buf;
}

char *
vpHookRequest(const vpHookCall *call, const char *xml, size_t *len, char *why, size_t whylen)
{
    json_t *req =
        xml ? json_pack("{s:s, s:s, s:s}", "op", call->request, "name", call->domain, "xml", xml)
            : json_pack("{s:s, s:s}", "op", call->request, "name", call->domain);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    char *line = NULL;
    if (body && asprintf(&line, "%s\n", body) < 0)
        line = NULL;
    free(body);
    json_decref(req);
    if (!line)
        snprintf(why, whylen,
                 "cannot build the request (domain name or XML not UTF-8, or out of memory)");
    else
        *len = strlen(line);
    return line;
}
