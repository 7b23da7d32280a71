/* moatd's warm pool, its pure half: the `pool:` configuration and the
 * decision whether a run request can take a pooled sandbox (pool.c does
 * the rest). A function of its input only, for the unit tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* At most this many profiles are pooled, and this many sandboxes kept
 * ready per profile: each is a keeper and a sandbox's init, so the cap
 * bounds what an idle moatd keeps alive on the host. */
#define MOATD_POOL_MAX_PROFILES 8
#define MOATD_POOL_MAX_SIZE 64
#define MOATD_POOL_PROFILE_MAX 32

typedef struct moatd_pool_conf {
	size_t n;
	struct {
		char profile[MOATD_POOL_PROFILE_MAX + 1];
		unsigned size;
		uint64_t wall_ms;      /* the profile's own limits.wall (moatd enforces it) */
		uint64_t output_bytes; /* and its limits.output (moatd counts it) */
	} e[MOATD_POOL_MAX_PROFILES];
} moatd_pool_conf;

struct json_t;
/* Parses `pool: {PROFILE: COUNT, ...}`: each key a built-in profile,
 * each count 0 to MOATD_POOL_MAX_SIZE. MOAT_EINPUT naming the field
 * (pool.NAME) otherwise. */
int moatd_pool_conf_parse(struct json_t *v, moatd_pool_conf *ret, moat_error *err);

/* What a pooled run needs from its request. */
typedef struct moatd_pool_plan {
	int profile;         /* index into the configuration's entries */
	uint64_t time_ms;    /* the wall limit moatd enforces */
	uint64_t output_bytes; /* the output limit moatd enforces */
	const char *cwd;     /* NULL: the sandbox's default */
	const char *env[64 + 1]; /* NAME=VALUE, pointing into the request's options */
	size_t n_env;
	const char *why_cold; /* when it cannot be pooled: why (for the log and metrics) */
} moatd_pool_plan;

/* Whether a run of options opts (moatd's decoded "--name=value" list),
 * with or without an inline policy and files to place, can take a
 * sandbox of a pooled profile. A pooled sandbox is made ahead to its
 * profile's policy, so only what is set per command can differ: the
 * environment, the working directory and the wall time (which moatd
 * enforces). Anything else (a limit held by the cgroup or by rlimits,
 * binds, network hosts, an inline policy, files to place read-only)
 * needs a sandbox made for it: a cold one. Returns true and fills ret
 * with what to spawn; false with ret->why_cold. */
bool moatd_pool_plan_run(const moatd_pool_conf *c, char *const *opts, bool has_policy, size_t n_files,
			 moatd_pool_plan *ret);
