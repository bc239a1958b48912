/*
 * vcpuplaced's log lines about one domain: "domain NAME: ...", with the name also in the
 * VCPUPLACE_DOMAIN field, so that `journalctl VCPUPLACE_DOMAIN=NAME` finds them all.
 * The tree logs one way: GLib structured logging, this or g_log_structured(G_LOG_DOMAIN, ...).
 */
#pragma once

#include <glib.h>

void vpLogDomain(GLogLevelFlags level, const char *name, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
