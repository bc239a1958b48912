/*
 * Result lines of the guest tier's programs. The guest's only channel to the host is the
 * serial console, shared with the kernel's messages, so every result is one line with a
 * fixed prefix that scripts/guest-run picks out:
 *   VPGUEST ok PROGRAM.CHECK [detail]
 *   VPGUEST fail PROGRAM.CHECK detail
 *   VPGUEST figure PROGRAM.NAME value [unit]
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

/* Names the program whose checks follow. */
void vpgBegin(const char *program);
/* Reports one check; detail says what was seen (printf format). Returns ok. */
bool vpgCheck(bool ok, const char *check, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Reports a measured figure, not a pass/fail result (printf format). */
void vpgFigure(const char *name, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Exit status for main(): 1 when any check failed or none was made. */
int vpgEnd(void);
