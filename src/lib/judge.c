/* Grading code against test cases: parsing the cases file, comparing output,
 * the harness protocol and the verdict. No side effects but getrandom() for
 * the nonce and reading the cases file in moat_judge_suite_load(). */
#include "judge.h"

#include "units.h"
#include "hostpath.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

static const char *const verdict_names[_MOAT_JUDGE_VERDICT_MAX] = {
	[MOAT_JUDGE_PASS] = "pass",
	[MOAT_JUDGE_WRONG_ANSWER] = "wrong_answer",
	[MOAT_JUDGE_RUNTIME_ERROR] = "runtime_error",
	[MOAT_JUDGE_TIMEOUT] = "timeout",
	[MOAT_JUDGE_CPU_LIMIT] = "cpu_limit",
	[MOAT_JUDGE_OOM] = "oom",
	[MOAT_JUDGE_OUTPUT_LIMIT] = "output_limit",
	[MOAT_JUDGE_PIDS_LIMIT] = "pids_limit",
	[MOAT_JUDGE_SETUP_ERROR] = "setup_error",
};

static const char *const compare_names[_MOAT_JUDGE_COMPARE_MAX] = {
	[MOAT_JUDGE_COMPARE_EXACT] = "exact",
	[MOAT_JUDGE_COMPARE_WHITESPACE] = "whitespace",
	[MOAT_JUDGE_COMPARE_NUMERIC] = "numeric",
};

static const char *const lang_names[_MOAT_JUDGE_LANG_MAX] = {
	[MOAT_JUDGE_LANG_NONE] = "none",
	[MOAT_JUDGE_LANG_PYTHON] = "python",
	[MOAT_JUDGE_LANG_JAVASCRIPT] = "javascript",
};

const char *moat_judge_verdict_to_string(moat_judge_verdict v)
{
	if (v < 0 || v >= _MOAT_JUDGE_VERDICT_MAX)
		return "invalid";
	return verdict_names[v];
}

const char *moat_judge_compare_to_string(moat_judge_compare c)
{
	if (c < 0 || c >= _MOAT_JUDGE_COMPARE_MAX)
		return "invalid";
	return compare_names[c];
}

moat_judge_compare moat_judge_compare_from_string(const char *s)
{
	for (int i = 0; i < _MOAT_JUDGE_COMPARE_MAX; i++)
		if (s && strcmp(s, compare_names[i]) == 0)
			return (moat_judge_compare)i;
	return _MOAT_JUDGE_COMPARE_INVALID;
}

const char *moat_judge_lang_to_string(moat_judge_lang l)
{
	if (l < 0 || l >= _MOAT_JUDGE_LANG_MAX)
		return "invalid";
	return lang_names[l];
}

moat_judge_lang moat_judge_lang_from_string(const char *s)
{
	if (!s)
		return _MOAT_JUDGE_LANG_INVALID;
	if (strcmp(s, "python") == 0 || strcmp(s, "py") == 0)
		return MOAT_JUDGE_LANG_PYTHON;
	if (strcmp(s, "javascript") == 0 || strcmp(s, "js") == 0 || strcmp(s, "node") == 0)
		return MOAT_JUDGE_LANG_JAVASCRIPT;
	return _MOAT_JUDGE_LANG_INVALID;
}

moat_judge_lang moat_judge_lang_from_path(const char *path)
{
	const char *dot = path ? strrchr(path, '.') : NULL;
	if (!dot || strchr(dot, '/'))
		return _MOAT_JUDGE_LANG_INVALID;
	if (strcmp(dot, ".py") == 0)
		return MOAT_JUDGE_LANG_PYTHON;
	if (strcmp(dot, ".js") == 0 || strcmp(dot, ".cjs") == 0)
		return MOAT_JUDGE_LANG_JAVASCRIPT;
	return _MOAT_JUDGE_LANG_INVALID;
}

/* ---- parsing ---------------------------------------------------------- */

static void case_done(moat_judge_case *c)
{
	free(c->name);
	free(c->stdin_data);
	free(c->expected_stdout);
	moat__strv_free(c->args);
	free(c->function);
	json_decref(c->call_args);
	json_decref(c->expected);
}

void moat_judge_suite_free(moat_judge_suite *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_cases; i++)
		case_done(&s->cases[i]);
	free(s->cases);
	free(s);
}

/* A copy of a JSON string that may hold NUL bytes, capped. */
static int take_data(const json_t *v, const char *key, char **ret, size_t *ret_len, moat_error *err)
{
	if (!json_is_string(v))
		return moat_error_set(err, MOAT_EINPUT, "\"%s\" must be a string", key);
	size_t n = json_string_length(v);
	if (n > MOAT_JUDGE_MAX_DATA_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "\"%s\" is %zu bytes; at most %u", key, n,
				      MOAT_JUDGE_MAX_DATA_BYTES);
	char *d = malloc(n + 1);
	if (!d)
		return moat_error_set(err, ENOMEM, "\"%s\"", key);
	memcpy(d, json_string_value(v), n);
	d[n] = '\0';
	*ret = d;
	*ret_len = n;
	return 0;
}

/* The encoded size of a JSON value, to hold it to the data cap. */
static size_t json_encoded_size(const json_t *v)
{
	return json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
}

typedef struct limit_key {
	const char *key;
	unsigned bit;
	int (*parse)(const char *s, uint64_t *ret, moat_error *err);
	size_t offset;
} limit_key;

/* The keys are the long option names of `moat run`, so a case reads like the
 * command line it overrides. */
static const limit_key limit_keys[] = {
	{"time", MOAT_JUDGE_LIMIT_TIME, moat_parse_duration_ms, offsetof(moat_limits, wall_ms)},
	{"cpu", MOAT_JUDGE_LIMIT_CPU, moat_parse_duration_ms, offsetof(moat_limits, cpu_ms)},
	{"mem", MOAT_JUDGE_LIMIT_MEM, moat_parse_size, offsetof(moat_limits, memory_bytes)},
	{"pids", MOAT_JUDGE_LIMIT_PIDS, moat_parse_count, offsetof(moat_limits, pids)},
	{"output", MOAT_JUDGE_LIMIT_OUTPUT, moat_parse_size, offsetof(moat_limits, output_bytes)},
	{"tmp-size", MOAT_JUDGE_LIMIT_TMP, moat_parse_size, offsetof(moat_limits, tmp_bytes)},
};

static int parse_limits(const json_t *o, moat_judge_case *c, moat_error *err)
{
	if (!json_is_object(o))
		return moat_error_set(err, MOAT_EINPUT, "\"limits\" must be an object");
	const char *key;
	json_t *v;
	json_object_foreach ((json_t *)o, key, v) {
		const limit_key *lk = NULL;
		for (size_t i = 0; i < ELEMENTSOF(limit_keys); i++)
			if (strcmp(key, limit_keys[i].key) == 0)
				lk = &limit_keys[i];
		if (!lk)
			return moat_error_set(err, MOAT_EINPUT,
					      "unknown limit \"%s\" (time, cpu, mem, pids, output, tmp-size)", key);
		char num[32];
		const char *s;
		if (json_is_string(v))
			s = json_string_value(v);
		else if (json_is_integer(v) && json_integer_value(v) >= 0) {
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			s = num;
		} else
			return moat_error_set(err, MOAT_EINPUT,
					      "limit \"%s\" must be a string such as \"2s\" or \"64M\", or a "
					      "non-negative integer",
					      key);
		uint64_t val;
		int r = lk->parse(s, &val, err);
		if (r < 0)
			return moat_error_wrap(err, "limit \"%s\"", key);
		*(uint64_t *)((char *)&c->limits + lk->offset) = val;
		c->limits_set |= lk->bit;
	}
	return 0;
}

int moat__judge_parse_limits(const json_t *o, moat_limits *ret, unsigned *ret_set, moat_error *err)
{
	moat_judge_case c;
	memset(&c, 0, sizeof(c));
	int r = parse_limits(o, &c, err);
	if (r < 0)
		return r;
	*ret = c.limits;
	*ret_set = c.limits_set;
	return 0;
}

static bool is_identifier(const char *s)
{
	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == '$'))
		return false;
	size_t n = 0;
	for (const char *p = s; *p; p++, n++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '$'))
			return false;
	return n <= MOAT_JUDGE_MAX_NAME;
}

static int parse_call(const json_t *o, moat_judge_case *c, moat_error *err)
{
	if (!json_is_object(o))
		return moat_error_set(err, MOAT_EINPUT, "\"call\" must be an object");
	const char *key;
	json_t *v;
	json_object_foreach ((json_t *)o, key, v) {
		if (strcmp(key, "function") == 0) {
			if (!json_is_string(v) || !is_identifier(json_string_value(v)))
				return moat_error_set(err, MOAT_EINPUT,
						      "\"call.function\" must be an identifier such as \"solve\"");
			c->function = strdup(json_string_value(v));
			if (!c->function)
				return moat_error_set(err, ENOMEM, "call");
		} else if (strcmp(key, "args") == 0) {
			if (!json_is_array(v))
				return moat_error_set(err, MOAT_EINPUT, "\"call.args\" must be an array");
			if (json_encoded_size(v) > MOAT_JUDGE_MAX_DATA_BYTES)
				return moat_error_set(err, MOAT_EINPUT, "\"call.args\" is larger than %u bytes",
						      MOAT_JUDGE_MAX_DATA_BYTES);
			c->call_args = json_incref(v);
		} else
			return moat_error_set(err, MOAT_EINPUT, "unknown key \"call.%s\" (function, args)", key);
	}
	if (!c->function)
		return moat_error_set(err, MOAT_EINPUT, "\"call\" needs \"function\"");
	if (!c->call_args)
		c->call_args = json_array();
	return c->call_args ? 0 : moat_error_set(err, ENOMEM, "call");
}

static int parse_args(const json_t *v, moat_judge_case *c, moat_error *err)
{
	if (!json_is_array(v))
		return moat_error_set(err, MOAT_EINPUT, "\"args\" must be an array of strings");
	if (json_array_size(v) > MOAT_JUDGE_MAX_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "\"args\" has more than %d entries", MOAT_JUDGE_MAX_ARGS);
	size_t i;
	json_t *a;
	json_array_foreach (v, i, a) {
		/* An argument with a NUL byte cannot reach execve() whole; refuse
		 * it rather than cut it. */
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return moat_error_set(err, MOAT_EINPUT, "\"args[%zu]\" must be a string without NUL bytes",
					      i);
		if (moat__strv_push(&c->args, json_string_value(a)) < 0)
			return moat_error_set(err, ENOMEM, "args");
	}
	if (!c->args)
		c->args = calloc(1, sizeof(char *));
	return c->args ? 0 : moat_error_set(err, ENOMEM, "args");
}

/* One line, one case. Every key is known, every value has the right type,
 * and the two kinds of case do not mix: input that could be read two ways is
 * refused. */
static int parse_case(const json_t *o, moat_judge_case *c, moat_error *err)
{
	const json_t *tolerance = NULL, *expected_stdout = NULL;
	const char *key;
	json_t *v;
	int r;

	c->compare = MOAT_JUDGE_COMPARE_EXACT;
	c->tolerance = MOAT_JUDGE_DEFAULT_TOLERANCE;
	json_object_foreach ((json_t *)o, key, v) {
		if (strcmp(key, "name") == 0) {
			if (!json_is_string(v) || json_string_length(v) == 0 ||
			    json_string_length(v) > MOAT_JUDGE_MAX_NAME ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return moat_error_set(err, MOAT_EINPUT,
						      "\"name\" must be a non-empty string of at most %d bytes",
						      MOAT_JUDGE_MAX_NAME);
			c->name = strdup(json_string_value(v));
			if (!c->name)
				return moat_error_set(err, ENOMEM, "name");
		} else if (strcmp(key, "stdin") == 0) {
			if ((r = take_data(v, key, &c->stdin_data, &c->stdin_len, err)) < 0)
				return r;
		} else if (strcmp(key, "expected_stdout") == 0) {
			expected_stdout = v;
			if ((r = take_data(v, key, &c->expected_stdout, &c->expected_len, err)) < 0)
				return r;
		} else if (strcmp(key, "args") == 0) {
			if ((r = parse_args(v, c, err)) < 0)
				return r;
		} else if (strcmp(key, "call") == 0) {
			c->is_call = true;
			if ((r = parse_call(v, c, err)) < 0)
				return r;
		} else if (strcmp(key, "expected") == 0) {
			if (json_encoded_size(v) > MOAT_JUDGE_MAX_DATA_BYTES)
				return moat_error_set(err, MOAT_EINPUT, "\"expected\" is larger than %u bytes",
						      MOAT_JUDGE_MAX_DATA_BYTES);
			c->expected = json_incref(v);
		} else if (strcmp(key, "limits") == 0) {
			if ((r = parse_limits(v, c, err)) < 0)
				return r;
		} else if (strcmp(key, "compare") == 0) {
			c->compare = moat_judge_compare_from_string(json_string_value(v));
			if (c->compare == _MOAT_JUDGE_COMPARE_INVALID)
				return moat_error_set(err, MOAT_EINPUT,
						      "\"compare\" must be \"exact\", \"whitespace\" or \"numeric\"");
		} else if (strcmp(key, "tolerance") == 0) {
			tolerance = v;
			if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
			    json_number_value(v) >= 1e300)
				return moat_error_set(err, MOAT_EINPUT, "\"tolerance\" must be a non-negative number");
			c->tolerance = json_number_value(v);
		} else
			return moat_error_set(err, MOAT_EINPUT,
					      "unknown key \"%s\" (name, stdin, expected_stdout, args, call, expected, "
					      "limits, compare, tolerance)",
					      key);
	}
	if (!c->name)
		return moat_error_set(err, MOAT_EINPUT, "the case has no \"name\"");
	if (tolerance && c->compare != MOAT_JUDGE_COMPARE_NUMERIC)
		return moat_error_set(err, MOAT_EINPUT, "\"tolerance\" needs \"compare\": \"numeric\"");
	if (c->is_call) {
		if (expected_stdout || c->stdin_data || c->args)
			return moat_error_set(err, MOAT_EINPUT,
					      "a function case (\"call\") takes \"expected\", not \"stdin\", "
					      "\"expected_stdout\" or \"args\"");
		if (!c->expected)
			return moat_error_set(err, MOAT_EINPUT, "a function case needs \"expected\"");
	} else {
		if (c->expected)
			return moat_error_set(err, MOAT_EINPUT,
					      "\"expected\" belongs to a function case (with \"call\"); a stdin case "
					      "takes \"expected_stdout\"");
		if (!expected_stdout)
			return moat_error_set(err, MOAT_EINPUT, "the case needs \"expected_stdout\" (or \"call\" and "
							       "\"expected\")");
	}
	return 0;
}

int moat_judge_suite_parse(const char *data, size_t len, const char *filename, moat_judge_suite **ret,
			   moat_error *err)
{
	if (!filename)
		filename = "cases";
	if (len > MOAT_JUDGE_MAX_FILE_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "%s: %zu bytes; a cases file holds at most %u", filename,
				      len, MOAT_JUDGE_MAX_FILE_BYTES);
	moat_judge_suite *s = calloc(1, sizeof(*s));
	_cleanup_judge_suite_ moat_judge_suite *owned = s;
	if (!s)
		return moat_error_set(err, ENOMEM, "%s", filename);

	unsigned line = 0;
	const char *p = data, *end = data + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		line++;
		const char *b = p, *e = eol;
		p = nl ? nl + 1 : end;
		while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (b == e)
			continue;
		if (s->n_cases >= MOAT_JUDGE_MAX_CASES)
			return moat_error_set(err, MOAT_EINPUT, "%s:%u: more than %d cases", filename, line,
					      MOAT_JUDGE_MAX_CASES);

		json_error_t jerr;
		/* Duplicate keys are refused: {"expected": 1, "expected": 2}
		 * would otherwise mean whichever the parser keeps. */
		json_t *o = json_loadb(b, (size_t)(e - b), JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
		if (!o)
			return moat_error_set(err, MOAT_EINPUT, "%s:%u:%d: %s", filename, line, jerr.column,
					      jerr.text);
		if (!json_is_object(o)) {
			json_decref(o);
			return moat_error_set(err, MOAT_EINPUT, "%s:%u: a case is a JSON object", filename, line);
		}
		moat_judge_case *nc = realloc(s->cases, (s->n_cases + 1) * sizeof(*nc));
		if (!nc) {
			json_decref(o);
			return moat_error_set(err, ENOMEM, "%s", filename);
		}
		s->cases = nc;
		moat_judge_case *c = &s->cases[s->n_cases++];
		memset(c, 0, sizeof(*c));
		c->line = line;
		int r = parse_case(o, c, err);
		json_decref(o);
		if (r < 0)
			return moat_error_wrap(err, "%s:%u", filename, line);
		for (size_t i = 0; i + 1 < s->n_cases; i++)
			if (strcmp(s->cases[i].name, c->name) == 0)
				return moat_error_set(err, MOAT_EINPUT, "%s:%u: case \"%s\" is already on line %u",
						      filename, line, c->name, s->cases[i].line);
		if (c->is_call)
			s->n_call_cases++;
	}
	if (s->n_cases == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s: no cases", filename);
	*ret = TAKE_PTR(owned);
	return 0;
}

int moat__judge_read_file(const char *path, size_t max, char **ret, size_t *ret_len, moat_error *err)
{
	_cleanup_close_ int fd = moat__hostpath_open(NULL, path, O_RDONLY | O_NONBLOCK, 0, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > max)
		return moat_error_set(err, MOAT_EINPUT, "%s: %" PRIu64 " bytes; at most %zu", path,
				      (uint64_t)st.st_size, max);
	/* Read one byte past the size so a file that grows meanwhile is
	 * refused rather than cut. */
	size_t cap = (size_t)st.st_size + 1;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "%s", path);
	ssize_t n = moat__read_all(fd, buf, cap);
	if (n < 0)
		return moat_error_set(err, (int)-n, "%s", path);
	if ((size_t)n == cap)
		return moat_error_set(err, MOAT_EINPUT, "%s: changed while being read", path);
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = (size_t)n;
	return 0;
}

int moat_judge_suite_load(const char *path, moat_judge_suite **ret, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = moat__judge_read_file(path, MOAT_JUDGE_MAX_FILE_BYTES, &buf, &len, err);
	if (r < 0)
		return r;
	return moat_judge_suite_parse(buf, len, path, ret, err);
}

void moat_judge_case_limits(const moat_judge_case *c, const moat_limits *base, moat_limits *ret)
{
	*ret = *base;
	for (size_t i = 0; i < ELEMENTSOF(limit_keys); i++)
		if (c->limits_set & limit_keys[i].bit)
			*(uint64_t *)((char *)ret + limit_keys[i].offset) =
				*(const uint64_t *)((const char *)&c->limits + limit_keys[i].offset);
}

/* ---- comparison ------------------------------------------------------- */

/* A short, printable rendering of data for messages: "abc\n…". Quotes are
 * escaped for text that the message itself puts in quotes, not for JSON. */
static void excerpt_as(char *buf, size_t len, const char *data, size_t n, bool escape_quotes)
{
	const size_t max = 48;
	size_t o = 0;
	if (len == 0)
		return;
	for (size_t i = 0; i < n && i < max && o + 5 < len; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (ch == '\n')
			o += (size_t)snprintf(buf + o, len - o, "\\n");
		else if (ch == '\t')
			o += (size_t)snprintf(buf + o, len - o, "\\t");
		else if (escape_quotes && (ch == '"' || ch == '\\'))
			o += (size_t)snprintf(buf + o, len - o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	if (n > max && o + 4 < len)
		o += (size_t)snprintf(buf + o, len - o, "...");
	buf[o < len ? o : len - 1] = '\0';
}

static void excerpt(char *buf, size_t len, const char *data, size_t n) { excerpt_as(buf, len, data, n, true); }

static void say(char *why, size_t why_len, const char *fmt, ...) _printf_(3, 4);
static void say(char *why, size_t why_len, const char *fmt, ...)
{
	if (!why || why_len == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

typedef struct token {
	const char *p;
	size_t n;
} token;

static bool next_token(const char **pos, const char *end, token *t)
{
	const char *p = *pos;
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p == end) {
		*pos = p;
		return false;
	}
	const char *b = p;
	while (p < end && !isspace((unsigned char)*p))
		p++;
	t->p = b;
	t->n = (size_t)(p - b);
	*pos = p;
	return true;
}

/* A decimal number only: strtod alone would also read "0x1p3", "nan" and
 * "inf", which a judge must compare as text. */
static bool token_number(const token *t, double *ret)
{
	char buf[128];
	if (t->n == 0 || t->n >= sizeof(buf))
		return false;
	bool digit = false;
	for (size_t i = 0; i < t->n; i++) {
		char ch = t->p[i];
		if (isdigit((unsigned char)ch))
			digit = true;
		else if (!strchr("+-.eE", ch))
			return false;
	}
	if (!digit)
		return false;
	memcpy(buf, t->p, t->n);
	buf[t->n] = '\0';
	char *e = NULL;
	errno = 0;
	double d = strtod(buf, &e);
	if (!e || *e || !isfinite(d))
		return false;
	*ret = d;
	return true;
}

static bool numbers_close(double a, double b, double tol)
{
	if (a == b)
		return true;
	double diff = fabs(a - b);
	/* Absolute or relative, whichever is looser: the usual judge rule, so
	 * both 1e-9 near zero and 1e12 with rounding in its last digits pass. */
	return diff <= tol || diff <= tol * fmax(fabs(a), fabs(b));
}

/* A decimal literal as sign, significant digits and power of ten, so two
 * literals compare exactly at any size: 9007199254740993 and
 * 9007199254740992.0 are one double but not one number. */
typedef struct decimal {
	bool neg;
	char digits[128];
	size_t n;
	long exp;
} decimal;

static bool token_decimal(const token *t, decimal *d, bool *ret_integer)
{
	size_t i = 0;
	*d = (decimal){0};
	*ret_integer = true;
	if (i < t->n && (t->p[i] == '+' || t->p[i] == '-'))
		d->neg = t->p[i++] == '-';
	bool any = false, point = false;
	long frac = 0;
	for (; i < t->n; i++) {
		char ch = t->p[i];
		if (isdigit((unsigned char)ch)) {
			any = true;
			if (d->n == 0 && ch == '0')
				;
			else if (d->n < sizeof(d->digits))
				d->digits[d->n++] = ch;
			else
				return false;
			if (point)
				frac++;
		} else if (ch == '.' && !point) {
			point = true;
			*ret_integer = false;
		} else {
			break;
		}
	}
	if (!any)
		return false;
	long e = 0;
	if (i < t->n && (t->p[i] == 'e' || t->p[i] == 'E')) {
		*ret_integer = false;
		i++;
		bool eneg = false;
		if (i < t->n && (t->p[i] == '+' || t->p[i] == '-'))
			eneg = t->p[i++] == '-';
		if (i >= t->n)
			return false;
		for (; i < t->n; i++) {
			if (!isdigit((unsigned char)t->p[i]) || e > 100000)
				return false;
			e = e * 10 + (t->p[i] - '0');
		}
		if (eneg)
			e = -e;
	}
	if (i != t->n)
		return false;
	/* Leading zeros were never kept; a leading zero of the fraction
	 * still counts in frac, which is right (0.05 = 5e-2). */
	d->exp = e - frac;
	while (d->n > 0 && d->digits[d->n - 1] == '0') {
		d->n--;
		d->exp++;
	}
	if (d->n == 0)
		d->neg = false, d->exp = 0; /* every zero is one zero */
	return true;
}

static bool decimals_equal(const decimal *a, const decimal *b)
{
	return a->neg == b->neg && a->n == b->n && a->exp == b->exp && memcmp(a->digits, b->digits, a->n) == 0;
}

static bool tokens_equal(moat_judge_compare mode, double tol, const token *a, const token *b)
{
	if (a->n == b->n && memcmp(a->p, b->p, a->n) == 0)
		return true;
	double x, y;
	if (mode == MOAT_JUDGE_COMPARE_NUMERIC && token_number(a, &x) && token_number(b, &y)) {
		/* Tolerance 0 is exact, at any size: a double cannot tell
		 * two 18-digit integers apart. */
		decimal da, db;
		bool ia, ib;
		if (tol == 0 && token_decimal(a, &da, &ia) && token_decimal(b, &db, &ib))
			return decimals_equal(&da, &db);
		return numbers_close(x, y, tol);
	}
	return false;
}

static bool compare_tokens(moat_judge_compare mode, double tol, const char *exp, size_t exp_len, const char *act,
			   size_t act_len, char *why, size_t why_len)
{
	const char *pe = exp, *pa = act;
	const char *ee = exp + exp_len, *ea = act + act_len;
	char q1[256], q2[256];
	for (size_t i = 1;; i++) {
		token te, ta;
		bool he = next_token(&pe, ee, &te), ha = next_token(&pa, ea, &ta);
		if (!he && !ha)
			return true;
		if (!ha) {
			excerpt(q1, sizeof(q1), te.p, te.n);
			say(why, why_len, "token %zu: expected \"%s\", got the end of the output", i, q1);
			return false;
		}
		if (!he) {
			excerpt(q2, sizeof(q2), ta.p, ta.n);
			say(why, why_len, "token %zu: expected the end of the output, got \"%s\"", i, q2);
			return false;
		}
		if (!tokens_equal(mode, tol, &te, &ta)) {
			excerpt(q1, sizeof(q1), te.p, te.n);
			excerpt(q2, sizeof(q2), ta.p, ta.n);
			say(why, why_len, "token %zu: expected \"%s\", got \"%s\"", i, q1, q2);
			return false;
		}
	}
}

bool moat_judge_compare_text(moat_judge_compare mode, double tolerance, const char *expected, size_t expected_len,
			     const char *actual, size_t actual_len, char *why, size_t why_len)
{
	if (mode != MOAT_JUDGE_COMPARE_EXACT)
		return compare_tokens(mode, tolerance, expected, expected_len, actual, actual_len, why, why_len);
	if (expected_len == actual_len && memcmp(expected, actual, expected_len) == 0)
		return true;
	size_t i = 0, line = 1, bol = 0;
	while (i < expected_len && i < actual_len && expected[i] == actual[i]) {
		if (expected[i] == '\n') {
			line++;
			bol = i + 1;
		}
		i++;
	}
	/* Quote the differing line of each side from its start. */
	const char *le = memchr(expected + bol, '\n', expected_len - bol);
	const char *la = memchr(actual + bol, '\n', actual_len - bol);
	size_t ne = (le ? (size_t)(le - expected) + 1 : expected_len) - bol;
	size_t na = (la ? (size_t)(la - actual) + 1 : actual_len) - bol;
	char q1[256], q2[256];
	excerpt(q1, sizeof(q1), expected + bol, ne);
	excerpt(q2, sizeof(q2), actual + bol, na);
	if (i == actual_len)
		say(why, why_len, "line %zu: output ends early: expected \"%s\", got \"%s\"", line, q1, q2);
	else if (i == expected_len)
		say(why, why_len, "line %zu: extra output: expected \"%s\", got \"%s\"", line, q1, q2);
	else
		say(why, why_len, "line %zu: expected \"%s\", got \"%s\"", line, q1, q2);
	return false;
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

static void json_excerpt(char *buf, size_t len, const json_t *v)
{
	char tmp[64];
	/* 15 significant digits: 1.6666667 reads as written, not as the
	 * nearest double's 17 digits. */
	size_t n = json_dumpb(v, tmp, sizeof(tmp), JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	excerpt_as(buf, len, tmp, n < sizeof(tmp) ? n : sizeof(tmp), false);
}

/* A real equals an integer only when it is that integer exactly, not when
 * the integer rounds to it: 9007199254740992.0 is not 9007199254740993. */
static bool real_is_integer(double x, json_int_t i)
{
	if (!(x >= -0x1p63 && x < 0x1p63) || x != (double)i)
		return false;
	return (json_int_t)x == i;
}

static bool json_numbers_equal(moat_judge_compare mode, double tol, const json_t *a, const json_t *b)
{
	/* Exact mode, and numeric mode with tolerance 0, compare exactly:
	 * integers as integers, never through a double. */
	bool exact = mode != MOAT_JUDGE_COMPARE_NUMERIC || tol == 0;
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b) ||
		       (!exact && numbers_close((double)json_integer_value(a), (double)json_integer_value(b), tol));
	double x = json_number_value(a), y = json_number_value(b);
	if (exact && json_is_integer(a) != json_is_integer(b))
		return json_is_integer(a) ? real_is_integer(y, json_integer_value(a))
					  : real_is_integer(x, json_integer_value(b));
	if (exact)
		return x == y;
	return numbers_close(x, y, tol);
}

/* path is the JSON path so far ("$", "$[2]", "$.key"), for the message. */
static bool compare_json_at(moat_judge_compare mode, double tol, const json_t *e, const json_t *a, char *path,
			    size_t path_len, char *why, size_t why_len)
{
	char q1[128], q2[128];
	if (json_is_number(e) && json_is_number(a)) {
		if (json_numbers_equal(mode, tol, e, a))
			return true;
		goto differ;
	}
	if (json_typeof(e) != json_typeof(a) && !(json_is_boolean(e) && json_is_boolean(a))) {
		json_excerpt(q2, sizeof(q2), a);
		say(why, why_len, "%s: expected a %s, got %s", path, json_type_name(e), q2);
		return false;
	}
	switch (json_typeof(e)) {
	case JSON_STRING:
		if (mode == MOAT_JUDGE_COMPARE_WHITESPACE) {
			if (compare_tokens(mode, tol, json_string_value(e), json_string_length(e), json_string_value(a),
					   json_string_length(a), NULL, 0))
				return true;
		} else if (json_string_length(e) == json_string_length(a) &&
			   memcmp(json_string_value(e), json_string_value(a), json_string_length(e)) == 0)
			return true;
		goto differ;
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		if (json_typeof(e) == json_typeof(a))
			return true;
		goto differ;
	case JSON_ARRAY: {
		if (json_array_size(e) != json_array_size(a)) {
			say(why, why_len, "%s: expected an array of %zu, got %zu", path, json_array_size(e),
			    json_array_size(a));
			return false;
		}
		size_t plen = strlen(path);
		for (size_t i = 0; i < json_array_size(e); i++) {
			snprintf(path + plen, path_len - plen, "[%zu]", i);
			if (!compare_json_at(mode, tol, json_array_get(e, i), json_array_get(a, i), path, path_len,
					     why, why_len))
				return false;
			path[plen] = '\0';
		}
		return true;
	}
	case JSON_OBJECT: {
		const char *key;
		json_t *ev;
		size_t plen = strlen(path);
		json_object_foreach ((json_t *)e, key, ev) {
			const json_t *av = json_object_get(a, key);
			if (!av) {
				say(why, why_len, "%s: missing key \"%.64s\"", path, key);
				return false;
			}
			snprintf(path + plen, path_len - plen, ".%s", key);
			if (!compare_json_at(mode, tol, ev, av, path, path_len, why, why_len))
				return false;
			path[plen] = '\0';
		}
		json_t *av;
		json_object_foreach ((json_t *)a, key, av) {
			if (!json_object_get(e, key)) {
				say(why, why_len, "%s: unexpected key \"%.64s\"", path, key);
				return false;
			}
		}
		return true;
	}
	default:
		break;
	}
differ:
	json_excerpt(q1, sizeof(q1), e);
	json_excerpt(q2, sizeof(q2), a);
	say(why, why_len, "%s: expected %s, got %s", path, q1, q2);
	return false;
}

bool moat_judge_compare_json(moat_judge_compare mode, double tolerance, const json_t *expected,
			     const json_t *actual, char *why, size_t why_len)
{
	char path[256] = "$";
	if (!expected || !actual) {
		say(why, why_len, "no value");
		return false;
	}
	return compare_json_at(mode, tolerance, expected, actual, path, sizeof(path), why, why_len);
}

/* ---- the harness protocol ---------------------------------------------- */

int moat_judge_nonce(char nonce[MOAT_JUDGE_NONCE_LEN + 1], moat_error *err)
{
	int r = moat__random_hex(MOAT_JUDGE_NONCE_LEN / 2, nonce);
	if (r < 0)
		return moat_error_set(err, r, "getrandom");
	return 0;
}

char *moat_judge_call_request(const moat_judge_case *c, const char *nonce, size_t *ret_len)
{
	json_t *o = json_pack("{s:s, s:s, s:O}", "nonce", nonce, "function", c->function, "args", c->call_args);
	if (!o)
		return NULL;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	if (ret_len)
		*ret_len = n + 1;
	return line;
}

void moat_judge_reply_done(moat_judge_reply *r)
{
	if (!r)
		return;
	json_decref(r->value);
	r->value = NULL;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
	if (m == 0 || n < m)
		return NULL;
	return memmem(hay, n, needle, m);
}

void moat_judge_reply_parse(const char *out, size_t len, const char *nonce, moat_judge_reply *ret)
{
	char tag[sizeof(MOAT_JUDGE_RESULT_PREFIX) + MOAT_JUDGE_NONCE_LEN + 2];
	snprintf(tag, sizeof(tag), "%s%s ", MOAT_JUDGE_RESULT_PREFIX, nonce);
	size_t tag_len = strlen(tag);

	memset(ret, 0, sizeof(*ret));
	ret->kind = MOAT_JUDGE_REPLY_MISSING;
	ret->other_bytes = len;

	/* Count the nonce itself, not the whole tag: a submission that found
	 * the nonce and printed it in any shape has broken the protocol. */
	const char *found = NULL;
	size_t count = 0;
	for (const char *p = out; (p = find_bytes(p, len - (size_t)(p - out), nonce, strlen(nonce)));
	     p += strlen(nonce)) {
		count++;
		const char *t = p - strlen(MOAT_JUDGE_RESULT_PREFIX);
		if (p >= out + strlen(MOAT_JUDGE_RESULT_PREFIX) &&
		    memcmp(t, MOAT_JUDGE_RESULT_PREFIX, strlen(MOAT_JUDGE_RESULT_PREFIX)) == 0 &&
		    (t == out || t[-1] == '\n') && (size_t)(out + len - t) >= tag_len && t[tag_len - 1] == ' ')
			found = t;
	}
	if (count == 0) {
		snprintf(ret->message, sizeof(ret->message),
			 "the harness printed no result (the program exited before the function returned?)");
		return;
	}
	ret->kind = MOAT_JUDGE_REPLY_INVALID;
	if (count > 1 || !found) {
		snprintf(ret->message, sizeof(ret->message),
			 "the result tag appeared %zu times where the harness prints it once: the output was "
			 "tampered with",
			 count);
		return;
	}
	const char *json_start = found + tag_len;
	const char *nl = memchr(json_start, '\n', (size_t)(out + len - json_start));
	if (!nl) {
		snprintf(ret->message, sizeof(ret->message), "the result line is cut short");
		return;
	}
	ret->other_bytes = len - (size_t)(nl + 1 - found);
	json_error_t jerr;
	json_t *o = json_loadb(json_start, (size_t)(nl - json_start), JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			       &jerr);
	if (!o || !json_is_object(o) || json_object_size(o) != 1) {
		snprintf(ret->message, sizeof(ret->message), "the result line is not well formed%s%s",
			 o ? "" : ": ", o ? "" : jerr.text);
		json_decref(o);
		return;
	}
	json_t *v;
	if ((v = json_object_get(o, "value"))) {
		ret->kind = MOAT_JUDGE_REPLY_VALUE;
		ret->value = json_incref(v);
	} else if ((v = json_object_get(o, "error")) && json_is_string(v)) {
		ret->kind = MOAT_JUDGE_REPLY_ERROR;
		snprintf(ret->message, sizeof(ret->message), "%s", json_string_value(v));
	} else
		snprintf(ret->message, sizeof(ret->message), "the result line holds neither a value nor an error");
	json_decref(o);
}

/* ---- verdicts ---------------------------------------------------------- */

static moat_judge_verdict verdict_of_status(moat_status s)
{
	switch (s) {
	case MOAT_STATUS_TIMEOUT:
		return MOAT_JUDGE_TIMEOUT;
	case MOAT_STATUS_CPU_LIMIT:
		return MOAT_JUDGE_CPU_LIMIT;
	case MOAT_STATUS_OOM:
		return MOAT_JUDGE_OOM;
	case MOAT_STATUS_PIDS_LIMIT:
		return MOAT_JUDGE_PIDS_LIMIT;
	case MOAT_STATUS_OUTPUT_LIMIT:
		return MOAT_JUDGE_OUTPUT_LIMIT;
	case MOAT_STATUS_SIGNALED:
		return MOAT_JUDGE_RUNTIME_ERROR;
	case MOAT_STATUS_EXITED:
		return MOAT_JUDGE_PASS; /* decided by the comparison */
	default:
		return MOAT_JUDGE_SETUP_ERROR;
	}
}

moat_judge_verdict moat_judge_decide(const moat_judge_case *c, const moat_result *r, const char *stdout_data,
				     size_t stdout_len, const moat_judge_reply *reply, const char *stderr_head,
				     size_t stderr_len, char *detail, size_t detail_len)
{
	char q[256] = "";
	if (stderr_head && stderr_len)
		excerpt_as(q, sizeof(q), stderr_head, stderr_len, false);
	say(detail, detail_len, "%s", "");

	moat_judge_verdict v = verdict_of_status(r->status);
	if (v == MOAT_JUDGE_SETUP_ERROR) {
		say(detail, detail_len, "%s", r->error[0] ? r->error : "moat could not set up the sandbox");
		return v;
	}
	if (r->status == MOAT_STATUS_SIGNALED) {
		say(detail, detail_len, "killed by signal %d%s%s", r->signal, q[0] ? "; stderr: " : "", q);
		return v;
	}
	if (v != MOAT_JUDGE_PASS) {
		say(detail, detail_len, "%s limit hit", r->limit_hit[0] ? r->limit_hit : moat_status_to_string(r->status));
		return v;
	}
	if (c->is_call) {
		/* The harness's own exit status is not trusted either: only the
		 * tagged line decides, and a clean exit without it is an error. */
		if (!reply || reply->kind == MOAT_JUDGE_REPLY_MISSING || reply->kind == MOAT_JUDGE_REPLY_INVALID) {
			say(detail, detail_len, "%s (exit code %d)%s%s",
			    reply ? reply->message : "no reply", r->exit_code, q[0] ? "; stderr: " : "", q);
			return MOAT_JUDGE_RUNTIME_ERROR;
		}
		if (reply->kind == MOAT_JUDGE_REPLY_ERROR) {
			say(detail, detail_len, "%s", reply->message);
			return MOAT_JUDGE_RUNTIME_ERROR;
		}
		if (r->exit_code != 0) {
			say(detail, detail_len, "exit code %d after returning", r->exit_code);
			return MOAT_JUDGE_RUNTIME_ERROR;
		}
		return moat_judge_compare_json(c->compare, c->tolerance, c->expected, reply->value, detail,
					       detail_len)
			       ? MOAT_JUDGE_PASS
			       : MOAT_JUDGE_WRONG_ANSWER;
	}
	if (r->exit_code != 0) {
		say(detail, detail_len, "exit code %d%s%s", r->exit_code, q[0] ? "; stderr: " : "", q);
		return MOAT_JUDGE_RUNTIME_ERROR;
	}
	return moat_judge_compare_text(c->compare, c->tolerance, c->expected_stdout, c->expected_len, stdout_data,
				       stdout_len, detail, detail_len)
		       ? MOAT_JUDGE_PASS
		       : MOAT_JUDGE_WRONG_ANSWER;
}
