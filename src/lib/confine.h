/* The last steps in the sandboxed command's process before execve, each in
 * its own file: capabilities (caps.c), seccomp (seccomp.c), Landlock
 * (landlock.c). They run after the rootfs exists and the process is in every
 * namespace. Each fills what it actually enforced into *iso. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

#include <linux/filter.h>

/* no_new_privs, empty bounding/ambient/inheritable/permitted/effective sets,
 * locked securebits. */
int moat__caps_drop(moat_isolation *iso, moat_error *err);
/* The profile whose seccomp filter and per-namespace limits a run gets:
 * the config's built-in profile, else "agent" for a policy with egress (its
 * tools list interfaces and watch files), else "code". */
const char *moat__confine_profile(const moat_config *c);
/* The seccomp filter of a profile, compiled to BPF once (per sandbox) and
 * loaded into each command's process: building it with libseccomp costs
 * more CPU than all the rest of a command's confinement together. */
typedef struct moat_seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
	unsigned rules;
	char profile[16];
} moat_seccomp_prog;
/* Builds and compiles the filter for the config's profile into *ret
 * (release with moat__seccomp_prog_done). Loads nothing. */
int moat__seccomp_compile(const moat_config *c, moat_seccomp_prog *ret, moat_error *err);
/* Loads a compiled filter into this process as libseccomp's seccomp_load
 * does with moat's attributes: no_new_privs, then the filter, no flags. */
int moat__seccomp_load(const moat_seccomp_prog *p, moat_isolation *iso, moat_error *err);
void moat__seccomp_prog_done(moat_seccomp_prog *p);
/* Compiles and loads the seccomp filter for the profile ("code" or
 * "agent"). */
int moat__seccomp_apply(const moat_config *c, moat_isolation *iso, moat_error *err);
/* Landlock filesystem rules mirroring the mounts, TCP rules, scoping. */
int moat__landlock_apply(const moat_config *c, moat_isolation *iso, moat_error *err);
