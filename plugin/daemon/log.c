#include "daemon/log.h"

void
vpLogDomain(GLogLevelFlags level, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_log_structured(G_LOG_DOMAIN, level, "VCPUPLACE_DOMAIN", name, "MESSAGE", "domain %s: %s",
                     name, msg);
}
