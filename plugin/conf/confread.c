/*
 * vcpuplaced.conf: libinih splits the lines; this file says which lines are allowed. The
 * reader hands libinih one line at a time from the file read whole, so that every message
 * can name its line and quote the value as written (libinih strips what ends a value).
 */
#include "conf/conf.h"
#include "conf/confpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

/* Pairs whose first must not exceed the second, as the pressure model and the rebalancer
 * require. */
static const struct {
    const char *group, *low, *high, *says;
} orders[] = {
    {"rebalance", "cool_wait", "hot_wait", "must not be above"},
    {"rebalance", "min_residency", "memory", "must not be above"},
};

typedef struct {
    const char *path;
    const char *text;
    size_t len, pos;
    int line;
    const char *raw; /* the current line, without its newline */
    size_t rawlen;
    vpConf *conf;
    char *error;
} Parser;

static void __attribute__((format(printf, 2, 3))) fail(Parser *p, const char *fmt, ...)
{
    if (p->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *what = NULL;
    if (vasprintf(&what, fmt, ap) < 0)
        what = NULL;
    va_end(ap);
    if (asprintf(&p->error, "%s:%d: %s", p->path, p->line, what ? what : "out of memory") < 0)
        p->error = NULL;
    free(what);
}

static bool
knownGroup(const char *name, size_t len)
{
    for (const char *const *g = vpConfGroups; *g; g++) {
        if (strlen(*g) == len && strncmp(*g, name, len) == 0)
            return true;
    }
    return false;
}

static bool
isBlank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* libinih reports group headers only through the keys under them: an unknown group with no
 * keys would pass unseen, so headers are looked at as they go by. */
static void
checkHeader(Parser *p)
{
    const char *s = p->raw, *end = p->raw + p->rawlen;
    while (s < end && isBlank(*s))
        s++;
    if (s == end || *s != '[')
        return;
    const char *close = memchr(s, ']', end - s);
    if (!close)
        return; /* libinih reports it */
    if (!knownGroup(s + 1, close - s - 1))
        fail(p, "unknown group [%.*s] (known: daemon, policy, rebalance)", (int)(close - s - 1),
             s + 1);
}

static char *
readLine(char *str, int num, void *stream)
{
    Parser *p = stream;
    if (p->error || p->pos >= p->len)
        return NULL;
    const char *start = p->text + p->pos;
    const char *nl = memchr(start, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - start) + 1 : p->len - p->pos;
    p->line++;
    if (n + 1 > (size_t)num) {
        fail(p, "line is longer than %d bytes", num - 2);
        return NULL;
    }
    memcpy(str, start, n);
    str[n] = '\0';
    p->pos += n;
    p->raw = start;
    p->rawlen = nl ? n - 1 : n;
    checkHeader(p);
    return p->error ? NULL : str;
}

/* The value as the line has it, from after its = (or :, which libinih also takes) and the
 * blanks that follow, to the end of the line. */
static const char *
rawValue(const Parser *p, int *len)
{
    const char *end = p->raw + p->rawlen;
    const char *s = p->raw;
    while (s < end && *s != '=' && *s != ':')
        s++;
    if (s < end)
        s++;
    while (s < end && isBlank(*s))
        s++;
    *len = (int)(end - s);
    return s;
}

/* N of "numa:N": digits without a leading zero, 2..max (as core/model/policy.c reads it). */
static bool
splitValid(const char *digits, int max)
{
    size_t n = strspn(digits, "0123456789");
    if (n == 0 || n > 2 || digits[n] || digits[0] == '0')
        return false;
    int v = atoi(digits);
    return v >= 2 && v <= max;
}

static bool
parseUint(const char *s, unsigned long long *out)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || s[n] || n > 12)
        return false;
    *out = strtoull(s, NULL, 10);
    return true;
}

static bool
validName(const char *v)
{
    size_t len = strlen(v);
    return len >= 1 && len <= 64 &&
           strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

static void
checkRange(Parser *p, const vpConfKey *k, const char *v, bool whole)
{
    char range[96];
    if (whole && k->zero_off)
        snprintf(range, sizeof(range), "0 (off) or a whole number of %s in [%g, %g]", k->unit,
                 k->min, k->max);
    else
        snprintf(range, sizeof(range), "a %s%s%s in %c%g, %g]", whole ? "whole number" : "number",
                 k->unit ? " of " : "", k->unit ? k->unit : "", k->min_open ? '(' : '[', k->min,
                 k->max);
    fail(p, "[%s] %s='%s' is not %s", k->group, k->key, v, range);
}

static void
checkValue(Parser *p, const vpConfKey *k, const char *v)
{
    int index;
    unsigned long long u;
    double d;
    switch (k->type) {
    case VP_CONF_TEXT:
        break;
    case VP_CONF_PATH:
    case VP_CONF_FILE:
        if (v[0] != '/' || (k->type == VP_CONF_FILE && v[strlen(v) - 1] == '/'))
            fail(p, "[%s] %s='%s' is not an absolute %s", k->group, k->key, v,
                 k->type == VP_CONF_FILE ? "file path" : "path");
        break;
    case VP_CONF_CHOICE:
        if (k->split_max && strncmp(v, "numa:", 5) == 0) {
            if (!splitValid(v + 5, k->split_max))
                fail(p,
                     "[%s] %s='%s': N of numa:N must be a whole number from 2 to %d (the NUMA "
                     "nodes to split the VM over)",
                     k->group, k->key, v, k->split_max);
        } else if (!vpConfChoiceIndex(k->choices, v, &index)) {
            fail(p, "[%s] %s='%s' is not one of %s", k->group, k->key, v, k->choices);
        }
        break;
    case VP_CONF_UINT:
        if (!parseUint(v, &u) || (u < k->min && !(u == 0 && k->zero_off)) || u > k->max)
            checkRange(p, k, v, true);
        break;
    case VP_CONF_UINTS: {
        size_t i = 1;
        for (const char *s = v;; i++) {
            size_t n = strcspn(s, ","), lead = strspn(s, " \t"), len = n > lead ? n - lead : 0;
            char item[16] = "";
            while (len && (s[lead + len - 1] == ' ' || s[lead + len - 1] == '\t'))
                len--;
            if (len < sizeof(item))
                memcpy(item, s + lead, len);
            if (len >= sizeof(item) || !parseUint(item, &u) || u < k->min || u > k->max) {
                fail(p, "[%s] %s='%s': item %zu ('%.*s') is not a whole number in [%g, %g]",
                     k->group, k->key, v, i, (int)n, s, k->min, k->max);
                break;
            }
            if (!s[n])
                break;
            s += n + 1;
        }
        break;
    }
    case VP_CONF_NUMBER:
        if (!vpConfParseNumber(v, &d) || d < k->min || (k->min_open && d == k->min) || d > k->max)
            checkRange(p, k, v, false);
        break;
    case VP_CONF_CPUS:
        if (!vpConfChoiceIndex(k->choices, v, NULL) && !vpConfCpuListValid(v))
            fail(p, "[%s] %s='%s' is not a CPU list (e.g. 0-3,8)%s%s", k->group, k->key, v,
                 k->choices ? " or " : "", k->choices ? k->choices : "");
        break;
    case VP_CONF_GLOBS: {
        char **list = vpConfList(v);
        for (size_t i = 0; list && list[i]; i++) {
            if (!*list[i]) {
                fail(p, "[%s] %s='%s': pattern %zu is empty", k->group, k->key, v, i + 1);
                break;
            }
        }
        vpConfListFree(list);
        break;
    }
    case VP_CONF_NAME:
        if (!validName(v))
            fail(p, "[%s] %s='%s' is not 1 to 64 characters of A-Z a-z 0-9 . _ -", k->group, k->key,
                 v);
        break;
    }
}

static void
knownKeys(const char *group, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const vpConfKey *k = vpConfKeys; k->key && used < size; k++) {
        if (strcmp(k->group, group) == 0)
            used += snprintf(buf + used, size - used, "%s%s", used ? ", " : "", k->key);
    }
}

static int
onKey(void *user, const char *section, const char *name, const char *value)
{
    Parser *p = user;
    if (!*section) {
        fail(p, "key '%s' is outside any group (known: [daemon], [policy], [rebalance])", name);
        return 0;
    }
    const vpConfKey *k = vpConfFindKey(section, name);
    if (!k) {
        char known[512];
        knownKeys(section, known, sizeof(known));
        fail(p, "unknown key '%s' in [%s] (known: %s)", name, section, known);
        return 0;
    }
    int rawlen;
    const char *raw = rawValue(p, &rawlen);
    if (rawlen > 0 && isBlank(raw[rawlen - 1])) {
        fail(p, "[%s] %s='%.*s' ends in whitespace", section, name, rawlen, raw);
        return 0;
    }
    if (!*value) {
        fail(p, "[%s] %s is empty%s", section, name,
             k->type == VP_CONF_GLOBS ? " (leave it out to manage every domain)" : "");
        return 0;
    }
    checkValue(p, k, value);
    if (p->error)
        return 0;
    /* As with GKeyFile, a key given again overrides: a line appended to the file wins. */
    vpConfEntry *again = vpConfFindEntry(p->conf, k);
    if (again) {
        char *copy = strdup(value);
        if (!copy) {
            fail(p, "out of memory");
            return 0;
        }
        free(again->value);
        *again = (vpConfEntry){k, copy, p->line};
        return 1;
    }
    vpConfEntry *grown = realloc(p->conf->entries, (p->conf->n + 1) * sizeof(*grown));
    char *copy = strdup(value);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            p->conf->entries = grown;
        fail(p, "out of memory");
        return 0;
    }
    p->conf->entries = grown;
    p->conf->entries[p->conf->n++] = (vpConfEntry){k, copy, p->line};
    return 1;
}

/* The line libinih found wrong, quoted. */
static void
syntaxError(Parser *p, int line)
{
    const char *s = p->text, *end = p->text + p->len;
    for (int i = 1; i < line && s < end; i++) {
        const char *nl = memchr(s, '\n', end - s);
        s = nl ? nl + 1 : end;
    }
    const char *nl = memchr(s, '\n', end - s);
    int len = (int)((nl ? nl : end) - s);
    p->line = line;
    fail(p, "'%.*s' is not a [group] header, a key=value line or a comment", len > 80 ? 80 : len,
         s);
}

static void
checkOrders(Parser *p)
{
    for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
        const vpConfKey *lo = vpConfFindKey(orders[i].group, orders[i].low);
        const vpConfKey *hi = vpConfFindKey(orders[i].group, orders[i].high);
        vpConfEntry *elo = vpConfFindEntry(p->conf, lo), *ehi = vpConfFindEntry(p->conf, hi);
        const char *vlo = elo ? elo->value : lo->def, *vhi = ehi ? ehi->value : hi->def;
        double a = 0, b = 0;
        vpConfParseNumber(vlo, &a);
        vpConfParseNumber(vhi, &b);
        if (a <= b)
            continue;
        p->line = (elo ? elo->line : 0) > (ehi ? ehi->line : 0) ? elo->line : ehi->line;
        fail(p, "[%s] %s='%s' %s %s='%s'", orders[i].group, orders[i].low, vlo, orders[i].says,
             orders[i].high, vhi);
        return;
    }
}

/* Values become JSON strings and log lines: they must be text. The offset of the first
 * byte that is not UTF-8, or len. */
static size_t
utf8Prefix(const char *text, size_t len)
{
    size_t ascii = 0;
    while (ascii < len && !(text[ascii] & 0x80))
        ascii++;
    /* Loading the UTF-8 locale costs the hook a dozen system calls: only for what needs it. */
    if (ascii == len)
        return len;
    static locale_t utf8;
    if (!utf8)
        utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (!utf8)
        return len;
    locale_t old = uselocale(utf8);
    mbstate_t st = {0};
    size_t i = ascii;
    while (i < len) {
        size_t n = mbrtowc(NULL, text + i, len - i, &st);
        if (n == (size_t)-1 || n == (size_t)-2)
            break;
        i += n == 0 ? 1 : n;
    }
    uselocale(old);
    return i;
}

/* The line that holds offset. */
static int
lineOf(const char *text, size_t offset)
{
    int line = 1;
    for (size_t i = 0; i < offset; i++)
        line += text[i] == '\n';
    return line;
}

vpConf *
vpConfParse(const char *path, const char *text, size_t len, char **error)
{
    *error = NULL;
    vpConf *conf = calloc(1, sizeof(*conf));
    Parser p = {.path = path, .text = text, .len = len, .conf = conf};
    if (!conf || !(conf->path = strdup(path))) {
        free(conf);
        *error = strdup("out of memory");
        return NULL;
    }
    const char *nul = memchr(text, '\0', len);
    size_t text_len = nul ? (size_t)(nul - text) : len;
    size_t valid = utf8Prefix(text, text_len);
    if (valid < text_len) {
        p.line = lineOf(text, valid);
        fail(&p, "not UTF-8 text");
    } else if (nul) {
        p.line = lineOf(text, text_len);
        fail(&p, "NUL byte in the file");
    } else {
        /* Debian's libinih has its options as variables: these make it read GKeyFile's
         * syntax (no continuation lines, no inline comments: `;` separates list items). */
        ini_allow_multiline = false;
        ini_allow_inline_comments = false;
        ini_allow_no_value = false;
        ini_stop_on_first_error = true;
        ini_use_stack = false;
        ini_allow_realloc = false;
        ini_initial_alloc = VP_CONF_MAX_LINE + 2;
        int rc = ini_parse_stream(readLine, &p, onKey, &p);
        if (rc > 0 && !p.error)
            syntaxError(&p, rc);
        else if (rc < 0 && !p.error)
            fail(&p, "out of memory");
        if (!p.error)
            checkOrders(&p);
    }
    if (p.error) {
        *error = p.error;
        vpConfFree(conf);
        return NULL;
    }
    return conf;
}

static char *
readAll(const char *path, size_t *len, int *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        *err = errno;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        *err = EINVAL;
        return NULL;
    }
    char *buf = malloc(VP_CONF_MAX_FILE + 1);
    size_t n = 0;
    while (buf && n <= VP_CONF_MAX_FILE) {
        ssize_t r = read(fd, buf + n, VP_CONF_MAX_FILE + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0) {
                *err = errno;
                free(buf);
                buf = NULL;
            }
            break;
        }
        n += r;
    }
    close(fd);
    if (buf && n > VP_CONF_MAX_FILE) {
        free(buf);
        *err = EFBIG;
        return NULL;
    }
    if (!buf && !*err)
        *err = ENOMEM;
    *len = n;
    return buf;
}

vpConf *
vpConfLoad(const char *path, bool missing_ok, char **error)
{
    *error = NULL;
    size_t len = 0;
    int err = 0;
    char *text = readAll(path, &len, &err);
    if (!text) {
        if (missing_ok && err == ENOENT)
            return calloc(1, sizeof(vpConf));
        if (asprintf(error, "cannot read configuration %s: %s", path,
                     err == EINVAL  ? "not a regular file"
                     : err == EFBIG ? "larger than 1 MiB"
                                    : strerror(err)) < 0)
            *error = NULL;
        return NULL;
    }
    vpConf *conf = vpConfParse(path, text, len, error);
    free(text);
    return conf;
}

/* Whether line is a [group] header; *group (size n): its name. */
static bool
headerOf(const char *line, size_t len, char *group, size_t n)
{
    while (len && isBlank(*line))
        line++, len--;
    const char *close = len && *line == '[' ? memchr(line, ']', len) : NULL;
    if (!close || (size_t)(close - line - 1) >= n)
        return false;
    memcpy(group, line + 1, close - line - 1);
    group[close - line - 1] = '\0';
    return true;
}

vpConf *
vpConfSalvage(const char *path, bool missing_ok, char **error)
{
    vpConf *conf = vpConfLoad(path, missing_ok, error);
    if (conf || !*error)
        return conf;
    size_t len = 0;
    int err = 0;
    char *text = readAll(path, &len, &err);
    if (!text)
        return calloc(1, sizeof(vpConf));
    char *kept = malloc(len + 16);
    size_t used = 0;
    char group[64] = "";
    for (const char *s = text, *end = text + len; kept && s < end;) {
        const char *nl = memchr(s, '\n', end - s);
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        char header[64];
        if (headerOf(s, n, header, sizeof(header))) {
            strcpy(group, header);
        } else if (strcmp(group, "daemon") == 0 && n < VP_CONF_MAX_LINE && !memchr(s, '\0', n)) {
            /* The line alone, under [daemon], as the reader would take it. */
            char one[VP_CONF_MAX_LINE + 16];
            int olen = snprintf(one, sizeof(one), "[daemon]\n%.*s\n", (int)n, s);
            char *why = NULL;
            vpConf *alone = vpConfParse(path, one, olen, &why);
            if (alone && alone->n == 1) {
                memcpy(kept + used, s, n);
                used += n;
                kept[used++] = '\n';
            }
            vpConfFree(alone);
            free(why);
        }
        s += n + 1;
    }
    vpConf *salvaged = NULL;
    if (kept) {
        char *body = malloc(used + 16);
        if (body) {
            memcpy(body, "[daemon]\n", 9);
            memcpy(body + 9, kept, used);
            char *why = NULL;
            salvaged = vpConfParse(path, body, used + 9, &why);
            free(why);
            free(body);
        }
    }
    free(kept);
    free(text);
    return salvaged ? salvaged : calloc(1, sizeof(vpConf));
}
