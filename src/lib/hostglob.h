/* Host name patterns, as used by network rules and secret bindings:
 * "api.example.com" matches that one name, "*.example.com" matches any name
 * one or more labels below example.com (but not example.com itself). Pure
 * functions on already-normalised, lower-case names. */
#pragma once

#include "error.h"
#include "hostname.h"

#include <stdbool.h>

/* True when host is matched by pattern. A pattern that
 * moat_host_glob_check would refuse matches nothing, so a malformed rule can
 * never widen what is allowed. */
bool moat_host_glob_match(const char *pattern, const char *host);

/* 0 when pattern is a well-formed host or "*.suffix" pattern; otherwise
 * MOAT_EINPUT with a message saying what is wrong. Refused: anything that
 * matches too much ("*", "*.", "*.com"), wildcards anywhere but as the whole
 * first label ("**", "a*b", "foo.*.com"), upper case, and whatever
 * moat_host_name_problem refuses in a name (empty or over-long labels,
 * characters other than letters, digits, '-', '_' and '.'). */
int moat_host_glob_check(const char *pattern, moat_error *err);

/* 0 when name is a valid lower-case host name (no wildcard). */
int moat_host_name_check(const char *name, moat_error *err);
