/*
 * vcpuplaced.conf, read and checked in one place for vcpuplaced, vcpuplace-hook and the
 * CLI, so that the hook refuses exactly the files the daemon refuses, with the same words.
 *
 * libc and libinih only: the hook links it and must start fast. One table (conf.c) names
 * every group and key, its type and its allowed values or range; a file is accepted only
 * when every line is a comment, a [group] header or key=value that the table allows.
 *
 * Syntax (libinih's, with its options set in confread.c): `#` or `;` starts a comment line;
 * a value runs to the end of its line, with no inline comments and no escapes; a value
 * ending in whitespace is an error (naming the key and value), since `closed ` was meant
 * to be `closed` and no reading of it is safe; a key given again overrides (a line
 * appended to the file wins, as with GKeyFile); lists are `;`-separated, and one trailing `;` is
 * allowed (as GKeyFile allowed it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define VP_DEFAULT_URI "qemu:///system"
#define VP_DEFAULT_SOCKET VP_RUNSTATEDIR "/vcpuplace/vcpuplaced.sock"
#define VP_DEFAULT_CONFIG VP_SYSCONFDIR "/vcpuplace/vcpuplaced.conf"
#define VP_DEFAULT_STATE VP_LOCALSTATEDIR "/lib/vcpuplace/ledger.json"

/* Longest file read, and longest line in it. */
#define VP_CONF_MAX_FILE (1024 * 1024)
#define VP_CONF_MAX_LINE 16384

typedef enum {
    VP_CONF_TEXT,   /* any non-empty text */
    VP_CONF_PATH,   /* an absolute path */
    VP_CONF_FILE,   /* an absolute path that does not end in / */
    VP_CONF_CHOICE, /* one of choices */
    VP_CONF_UINT,   /* a whole number in [min, max], or 0 when zero_off */
    VP_CONF_UINTS,  /* comma-separated whole numbers, each in [min, max] */
    VP_CONF_NUMBER, /* a decimal number in [min, max], (min, max] when min_open */
    VP_CONF_CPUS,   /* a Linux CPU list (N, N-M, comma-separated, up to 65535), or choices */
    VP_CONF_GLOBS,  /* ;-separated non-empty patterns */
    VP_CONF_NAME,   /* 1 to 64 characters of A-Z a-z 0-9 . _ - */
} vpConfType;

typedef struct {
    const char *group;
    const char *key;
    vpConfType type;
    const char *choices; /* "a, b, c": CHOICE's values, CPUS's words */
    double min, max;
    bool min_open;
    bool zero_off;
    const char *unit; /* "milliseconds", "seconds": said in the range message */
    const char *def;  /* the built-in default as it would be written; NULL: none */
    int split_max;    /* CHOICE: also "numa:N", N in 2..split_max (core/model/policy.h's split) */
} vpConfKey;

/* The table, ending with a NULL key. */
extern const vpConfKey vpConfKeys[];

typedef struct vpConf vpConf;

/* Reads and checks path. A missing file is an empty configuration when missing_ok.
 * NULL on any error, with *error (free() it) "PATH:LINE: what", naming group, key and
 * value where there is one. */
vpConf *vpConfLoad(const char *path, bool missing_ok, char **error);
/* The same on text in memory, named path in messages. */
vpConf *vpConfParse(const char *path, const char *text, size_t len, char **error);
/* For the hook, which must not refuse a start because of a file it cannot read: what
 * vpConfLoad() returns, else (with *error set all the same) the [daemon] lines that are
 * right on their own, the others left at their defaults (all of them when the file cannot
 * be read); NULL when out of memory. */
vpConf *vpConfSalvage(const char *path, bool missing_ok, char **error);
void vpConfFree(vpConf *conf);

/* The file read; NULL when it was missing. */
const char *vpConfPath(const vpConf *conf);
/* The value as written, else the table's default (NULL: none). group and key must be in
 * the table. */
const char *vpConfGet(const vpConf *conf, const char *group, const char *key);
/* Whether the file sets the key; *line: where. */
bool vpConfHas(const vpConf *conf, const char *group, const char *key, int *line);
/* The value or default of a UINT, NUMBER key, as checked at load. */
unsigned long long vpConfGetUint(const vpConf *conf, const char *group, const char *key);
double vpConfGetNumber(const vpConf *conf, const char *group, const char *key);
/* The index of value among a CHOICE key's choices (value or default); -1: none. */
int vpConfGetChoice(const vpConf *conf, const char *group, const char *key);

/* The keys set in one group, in file order: *key and *value for i < vpConfCount(). */
size_t vpConfCount(const vpConf *conf, const char *group);
void vpConfAt(const vpConf *conf, const char *group, size_t i, const char **key,
              const char **value);

/* A GLOBS value split: a NULL-terminated array (free with vpConfListFree). */
char **vpConfList(const char *value);
void vpConfListFree(char **list);
/* Whether name is one of the domains a `domains` list (NULL: every domain) manages: '*'
 * stands for any run of characters, '?' for one, the rest for itself. The daemon and the
 * hook ask this one rule. */
bool vpConfManages(char *const *globs, const char *name);

/* Whether text is a Linux CPU list as CPUS keys take it. */
bool vpConfCpuListValid(const char *text);
