/* Host paths that a sandbox could have written. A folder given with --rw,
 * --out or a workspace is writable from inside, so a run can leave symbolic
 * links there for moat to follow later, with the caller's (often root's)
 * rights. Every host path moat opens, creates, chowns or binds is resolved
 * here instead of by the kernel's own walk: one component at a time with
 * openat2(RESOLVE_NO_SYMLINKS), following a symbolic link only when root
 * owns it. The caller then acts on the descriptor alone (fstat, fchown,
 * open_tree), never on the path again.
 *
 * Why root only, and not "root or the caller" as the kernel's
 * protected_symlinks reasons: a rootless sandbox writes as the caller's own
 * uid, so a link the caller owns may be one the sandbox planted. A link
 * owned by root can only have been made by root. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* How many symbolic links one resolution follows at most (the kernel's
 * own limit, MAXSYMLINKS). */
#define MOAT_HOSTPATH_MAX_LINKS 40

/* Pure: whether a symbolic link owned by uid may be followed. */
bool moat__hostpath_link_trusted(uid_t owner);

/* Pure: the error text for a refused link. what names the path's role
 * ("filesystem.out:", "policy"), path is what the user gave, link the link's
 * path as far as it was resolved. */
int moat__hostpath_refuse(moat_error *err, const char *what, const char *path, const char *link, uid_t owner);

/* Opens path (absolute, or relative to the working directory) with flags
 * (O_CLOEXEC and O_NOCTTY are always added) and mode for O_CREAT, never
 * following a symbolic link that root does not own, in any component. With
 * O_NOFOLLOW the last component may not be a link at all. Returns the descriptor, or a negative errno with err
 * naming what (the path's role) and the path. */
int moat__hostpath_open(const char *what, const char *path, int flags, mode_t mode, moat_error *err);
