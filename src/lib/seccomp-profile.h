/* The seccomp profiles, apart from loading them, so tests and `moat doctor`
 * can build and inspect a filter without confining themselves. */
#pragma once

#include "error.h"

#include <stdbool.h>

/* True for the built-in profile names ("code", "agent"). */
bool moat__seccomp_profile_known(const char *name);
/* Builds the filter for profile (NULL means "code") into *ret_ctx (a
 * libseccomp scmp_filter_ctx; release with moat__seccomp_free) and counts
 * its rules. Loads nothing. */
int moat__seccomp_build(const char *profile, void **ret_ctx, unsigned *ret_rules, moat_error *err);
void moat__seccomp_free(void *ctx);
