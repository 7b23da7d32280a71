#include "hostglob.h"
#include "netaddr.h"

#include <string.h>

/* Validates a dot-separated name without wildcards. On failure returns a
 * static description of the problem. labels receives the label count, and
 * numeric_tld whether the last label is all digits (an IPv4 address, not a
 * domain). What a valid name is comes from moat_host_name_problem, the
 * check the normaliser makes of every request's host: a pattern and the
 * names it is matched against must agree, or "*.internal.example" would
 * miss "a_b.internal.example", a name a request can carry. Only the
 * pattern's own mistakes (a misplaced '*', upper case) are told here. */
static const char *name_problem(const char *name, unsigned *ret_labels, bool *ret_numeric_tld)
{
	size_t len = strlen(name);
	unsigned labels = 1;
	bool numeric = true;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];
		if (ch == '*')
			return "'*' is only allowed as the whole first label, as in *.example.com";
		if (ch >= 'A' && ch <= 'Z')
			return "upper-case letter (host names are compared in lower case)";
		if (ch == '.') {
			labels++;
			numeric = true;
		} else if (ch < '0' || ch > '9') {
			numeric = false;
		}
	}
	const char *p = moat_host_name_problem(name, len);
	if (p)
		return p;
	if (ret_labels)
		*ret_labels = labels;
	if (ret_numeric_tld)
		*ret_numeric_tld = numeric;
	return NULL;
}

static const char *glob_problem(const char *pattern)
{
	if (!pattern || !pattern[0])
		return "empty host pattern";
	if (strcmp(pattern, "*") == 0)
		return "'*' would match every host";
	if (pattern[0] == '*' && pattern[1] == '*')
		return "'**' is not a pattern; use *.example.com";
	/* An IPv6 address in brackets, as a URL writes it ([::1]): what the
	 * gateway's rules take, in a policy file as on the command line. */
	size_t len = strlen(pattern);
	moat_addr a;
	if (pattern[0] == '[' && len > 2 && pattern[len - 1] == ']')
		return moat_addr_parse(pattern, len, &a) == 0 ? NULL : "not an IPv6 address in brackets";
	if (pattern[0] != '*')
		return name_problem(pattern, NULL, NULL);
	if (pattern[1] != '.')
		return "'*' is only allowed as the whole first label, as in *.example.com";
	if (pattern[2] == '\0')
		return "'*.' would match every host";
	unsigned labels = 0;
	bool numeric = false;
	const char *p = name_problem(pattern + 2, &labels, &numeric);
	if (p)
		return p;
	/* "*.com" covers a whole top-level domain; that is almost always a
	 * mistake and never a review-able rule. */
	if (labels < 2)
		return "a wildcard over a single label (like *.com) matches too much";
	if (numeric)
		return "a wildcard over an IP address is not a host pattern";
	return NULL;
}

int moat_host_glob_check(const char *pattern, moat_error *err)
{
	const char *p = glob_problem(pattern);
	if (p)
		return moat_error_set(err, MOAT_EINPUT, "host pattern '%s': %s", pattern ? pattern : "", p);
	return 0;
}

int moat_host_name_check(const char *name, moat_error *err)
{
	const char *p = name ? name_problem(name, NULL, NULL) : "empty host name";
	if (p)
		return moat_error_set(err, MOAT_EINPUT, "host name '%s': %s", name ? name : "", p);
	return 0;
}

bool moat_host_glob_match(const char *pattern, const char *host)
{
	if (glob_problem(pattern) || !host || name_problem(host, NULL, NULL))
		return false;
	if (pattern[0] != '*')
		return strcmp(pattern, host) == 0;
	/* "*.example.com": the host must end in ".example.com" with at least
	 * one more (valid, hence non-empty) label in front. */
	const char *suffix = pattern + 1; /* ".example.com" */
	size_t sl = strlen(suffix), hl = strlen(host);
	if (hl <= sl)
		return false;
	return strcmp(host + hl - sl, suffix) == 0;
}
