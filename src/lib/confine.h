/* The last steps in the sandboxed command's process before execve, each in
 * its own file: capabilities (caps.c), seccomp (seccomp.c), Landlock
 * (landlock.c). They run after the rootfs exists and the process is in every
 * namespace. Each fills what it actually enforced into *iso. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

/* no_new_privs, empty bounding/ambient/inheritable/permitted/effective sets,
 * locked securebits. */
int moat__caps_drop(moat_isolation *iso, moat_error *err);
/* The profile whose seccomp filter and per-namespace limits a run gets:
 * the config's built-in profile, else "agent" for a policy with egress (its
 * tools list interfaces and watch files), else "code". */
const char *moat__confine_profile(const moat_config *c);
/* Loads the seccomp filter for the profile ("code" or "agent"). */
int moat__seccomp_apply(const moat_config *c, moat_isolation *iso, moat_error *err);
/* Landlock filesystem rules mirroring the mounts, TCP rules, scoping. */
int moat__landlock_apply(const moat_config *c, moat_isolation *iso, moat_error *err);
