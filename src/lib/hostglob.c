#include "hostglob.h"

#include <string.h>

static bool is_ldh(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
}

/* Validates a dot-separated name without wildcards. On failure returns a
 * static description of the problem. labels receives the label count, and
 * numeric_tld whether the last label is all digits (an IPv4 address, not a
 * domain). */
static const char *name_problem(const char *name, unsigned *ret_labels, bool *ret_numeric_tld)
{
	size_t len = strlen(name);
	if (len == 0)
		return "empty host name";
	if (len > MOAT_HOST_MAX)
		return "host name longer than 253 characters";
	unsigned labels = 0;
	bool numeric = false;
	const char *s = name;
	for (;;) {
		const char *e = strchr(s, '.');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0)
			return "empty label (two dots in a row, or a leading or trailing dot)";
		if (n > MOAT_HOST_LABEL_MAX)
			return "label longer than 63 characters";
		numeric = true;
		for (size_t i = 0; i < n; i++) {
			char ch = s[i];
			if (ch == '*')
				return "'*' is only allowed as the whole first label, as in *.example.com";
			if (ch >= 'A' && ch <= 'Z')
				return "upper-case letter (host names are compared in lower case)";
			if (!is_ldh(ch))
				return "character other than a letter, digit, '-' or '.'";
			if (ch < '0' || ch > '9')
				numeric = false;
		}
		if (s[0] == '-' || s[n - 1] == '-')
			return "label starts or ends with '-'";
		labels++;
		if (!e)
			break;
		s = e + 1;
	}
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
