/* The base root: the host's system tree that every sandbox shows read-only
 * without a bind. mount.c binds it (/usr, and each top-level folder as a
 * link into /usr or a bind of its own), landlock.c lets programs run from
 * it when no exec allowlist is given, and the policy's intersection counts
 * it as visible read-only to a nested run. One table, so that the three
 * cannot disagree. /etc is not in it: the sandbox's /etc is built, not bound
 * (hostetc.c). */
#pragma once

static const char *const moat__base_system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
