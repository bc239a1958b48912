/*
 * The plan reader's private header: planread.c reads a plan's members through the field
 * helpers of planfield.c (planread.c -> planfield.c). Each helper names the field as a path
 * ("vcpus[2].cpu", path the prefix before field) and the bad value in its error, and
 * fails with VP_ERROR_INVALID.
 */
#pragma once

#include <glib.h>
#include <hwloc.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

/* Linux CPU numbers above this are rejected before they reach a bitmap. */
#define VP_PLAN_MAX_CPU 65535
#define VP_PLAN_MAX_VCPUS 4096

/* obj's member field, or an error that it is missing. */
JsonNode *vpPlanMember(JsonObject *obj, const char *field, GError **error);
/* A member's JSON text for messages (caller frees). */
char *vpPlanShow(JsonNode *node);
/* An integer member within [min, max]. */
bool vpPlanGetInt(JsonObject *obj, const char *path, const char *field, gint64 min, gint64 max,
                  gint64 *out, GError **error);
/* A boolean member (missing is an error). */
bool vpPlanGetBool(JsonObject *obj, const char *field, bool *out, GError **error);
/* An index member that may be none: null (or -1, as before format 1) gives -1. */
bool vpPlanGetIndex(JsonObject *obj, const char *path, const char *field, gint64 max, gint64 *out,
                    GError **error);
/* name, or legacy where obj spells the member as before format 1. */
const char *vpPlanLegacyName(JsonObject *obj, const char *name, const char *legacy);
/* A string member (null allowed where nullable, then *out is NULL). */
bool vpPlanGetString(JsonObject *obj, const char *path, const char *field, bool nullable,
                     const char **out, GError **error);
/* An object member. */
JsonObject *vpPlanGetObject(JsonObject *obj, const char *field, GError **error);
/* A CPU list member ("" the empty set), CPUs up to VP_PLAN_MAX_CPU (caller frees). */
hwloc_bitmap_t vpPlanGetSet(JsonObject *obj, const char *field, GError **error);
