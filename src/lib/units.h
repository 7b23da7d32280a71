/* Parsers for the value types shared by the command line and policy files:
 * sizes, durations, counts, CPU shares. Pure functions; each rejects
 * anything it cannot read one way only (no silent truncation, no overflow,
 * no trailing garbage). */
#pragma once

#include "error.h"

#include <stdint.h>

/* "512", "512K", "64M", "1G", "2T", also "1.5G", "512MiB", "512MB" (powers of
 * 1024 all). Result in bytes; "unlimited" gives MOAT_UNLIMITED. */
int moat_parse_size(const char *s, uint64_t *ret, moat_error *err);
/* "300ms", "10s", "5m", "1h", "1.5s"; a bare number means seconds.
 * Result in milliseconds; "unlimited" gives MOAT_UNLIMITED. */
int moat_parse_duration_ms(const char *s, uint64_t *ret, moat_error *err);
/* A non-negative integer count; "unlimited" gives MOAT_UNLIMITED. */
int moat_parse_count(const char *s, uint64_t *ret, moat_error *err);
/* "0.5", "2", "1.25" CPUs as thousandths. */
int moat_parse_cpus_milli(const char *s, uint64_t *ret, moat_error *err);

/* Human forms for help and explain: "256M", "10s". */
void moat_format_size(uint64_t bytes, char *buf, size_t len);
void moat_format_duration_ms(uint64_t ms, char *buf, size_t len);

/* How a limit's value is read and written. */
typedef enum moat_unit {
	MOAT_UNIT_DURATION, /* milliseconds: "10s", "1500ms" */
	MOAT_UNIT_SIZE,     /* bytes: "256M" */
	MOAT_UNIT_COUNT,    /* a plain number: "64" */
	MOAT_UNIT_CPUS,     /* thousandths of a CPU: "1.0", "0.500" */
} moat_unit;
/* The one form a limit's value takes everywhere: in a policy written out
 * (so its hash), in `policy explain` and in every message about a limit;
 * MOAT_UNLIMITED is "unlimited". */
void moat_format_limit(moat_unit unit, uint64_t v, char *buf, size_t len);

/* Resolves a path written in a policy file or on the command line to a clean
 * absolute path: "~" and "~/x" start at home, a relative path starts at
 * base_dir (the policy file's folder, or the current directory), and ".",
 * ".." and repeated slashes are folded lexically. "~user" is refused: whose
 * home that is depends on the machine reading the policy. Pure: nothing is
 * looked up on disk. *ret is untouched on failure. */
int moat_path_resolve(const char *path, const char *base_dir, const char *home, char **ret, moat_error *err);
