/*
 * What vcpuplaced would do with the domains it does not place: every domain in report mode
 * ([daemon] mode=report), and in enforce mode a domain found running that the hook did not
 * admit while adopt_running=no. Nothing here pins, records or refuses: an operator reads
 * the report (`vcpuplace status`) before switching to enforce.
 *
 * Each domain is placed against the ledger and the other reported domains' would-be
 * plans, so that the report reads as one placement of them all, as enforce would make it.
 */
#pragma once

#include "daemon/config.h"
#include "daemon/manager.h"

typedef struct _vpReport vpReport;

vpReport *vpReportNew(void);
void vpReportFree(vpReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpReport, vpReportFree)

/* Places req (the domain called name) on paper; why says why it is reported, not placed.
 * Logged when what would happen changed. */
void vpReportDomain(vpReport *r, const vpManager *mgr, const char *name, const vpRequest *req,
                    const char *why);
/* A sync of the running domain name, its request req (NULL: unreadable, err says why): TRUE
 * when it is reported instead, or left as it is, and the sync is done. It is synced (FALSE)
 * when vcpuplaced recorded it (in report mode only to record its own <cputune> pins), and
 * when it has no record in enforce mode with adopt_running=yes; the hook reserves a start
 * it admits, so such a start has a record. */
gboolean vpReportInstead(vpReport *r, const vpManager *mgr, const vpConfig *cfg, const char *name,
                         const vpRequest *req, const GError *err);
/* The domain stopped, or vcpuplaced placed it after all. */
void vpReportForget(vpReport *r, const char *name);
/* Forgets every domain (a full sync reports anew). */
void vpReportReset(vpReport *r);
guint vpReportCount(const vpReport *r);
/* The status document's "reported": [{domain, why, plan, refused}], sorted by domain; one
 * domain when name is not NULL. */
JsonNode *vpReportJson(const vpReport *r, const vpManager *mgr, const char *name);
