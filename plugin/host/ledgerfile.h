/*
 * The ledger on disk: the daemon's state file, and the CLI's --ledger files. The text is
 * core/model/ledger.h's; this module only reads, writes and moves files.
 */
#pragma once

#include "core/model/ledger.h"

/* Atomic: temp file in the same directory, fsync, rename, fsync the directory. Mode 0600. */
gboolean vpLedgerFileSave(const vpLedger *ledger, const char *path, GError **error);
/* The same for a ledger's text (vpLedgerToText), which may be taken under a lock the
 * write then need not hold. */
gboolean vpLedgerFileWrite(const char *text, const char *path, GError **error);
/* A missing file is an empty ledger; a corrupt or truncated one is an error naming it. */
vpLedger *vpLedgerFileLoad(const vpTopology *topo, const char *path, GError **error);
/* Removes what a save killed midway leaves beside path (GLib's temporary "NAME.XXXXXX"
 * files); returns how many were removed. Run before anything saves. */
guint vpLedgerFileClearTemporaries(const char *path);
/* Moves an unreadable ledger out of the way (PATH.unreadable-SECONDS), so that the next save
 * does not destroy what an operator may want to look at; returns the new name. */
char *vpLedgerFileSetAside(const char *path, GError **error);
/* Creates the directory that holds path (mode 0700) when it is missing. */
gboolean vpLedgerFileMakeDir(const char *path, GError **error);
