/* Host name patterns, as used by network rules and secret bindings:
 * "api.example.com" matches that one name, "*.example.com" matches any name
 * one or more labels below example.com (but not example.com itself). Pure
 * functions on already-normalised, lower-case names. */
#pragma once

#include "error.h"

#include <stdbool.h>

/* RFC 1035 limits: a name of at most 253 characters, labels of 1 to 63. */
#define MOAT_HOST_MAX 253
#define MOAT_HOST_LABEL_MAX 63

/* True when host is matched by pattern. A pattern that
 * moat_host_glob_check would refuse matches nothing, so a malformed rule can
 * never widen what is allowed. */
bool moat_host_glob_match(const char *pattern, const char *host);

/* 0 when pattern is a well-formed host or "*.suffix" pattern; otherwise
 * MOAT_EINPUT with a message saying what is wrong. Refused: anything that
 * matches too much ("*", "*.", "*.com"), wildcards anywhere but as the whole
 * first label ("**", "a*b", "foo.*.com"), empty labels, over-long names or
 * labels, upper case, and characters other than letters, digits, '-' and
 * '.'. */
int moat_host_glob_check(const char *pattern, moat_error *err);

/* 0 when name is a valid lower-case host name (no wildcard). */
int moat_host_name_check(const char *name, moat_error *err);
