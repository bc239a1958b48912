/*
 * What conf.c (the table, the lookups) and confread.c (reading a file) share; not for other
 * directories, which use conf.h.
 */
#pragma once

#include "conf/conf.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const vpConfKey *key;
    char *value;
    int line;
} vpConfEntry;

struct vpConf {
    char *path;
    vpConfEntry *entries;
    size_t n;
};

/* The groups the table uses, ending with NULL. */
extern const char *const vpConfGroups[];

/* The table's entry for group and key; NULL when it has none. */
const vpConfKey *vpConfFindKey(const char *group, const char *key);
/* The file's line for key k; NULL when the file does not set it. */
vpConfEntry *vpConfFindEntry(const vpConf *conf, const vpConfKey *k);
/* Whether value is one of choices ("a, b, c"); *index (when not NULL): which. */
bool vpConfChoiceIndex(const char *choices, const char *value, int *index);
/* A decimal number, whatever the process's locale; false when s is not one. */
bool vpConfParseNumber(const char *s, double *out);
