/*
 * The one unknown-key check for JSON objects read from outside (plans, ledgers, pressure
 * intervals, traces, outcomes), so that a typo is refused with the same message everywhere:
 * "unknown key 'KEY' in OBJECT".
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

/* The version of every JSON document vcpuplace writes, its top-level "format" member
 * (vcpuplace-json(7)): raised when a member changes meaning or name, never for an addition. */
#define VP_JSON_FORMAT 1

/* false, naming the first member of obj not in known (NULL-terminated) and object (what obj
 * is, as the user would find it: "policy", "vcpus[2]", "start event"). */
bool vpJsonCheckKeys(JsonObject *obj, const char *object, const char *const *known, GError **error);
