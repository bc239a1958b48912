/*
 * Policy names and parsing. The names are the schema's (xml/vcpuplace.rng) and the key
 * file's; one table per attribute keeps names, enum values and the "one of ..." lists of
 * error messages from drifting apart.
 */
#include "core/model/policy.h"

#include <string.h>

typedef struct {
    const char *name;
    int value;
} vpPolicyName;

/* Listed in the order error messages show them (as DESIGN.md's table, for smt). */
static const vpPolicyName smtNames[] = {
    {"isolate", VP_SMT_ISOLATE},
    {"pack", VP_SMT_PACK},
    {"spread", VP_SMT_SPREAD},
    {"share", VP_SMT_SHARE},
    {NULL, 0},
};

static const vpPolicyName coreschedNames[] = {
    {"vm", VP_CORESCHED_VM},
    {"group", VP_CORESCHED_GROUP},
    {"off", VP_CORESCHED_OFF},
    {NULL, 0},
};

static const vpPolicyName localityNames[] = {
    {"auto", VP_LOCALITY_AUTO},       {"l3", VP_LOCALITY_L3},     {"numa", VP_LOCALITY_NUMA},
    {"package", VP_LOCALITY_PACKAGE}, {"host", VP_LOCALITY_HOST}, {NULL, 0},
};

static const vpPolicyName emulatorNames[] = {
    {"housekeeping", VP_EMULATOR_HOUSEKEEPING},
    {"vcpus", VP_EMULATOR_VCPUS},
    {"dedicated", VP_EMULATOR_DEDICATED},
    {NULL, 0},
};

static const vpPolicyName rebalanceNames[] = {
    {"auto", VP_REBALANCE_AUTO},
    {"off", VP_REBALANCE_OFF},
    {NULL, 0},
};

static const vpPolicyName unmetNames[] = {
    {"refuse", VP_UNMET_REFUSE},
    {"degrade", VP_UNMET_DEGRADE},
    {NULL, 0},
};

static const vpPolicyName cpusNames[] = {
    {"dedicated", VP_CPUS_DEDICATED},
    {"shared", VP_CPUS_SHARED},
    {NULL, 0},
};

static const vpPolicyName tenancyNames[] = {
    {"off", VP_TENANCY_OFF},
    {"nova", VP_TENANCY_NOVA},
    {"kubevirt", VP_TENANCY_KUBEVIRT},
    {"auto", VP_TENANCY_AUTO},
    {NULL, 0},
};

static const char *
vpPolicyNameOf(const vpPolicyName *table, int value)
{
    for (; table->name; table++) {
        if (table->value == value)
            return table->name;
    }
    return NULL;
}

static bool
vpPolicyLookup(const vpPolicyName *table, const char *field, const char *value, int *out,
               GError **error)
{
    g_autoptr(GString) choices = g_string_new(NULL);
    const vpPolicyName *entry;

    for (entry = table; entry->name; entry++) {
        if (strcmp(entry->name, value) == 0) {
            *out = entry->value;
            return true;
        }
    }
    for (entry = table; entry->name; entry++)
        g_string_append_printf(choices, "%s%s", entry == table ? "" : ", ", entry->name);
    if (table == localityNames)
        g_string_append_printf(choices, ", numa:N (N from 2 to %d)", VP_LOCALITY_SPLIT_MAX);
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='%s' is not one of %s", field, value,
                choices->str);
    return false;
}

void
vpPolicyInitDefaults(vpPolicy *policy)
{
    memset(policy, 0, sizeof(*policy));
    policy->smt = VP_SMT_SPREAD;
    policy->group = NULL;
    policy->coresched = VP_CORESCHED_VM;
    policy->locality = VP_LOCALITY_AUTO;
    policy->emulator = VP_EMULATOR_HOUSEKEEPING;
    policy->rebalance = VP_REBALANCE_AUTO;
    policy->unmet = VP_UNMET_REFUSE;
    policy->cpus = VP_CPUS_DEDICATED;
    policy->ratio = VP_RATIO_DEFAULT;
}

void
vpPolicyClear(vpPolicy *policy)
{
    g_clear_pointer(&policy->group, g_free);
}

void
vpPolicyCopy(vpPolicy *dst, const vpPolicy *src)
{
    char *group = g_strdup(src->group);

    g_free(dst->group);
    *dst = *src;
    dst->group = group;
}

const char *
vpSmtName(vpSmt v)
{
    return vpPolicyNameOf(smtNames, v);
}

const char *
vpCoreschedName(vpCoresched v)
{
    return vpPolicyNameOf(coreschedNames, v);
}

unsigned
vpLocalitySplit(vpLocality v)
{
    return v >= VP_LOCALITY_SPLIT + 2 && v <= VP_LOCALITY_SPLIT + VP_LOCALITY_SPLIT_MAX
               ? (unsigned)(v - VP_LOCALITY_SPLIT)
               : 0;
}

unsigned
vpLocalityCellVcpus(unsigned nvcpus, unsigned threads, unsigned cells, unsigned k)
{
    unsigned t = threads > 1 && nvcpus % threads == 0 ? threads : 1;
    unsigned cores = nvcpus / t;

    if (cells == 0 || cores < cells || k >= cells)
        return 0;
    return t * (cores / cells + (k < cores % cells));
}

const char *
vpLocalityName(vpLocality v)
{
    static const char *split[VP_LOCALITY_SPLIT_MAX + 1];
    unsigned n = vpLocalitySplit(v);

    if (!n)
        return vpPolicyNameOf(localityNames, v);
    if (!g_atomic_pointer_get(&split[n])) {
        g_autofree char *name = g_strdup_printf("numa:%u", n);

        g_atomic_pointer_set(&split[n], g_intern_string(name));
    }
    return g_atomic_pointer_get(&split[n]);
}

/* "numa:N" with N a whole number in [2, VP_LOCALITY_SPLIT_MAX], written without sign,
 * spaces or leading zeros, so that the name printed back is the name given. */
static bool
parseSplit(const char *value, int *out, GError **error)
{
    const char *digits = value + strlen("numa:");
    guint64 n = 0;

    if (*digits >= '1' && *digits <= '9' && strspn(digits, "0123456789") == strlen(digits) &&
        strlen(digits) <= 2)
        n = g_ascii_strtoull(digits, NULL, 10);
    if (n < 2 || n > VP_LOCALITY_SPLIT_MAX) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "locality='%s': N of numa:N must be a whole number from 2 to %d (the NUMA "
                    "nodes to split the VM over)",
                    value, VP_LOCALITY_SPLIT_MAX);
        return false;
    }
    *out = VP_LOCALITY_SPLIT + (int)n;
    return true;
}

const char *
vpEmulatorName(vpEmulator v)
{
    return vpPolicyNameOf(emulatorNames, v);
}

const char *
vpRebalanceName(vpRebalance v)
{
    return vpPolicyNameOf(rebalanceNames, v);
}

const char *
vpUnmetName(vpUnmet v)
{
    return vpPolicyNameOf(unmetNames, v);
}

const char *
vpTenancyName(vpTenancy v)
{
    return vpPolicyNameOf(tenancyNames, v);
}

const char *
vpCpusName(vpCpus v)
{
    return vpPolicyNameOf(cpusNames, v);
}

char *
vpRatioFormat(double ratio)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    return g_strdup(g_ascii_formatd(buf, sizeof(buf), "%g", ratio));
}

/* A decimal number above 0 and at most VP_RATIO_MAX, digits and one point only (no sign,
 * exponent or spaces), with at most 3 decimals: what Nova's cpu_allocation_ratio takes. */
static bool
parseRatio(const char *value, double *out, GError **error)
{
    const char *dot = strchr(value, '.');
    size_t len = strlen(value);
    bool ok = len > 0 && len <= 8 && strspn(value, "0123456789.") == len && value[0] != '.' &&
              value[len - 1] != '.' &&
              (!dot || (!strchr(dot + 1, '.') && len - (dot - value) <= 4));
    double v = ok ? g_ascii_strtod(value, NULL) : 0;

    if (!ok || v <= 0 || v > VP_RATIO_MAX) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "ratio='%s' is not a number above 0 and at most %g with at most 3 decimals "
                    "(vCPUs per CPU, as Nova's cpu_allocation_ratio)",
                    value, VP_RATIO_MAX);
        return false;
    }
    *out = v;
    return true;
}

bool
vpPolicyValidGroup(const char *group)
{
    size_t len;

    if (!group)
        return false;
    len = strlen(group);
    if (len < 1 || len > 64)
        return false;
    return strspn(group, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
           len;
}

bool
vpPolicySetDefault(vpPolicy *policy, const char *key, const char *value, GError **error)
{
    int v;

    if (strcmp(key, VP_TENANCY_KEY) != 0)
        return vpPolicySetAttr(policy, key, value, error);
    if (!vpPolicyLookup(tenancyNames, key, value, &v, error))
        return false;
    policy->tenancy = v;
    return true;
}

bool
vpPolicySetAttr(vpPolicy *policy, const char *field, const char *value, GError **error)
{
    int v;

    if (strcmp(field, "group") == 0) {
        if (!vpPolicyValidGroup(value)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "group='%s' is not 1 to 64 characters of A-Z a-z 0-9 . _ -", value);
            return false;
        }
        g_free(policy->group);
        policy->group = g_strdup(value);
        return true;
    }

    if (strcmp(field, "smt") == 0) {
        if (!vpPolicyLookup(smtNames, field, value, &v, error))
            return false;
        policy->smt = v;
    } else if (strcmp(field, "coresched") == 0) {
        if (!vpPolicyLookup(coreschedNames, field, value, &v, error))
            return false;
        policy->coresched = v;
    } else if (strcmp(field, "locality") == 0) {
        if (g_str_has_prefix(value, "numa:")
                ? !parseSplit(value, &v, error)
                : !vpPolicyLookup(localityNames, field, value, &v, error))
            return false;
        policy->locality = v;
    } else if (strcmp(field, "emulator") == 0) {
        if (!vpPolicyLookup(emulatorNames, field, value, &v, error))
            return false;
        policy->emulator = v;
    } else if (strcmp(field, "rebalance") == 0) {
        if (!vpPolicyLookup(rebalanceNames, field, value, &v, error))
            return false;
        policy->rebalance = v;
    } else if (strcmp(field, "unmet") == 0) {
        if (!vpPolicyLookup(unmetNames, field, value, &v, error))
            return false;
        policy->unmet = v;
    } else if (strcmp(field, "cpus") == 0) {
        if (!vpPolicyLookup(cpusNames, field, value, &v, error))
            return false;
        policy->cpus = v;
    } else if (strcmp(field, "ratio") == 0) {
        return parseRatio(value, &policy->ratio, error);
    } else {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "unknown policy attribute '%s' (known: smt, group, coresched, locality, "
                    "emulator, rebalance, unmet, cpus, ratio)",
                    field);
        return false;
    }
    return true;
}
