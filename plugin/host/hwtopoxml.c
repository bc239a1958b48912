/*
 * hwloc XML exports checked before hwloc (hwtopoxml.h). A scan of the start tags, not a
 * parse: hwloc parses, and refuses what is not XML; this only bounds the values hwloc
 * takes without a limit.
 */
#include "host/hwtopoxml.h"
#include "core/model/error.h"
#include "core/model/topology.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 64 PiB: more memory than any node has; "-1" wrapped is 16 EiB. */
#define VP_HWTOPO_MAX_MEMORY (G_GUINT64_CONSTANT(1) << 56)

char *
vpHwtopoXMLRead(const char *path, gsize *len, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    if (fd < 0 || fstat(fd, &st) < 0)
        why = g_strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_size > VP_HWTOPO_XML_MAX)
        why = "larger than 64 MiB";
    g_autofree char *text = why ? NULL : g_malloc(st.st_size + 1);
    if (text && read(fd, text, st.st_size) != st.st_size)
        why = "short read";
    else if (text && memchr(text, '\0', st.st_size))
        why = "a NUL byte inside (not an XML export)";
    if (fd >= 0)
        close(fd);
    if (why) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "topology '%s': %s", path, why);
        return NULL;
    }
    text[st.st_size] = '\0';
    *len = st.st_size;
    return g_steal_pointer(&text);
}

/* The value of attribute name in the tag [tag, end), or NULL. */
static char *
attrValue(const char *tag, const char *end, const char *name)
{
    gsize n = strlen(name);
    for (const char *p = tag + 1; p + n + 2 < end; p++) {
        if (!g_ascii_isspace(p[-1]) || strncmp(p, name, n) != 0 || p[n] != '=' ||
            (p[n + 1] != '"' && p[n + 1] != '\''))
            continue;
        const char *v = p + n + 2, *close = memchr(v, p[n + 1], end - v);
        return close ? g_strndup(v, close - v) : NULL;
    }
    return NULL;
}

static gboolean
numberBelow(const char *value, guint64 limit)
{
    guint64 v;
    return value[0] && strspn(value, "0123456789") == strlen(value) &&
           g_ascii_string_to_unsigned(value, 10, 0, limit - 1, &v, NULL);
}

/* hwloc's bitmap text as its exports write it: comma-separated words of up to 8 hex digits,
 * each 0x-prefixed or bare, a run of zero words left empty (",,") but never the first, an
 * infinite set starting 0xf...f. hwloc 2.9's reader asserts (or, built without assertions,
 * writes out of bounds) on a first word that is empty or not a number. */
static gboolean
bitmapText(const char *value)
{
    if (g_str_has_prefix(value, "0xf...f"))
        value += strlen("0xf...f");
    else if (*value == ',' || *value == '\0')
        return FALSE;
    else
        value--;
    do {
        value++;
        bool prefixed = value[0] == '0' && value[1] == 'x';
        value += prefixed ? 2 : 0;
        gsize digits = strspn(value, "0123456789abcdefABCDEF");
        if (digits > 8 || (digits == 0 && (prefixed || (*value != ',' && *value != '\0'))))
            return FALSE;
        value += digits;
    } while (*value == ',');
    return *value == '\0';
}

static const char *const vpHwtopoBitmaps[] = {"cpuset",  "complete_cpuset",  "allowed_cpuset",
                                              "nodeset", "complete_nodeset", "allowed_nodeset"};

static gboolean
checkBitmaps(const char *tag, const char *end, const char *path, GError **error)
{
    for (gsize i = 0; i < G_N_ELEMENTS(vpHwtopoBitmaps); i++) {
        g_autofree char *value = attrValue(tag, end, vpHwtopoBitmaps[i]);
        if (value && !bitmapText(value)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "topology '%s': %s='%.24s' is not an hwloc bitmap (0x words, commas)", path,
                        vpHwtopoBitmaps[i], value);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
checkObject(const char *tag, const char *end, const char *path, guint *pus, GError **error)
{
    g_autofree char *type = attrValue(tag, end, "type");
    g_autofree char *os = attrValue(tag, end, "os_index");
    g_autofree char *memory = attrValue(tag, end, "local_memory");
    gboolean numbered = g_strcmp0(type, "PU") == 0 || g_strcmp0(type, "NUMANode") == 0;
    *pus += g_strcmp0(type, "PU") == 0;
    if (!checkBitmaps(tag, end, path, error))
        return FALSE;
    if (numbered && os && !numberBelow(os, VP_TOPOLOGY_MAX_CPUS)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology '%s': %s os_index='%.24s' is not a number below %d", path, type, os,
                    VP_TOPOLOGY_MAX_CPUS);
        return FALSE;
    }
    if (memory && !numberBelow(memory, VP_HWTOPO_MAX_MEMORY)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology '%s': local_memory='%.24s' is not a number of bytes below 2^56", path,
                    memory);
        return FALSE;
    }
    return TRUE;
}

gboolean
vpHwtopoXMLCheck(const char *text, const char *path, guint *pus, GError **error)
{
    *pus = 0;
    for (const char *tag = strstr(text, "<object"); tag; tag = strstr(tag + 1, "<object")) {
        const char *end = strchr(tag, '>');
        if (!end)
            break;
        if (!checkObject(tag, end, path, pus, error))
            return FALSE;
    }
    return TRUE;
}
