#include "units.h"

#include "config.h"

#include <ctype.h>
#include <string.h>

/* Parses "INT[.FRAC]" into a value scaled by 10^9 (fixed point), so that
 * "1.5G" is exact and no floating point rounding can change a limit. */
static int parse_decimal(const char **p, uint64_t *int_part, uint64_t *frac_nano)
{
	const char *s = *p;
	uint64_t v = 0, f = 0;
	int digits = 0;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	while (isdigit((unsigned char)*s)) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
		s++;
	}
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		uint64_t scale = 100000000;
		while (isdigit((unsigned char)*s)) {
			if (++digits > 9)
				return -EINVAL; /* more precision than a nanounit */
			f += (uint64_t)(*s - '0') * scale;
			scale /= 10;
			s++;
		}
	}
	*int_part = v;
	*frac_nano = f;
	*p = s;
	return 0;
}

static int scale(uint64_t iv, uint64_t fn, uint64_t mult, uint64_t *ret)
{
	if (iv != 0 && mult > UINT64_MAX / iv)
		return -ERANGE;
	uint64_t a = iv * mult;
	/* fn / 1e9 * mult, computed without overflow for mult up to 2^40. */
	unsigned __int128 b = (unsigned __int128)fn * mult / 1000000000u;
	if ((unsigned __int128)a + b >= UINT64_MAX)
		return -ERANGE;
	*ret = a + (uint64_t)b;
	return 0;
}

static bool is_unlimited(const char *s)
{
	return strcmp(s, "unlimited") == 0 || strcmp(s, "none") == 0;
}

int moat_parse_size(const char *s, uint64_t *ret, moat_error *err)
{
	if (!s || !*s)
		return moat_error_set(err, MOAT_EINPUT, "empty size (expected a number with an optional K, M, G or T)");
	if (is_unlimited(s)) {
		*ret = MOAT_UNLIMITED;
		return 0;
	}
	const char *p = s;
	uint64_t iv, fn;
	int r = parse_decimal(&p, &iv, &fn);
	if (r < 0)
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a size (expected a number with an optional K, M, G or T)", s);
	uint64_t mult = 1;
	switch (*p) {
	case 'k': case 'K': mult = 1ull << 10; p++; break;
	case 'm': case 'M': mult = 1ull << 20; p++; break;
	case 'g': case 'G': mult = 1ull << 30; p++; break;
	case 't': case 'T': mult = 1ull << 40; p++; break;
	case 'b': case 'B': if (p[1] == '\0') p++; break;
	default: break;
	}
	if (mult > 1) {
		if (strcmp(p, "iB") == 0 || strcmp(p, "B") == 0 || strcmp(p, "b") == 0)
			p += strlen(p);
	}
	if (*p != '\0')
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a size (unknown unit '%s'; use K, M, G or T)", s, p);
	uint64_t v;
	if (scale(iv, fn, mult, &v) < 0)
		return moat_error_set(err, MOAT_EINPUT, "size '%s' is too large", s);
	if (mult == 1 && fn != 0)
		return moat_error_set(err, MOAT_EINPUT, "size '%s' is not a whole number of bytes", s);
	*ret = v;
	return 0;
}

int moat_parse_duration_ms(const char *s, uint64_t *ret, moat_error *err)
{
	if (!s || !*s)
		return moat_error_set(err, MOAT_EINPUT, "empty duration (expected e.g. 300ms, 10s, 5m, 1h)");
	if (is_unlimited(s)) {
		*ret = MOAT_UNLIMITED;
		return 0;
	}
	const char *p = s;
	uint64_t iv, fn;
	if (parse_decimal(&p, &iv, &fn) < 0)
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a duration (expected e.g. 300ms, 10s, 5m, 1h)", s);
	uint64_t mult;
	if (*p == '\0' || strcmp(p, "s") == 0)
		mult = 1000;
	else if (strcmp(p, "ms") == 0)
		mult = 1;
	else if (strcmp(p, "m") == 0 || strcmp(p, "min") == 0)
		mult = 60 * 1000;
	else if (strcmp(p, "h") == 0)
		mult = 3600 * 1000;
	else
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a duration (unknown unit '%s'; use ms, s, m or h)", s, p);
	uint64_t v;
	if (scale(iv, fn, mult, &v) < 0)
		return moat_error_set(err, MOAT_EINPUT, "duration '%s' is too large", s);
	if (mult == 1 && fn != 0)
		return moat_error_set(err, MOAT_EINPUT, "duration '%s' is finer than a millisecond", s);
	*ret = v;
	return 0;
}

int moat_parse_count(const char *s, uint64_t *ret, moat_error *err)
{
	if (!s || !*s)
		return moat_error_set(err, MOAT_EINPUT, "empty number");
	if (is_unlimited(s)) {
		*ret = MOAT_UNLIMITED;
		return 0;
	}
	const char *p = s;
	uint64_t iv, fn;
	if (parse_decimal(&p, &iv, &fn) < 0 || *p != '\0' || fn != 0)
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a whole number", s);
	*ret = iv;
	return 0;
}

int moat_parse_cpus_milli(const char *s, uint64_t *ret, moat_error *err)
{
	const char *p = s;
	uint64_t iv, fn, v;
	if (!s || parse_decimal(&p, &iv, &fn) < 0 || *p != '\0' || scale(iv, fn, 1000, &v) < 0)
		return moat_error_set(err, MOAT_EINPUT, "'%s' is not a number of CPUs (expected e.g. 0.5, 1, 2)", s ? s : "");
	if (v == 0)
		return moat_error_set(err, MOAT_EINPUT, "CPU share '%s' is too small (at least 0.001)", s);
	*ret = v;
	return 0;
}

void moat_format_size(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	if (b == MOAT_UNLIMITED) {
		snprintf(buf, len, "unlimited");
		return;
	}
	for (int i = 3; i >= 0; i--) {
		uint64_t m = 1ull << (10 * (i + 1));
		if (b >= m && b % m == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(b / m), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)b);
}

void moat_format_duration_ms(uint64_t ms, char *buf, size_t len)
{
	if (ms == MOAT_UNLIMITED)
		snprintf(buf, len, "unlimited");
	else if (ms % 3600000 == 0 && ms)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms % 60000 == 0 && ms)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
}

void moat_format_limit(moat_unit unit, uint64_t v, char *buf, size_t len)
{
	if (v == MOAT_UNLIMITED) {
		snprintf(buf, len, "unlimited");
		return;
	}
	switch (unit) {
	case MOAT_UNIT_DURATION:
		moat_format_duration_ms(v, buf, len);
		break;
	case MOAT_UNIT_SIZE:
		moat_format_size(v, buf, len);
		break;
	case MOAT_UNIT_CPUS:
		/* Always with a fraction, so that a policy written out reads
		 * back as CPUs, never as a count. */
		if (v % 1000 == 0)
			snprintf(buf, len, "%llu.0", (unsigned long long)(v / 1000));
		else
			snprintf(buf, len, "%llu.%03llu", (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
		break;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)v);
		break;
	}
}

/* Appends one component to an absolute path being built in buf (capacity
 * cap), folding "." and "..". */
static int path_push(char *buf, size_t *len, size_t cap, const char *comp, size_t n)
{
	if (n == 0 || (n == 1 && comp[0] == '.'))
		return 0;
	if (n == 2 && comp[0] == '.' && comp[1] == '.') {
		/* Lexical "..": drop the last component; at "/" it stays "/",
		 * as the kernel does. */
		while (*len > 1 && buf[*len - 1] != '/')
			(*len)--;
		if (*len > 1)
			(*len)--;
		buf[*len] = '\0';
		return 0;
	}
	size_t need = *len + (*len > 1 ? 1 : 0) + n + 1;
	if (need > cap)
		return -ENAMETOOLONG;
	if (*len > 1)
		buf[(*len)++] = '/';
	memcpy(buf + *len, comp, n);
	*len += n;
	buf[*len] = '\0';
	return 0;
}

static int path_push_all(char *buf, size_t *len, size_t cap, const char *p)
{
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		int r = path_push(buf, len, cap, p, (size_t)(e - p));
		if (r < 0)
			return r;
		p = e;
	}
	return 0;
}

int moat_path_resolve(const char *path, const char *base_dir, const char *home, char **ret, moat_error *err)
{
	if (!path || !path[0])
		return moat_error_set(err, MOAT_EINPUT, "empty path");
	if (strlen(path) >= MOAT_MAX_PATH)
		return moat_error_set(err, MOAT_EINPUT, "path '%.40s...' is too long", path);
	const char *start, *rest = path;
	if (path[0] == '/') {
		start = "/";
	} else if (path[0] == '~') {
		if (path[1] != '\0' && path[1] != '/')
			return moat_error_set(err, MOAT_EINPUT,
					      "path '%s': '~user' is not supported (expected ~, ~/PATH or an absolute path)", path);
		if (!home || home[0] != '/')
			return moat_error_set(err, MOAT_EINPUT, "path '%s': no absolute home folder to expand '~'", path);
		start = home;
		rest = path + 1;
	} else {
		if (!base_dir || base_dir[0] != '/')
			return moat_error_set(err, MOAT_EINPUT, "path '%s': relative, and no absolute folder to resolve it in",
					      path);
		start = base_dir;
	}
	char buf[MOAT_MAX_PATH];
	size_t len = 1;
	buf[0] = '/';
	buf[1] = '\0';
	if (path_push_all(buf, &len, sizeof(buf), start) < 0 || path_push_all(buf, &len, sizeof(buf), rest) < 0)
		return moat_error_set(err, MOAT_EINPUT, "path '%.40s...' is too long once resolved", path);
	char *r = strdup(buf);
	if (!r)
		return moat_error_set(err, ENOMEM, "path");
	*ret = r;
	return 0;
}
