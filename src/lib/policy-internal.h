/* Shared between the policy files (parse, emit, merge); not part of the
 * library's interface. */
#pragma once

#include "policy.h"
#include "units.h"

/* One row per key of the limits section: its name, how its value is
 * written, and where it lives in moat_limits. */
typedef struct moat__limit_desc {
	const char *key;
	moat_unit kind;
	size_t offset;
	unsigned bit; /* moat_limit_bit */
} moat__limit_desc;

extern const moat__limit_desc moat__limit_table[];
extern const size_t moat__limit_table_len;

static inline uint64_t *moat__limit_field(moat_limits *l, const moat__limit_desc *d)
{
	return (uint64_t *)((char *)l + d->offset);
}
static inline uint64_t moat__limit_get(const moat_limits *l, const moat__limit_desc *d)
{
	return *(const uint64_t *)((const char *)l + d->offset);
}

void moat__net_rule_clear(moat_net_rule *r);
bool moat__net_rule_copy(moat_net_rule *d, const moat_net_rule *s);
bool moat__net_rules_append(moat_net_rules *d, const moat_net_rule *r);

/* "ADDR/LEN" with the host bits clear: 0, -EINVAL when malformed, -EDOM
 * when bits are set after the prefix. addr is 16 bytes (IPv4 in the first
 * 4). */
int moat__cidr_parse(const char *s, int *ret_family, unsigned char ret_addr[16], unsigned *ret_len);

/* The built-in profiles, embedded at build time (scripts/embed-profiles.py). */
typedef struct moat__builtin_profile {
	const char *name;
	const char *text;
	size_t len;
} moat__builtin_profile;
extern const moat__builtin_profile moat__builtin_profiles[];
extern const size_t moat__builtin_profiles_len;

/* moat_policy_parse and moat_policy_load_file, optionally without checking
 * that host paths exist: a parent's policy names paths of the host outside,
 * which a nested run cannot see. */
int moat__policy_parse_ex(const char *buf, size_t len, const char *source, const char *dir, const char *home,
			  bool check_paths, moat_policy **ret, moat_error *err);
/* Checks p, the effective policy with the flags folded in, with every
 * check a policy file's fields get, messages naming the field ("hostname:
 * 'a b' (expected ...)") without a file position. */
int moat__policy_check(const moat_policy *p, moat_error *err);
int moat__policy_load_file_ex(const char *path, bool check_paths, moat_policy **ret, moat_error *err);
