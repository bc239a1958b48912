/* Result lines on stdout, flushed each time: the guest may be powered off any moment. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>

static const char *reportProgram = "?";
static unsigned reportPassed;
static unsigned reportFailed;

void
vpgBegin(const char *program)
{
    reportProgram = program;
}

bool
vpgCheck(bool ok, const char *check, const char *fmt, ...)
{
    g_autofree char *detail = NULL;
    va_list ap;

    va_start(ap, fmt);
    detail = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* A newline inside the detail would break the one-line protocol. */
    g_strdelimit(detail, "\r\n", ' ');
    printf("VPGUEST %s %s.%s %s\n", ok ? "ok" : "fail", reportProgram, check, detail);
    fflush(stdout);
    if (ok)
        reportPassed++;
    else
        reportFailed++;
    return ok;
}

void
vpgFigure(const char *name, const char *fmt, ...)
{
    g_autofree char *value = NULL;
    va_list ap;

    va_start(ap, fmt);
    value = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    printf("VPGUEST figure %s.%s %s\n", reportProgram, name, value);
    fflush(stdout);
}

int
vpgEnd(void)
{
    if (reportPassed + reportFailed == 0)
        vpgCheck(false, "checks", "no check was made");
    return reportFailed ? 1 : 0;
}
