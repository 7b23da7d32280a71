/* Landlock rules as data: what moat__landlock_apply will ask of the kernel,
 * computed from the configuration and the kernel's ABI without touching
 * anything, so it can be tested and explained. */
#pragma once

#include "config.h"
#include "error.h"

#include <stdint.h>

/* The highest ABI moat knows; a newer kernel is used at this level. */
#define MOAT_LANDLOCK_ABI_MAX 7
#define MOAT_LANDLOCK_MAX_RULES (MOAT_MAX_BINDS + 64)
/* The port of the egress relay inside the sandbox (see DESIGN.md). */
#define MOAT_PROXY_PORT 3128

typedef struct moat_ll_path_rule {
	const char *path; /* inside the sandbox; borrowed from the config or static */
	uint64_t access;
	bool optional;    /* a path missing in the sandbox is skipped */
} moat_ll_path_rule;

typedef struct moat_ll_plan {
	int abi;
	uint64_t handled_fs, scoped;
	moat_ll_path_rule paths[MOAT_LANDLOCK_MAX_RULES];
	size_t n_paths;
	bool exec_allowlist; /* exec limited to config->exec_allow */
} moat_ll_plan;

/* The running kernel's Landlock ABI, 0 when it has none (or it is off). */
int moat__landlock_abi(void);
/* Pure: fills *ret for the configuration on a kernel with this ABI. */
int moat__landlock_plan(const moat_config *c, int abi, moat_ll_plan *ret, moat_error *err);
/* "fs,scope": the rule classes a plan enforces. */
void moat__landlock_describe(const moat_ll_plan *p, char *buf, size_t len);
