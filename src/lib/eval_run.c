/* Running benchmark samples: one fresh sandbox per sample, the embedded
 * harness as its program and the request on its stdin, and a bounded pool
 * of worker processes that keeps the result lines in sample order. The
 * decisions are pure and live in eval.c. */
#include "eval.h"
#include "judge.h"

#include "sandbox.h"
#include "util.h"
#include "workpool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The harnesses, embedded at build time by harness/embed.py. */
extern const char moat__harness_eval_python[];
extern const char moat__harness_eval_javascript[];
extern const char moat__harness_eval_c[];

/* Kept of a sample's stdout: its tail, where the harness's report is (the
 * harness writes it last and exits). What the sample printed before does
 * not matter and is only counted. */
#define TAIL_MAX (64u << 10)

typedef struct tail {
	char buf[TAIL_MAX];
	size_t len;
} tail;

static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	tail *t = userdata;
	if (stream != 1)
		return;
	if (len >= TAIL_MAX) {
		memcpy(t->buf, buf + len - TAIL_MAX, TAIL_MAX);
		t->len = TAIL_MAX;
		return;
	}
	if (t->len + len > TAIL_MAX) {
		size_t drop = t->len + len - TAIL_MAX;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, buf, len);
	t->len += len;
}

static int sample_argv(moat_eval_lang lang, char ***ret, moat_error *err)
{
	_cleanup_strv_free_ char **argv = NULL;
	int r = 0;
	switch (lang) {
	case MOAT_EVAL_LANG_NONE:
	case MOAT_EVAL_LANG_PYTHON:
		/* -I: no user site, no PYTHON* variables, nothing of the
		 * current folder on sys.path. -S: the harness puts the site
		 * folders on sys.path itself, without running .pth files. */
		r |= moat__strv_push(&argv, "/usr/bin/python3");
		r |= moat__strv_push(&argv, "-I");
		r |= moat__strv_push(&argv, "-S");
		r |= moat__strv_push(&argv, "-c");
		r |= moat__strv_push(&argv, moat__harness_eval_python);
		break;
	case MOAT_EVAL_LANG_JAVASCRIPT:
		r |= moat__strv_push(&argv, "/usr/bin/node");
		r |= moat__strv_push(&argv, "-e");
		r |= moat__strv_push(&argv, moat__harness_eval_javascript);
		break;
	case MOAT_EVAL_LANG_C:
	case MOAT_EVAL_LANG_CPP:
		/* Compiled and run inside the sandbox by a Python driver. */
		r |= moat__strv_push(&argv, "/usr/bin/python3");
		r |= moat__strv_push(&argv, "-I");
		r |= moat__strv_push(&argv, "-c");
		r |= moat__strv_push(&argv, moat__harness_eval_c);
		r |= moat__strv_push(&argv, lang == MOAT_EVAL_LANG_C ? "c" : "cpp");
		break;
	default:
		return moat_error_set(err, MOAT_EINPUT, "language %s: not supported by moat eval",
				      moat_eval_lang_to_string(lang));
	}
	if (r < 0)
		return moat_error_set(err, ENOMEM, "argv");
	*ret = TAKE_PTR(argv);
	return 0;
}

int moat_eval_run_sample(const moat_config *base, const struct moat_gateway_config *gateway,
			 const moat_eval_problem *p, const moat_eval_sample *s, moat_eval_lang lang,
			 moat_eval_verdict *ret_verdict, char *ret_result, size_t result_size, moat_result *ret_r,
			 moat_error *err)
{
	moat_result_init(ret_r);
	if (p->lang != MOAT_EVAL_LANG_NONE)
		lang = p->lang;
	_cleanup_strv_free_ char **argv = NULL;
	int r = sample_argv(lang, &argv, err);
	if (r < 0)
		return r;

	char nonce[MOAT_EVAL_NONCE_LEN + 1];
	if ((r = moat__random_hex(MOAT_EVAL_NONCE_LEN / 2, nonce)) < 0)
		return moat_error_set(err, r, "getrandom");
	size_t code_len, req_len;
	_cleanup_free_ char *code = moat_eval_code(p, s, &code_len);
	_cleanup_free_ char *req = code ? moat_eval_request(nonce, p, code, code_len, &req_len) : NULL;
	if (!req)
		return moat_error_set(err, ENOMEM, "request");

	/* A shallow copy: the sample borrows everything but argv and stdin
	 * from the base configuration. */
	moat_config cfg = *base;
	cfg.argv = argv;
	cfg.stdin_path = NULL;
	cfg.tty = false;
	/* The problem's own limits, over the command line's. */
	moat_judge_case lc;
	memset(&lc, 0, sizeof(lc));
	lc.limits = p->limits;
	lc.limits_set = p->limits_set;
	moat_judge_case_limits(&lc, &base->limits, &cfg.limits);

	moat_run_io io;
	moat_run_io_init(&io);
	io.forward_stdout_fd = -1;
	io.forward_stderr_fd = -1;
	io.stdin_data = req;
	io.stdin_len = req_len;
	io.stdin_data_set = true;
	io.gateway = gateway;
	tail *t = calloc(1, sizeof(*t));
	if (!t)
		return moat_error_set(err, ENOMEM, "output");
	io.on_output = on_output;
	io.userdata = t;

	moat_error serr = {0};
	if (moat_sandbox_run(&cfg, &io, ret_r, &serr) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		ret_r->status = MOAT_STATUS_SETUP_ERROR;
		snprintf(ret_r->error, sizeof(ret_r->error), "%s", moat_error_format(&serr, buf, sizeof(buf)));
	}
	char detail[MOAT_EVAL_DETAIL_MAX];
	moat_eval_report rep = moat_eval_report_parse(t->buf, t->len, nonce, detail, sizeof(detail));
	free(t);
	*ret_verdict = moat_eval_decide(ret_r, false, rep, detail, ret_result, result_size);
	return 0;
}

/* ---- the worker pool --------------------------------------------------- */

/* What a worker sends back: the verdict byte, the cpu_ms in decimal and a
 * newline, the result line and a newline, the isolation object and a
 * newline. A result line holds the sample's code: up to the field cap. */
#define WORKER_MSG_MAX (MOAT_EVAL_MAX_FIELD_BYTES * 2 + (64u << 10))

typedef struct run_ctx {
	const moat_config *base;
	const struct moat_gateway_config *gateway;
	const moat_eval_problems *p;
	const moat_eval_samples *s;
	const moat_eval_options *o;
	moat_eval_verdict *verdicts;
	moat_eval_totals *totals;
} run_ctx;

static char *isolation_json(const moat_result *r)
{
	_cleanup_free_ char *s = moat_result_to_json(r);
	json_t *res = s ? json_loads(s, 0, NULL) : NULL;
	char *out = res ? json_dumps(json_object_get(res, "isolation"), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(res);
	return out;
}

/* In the worker (workpool.h): one sample, its message on fd. */
static void sample_work(void *arg, size_t i, int fd)
{
	const run_ctx *pl = arg;
	const moat_eval_sample *s = &pl->s->v[i];
	moat_eval_verdict v;
	char result[MOAT_EVAL_DETAIL_MAX + 64];
	moat_result r;
	moat_error err = {0};
	if (moat_eval_run_sample(pl->base, pl->gateway, &pl->p->v[s->problem], s, pl->o->lang, &v, result,
				 sizeof(result), &r, &err) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		v = MOAT_EVAL_SETUP_ERROR;
		r.status = MOAT_STATUS_SETUP_ERROR;
		snprintf(result, sizeof(result), "failed: setup error: %s", moat_error_format(&err, buf, sizeof(buf)));
	}
	_cleanup_free_ char *line = moat_eval_result_json(pl->p, s, i, v, result, &r);
	_cleanup_free_ char *iso = isolation_json(&r);
	if (!line || !iso)
		_exit(3);
	char head[32];
	int hn = snprintf(head, sizeof(head), "%c%" PRIu64 "\n", (char)v, r.cpu_ms);
	if (moat__write_all(fd, head, (size_t)hn) < 0 || moat__write_all(fd, line, strlen(line)) < 0 ||
	    moat__write_all(fd, "\n", 1) < 0 || moat__write_all(fd, iso, strlen(iso)) < 0 ||
	    moat__write_all(fd, "\n", 1) < 0)
		_exit(4);
	_exit(0);
}

/* A worker ended: its message becomes the sample's line; a worker that died
 * is moat's failure and reads as setup_error. */
static char *sample_done(void *arg, size_t i, const char *buf, size_t len, int status)
{
	run_ctx *pl = arg;
	const moat_eval_sample *s = &pl->s->v[i];
	/* The verdict byte first, then text: the first newline is after it. */
	const char *nl0 = buf && len > 1 ? memchr(buf + 1, '\n', len - 1) : NULL;
	const char *nl1 = nl0 ? memchr(nl0 + 1, '\n', (size_t)(buf + len - nl0 - 1)) : NULL;
	const char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(buf + len - nl1 - 1)) : NULL;
	moat_eval_verdict v;
	char *line;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && nl2 && (unsigned char)buf[0] < _MOAT_EVAL_VERDICT_MAX) {
		v = (moat_eval_verdict)(unsigned char)buf[0];
		pl->totals->cpu_ms += strtoull(buf + 1, NULL, 10);
		line = strndup(nl0 + 1, (size_t)(nl1 - nl0 - 1));
		if (!pl->totals->isolation_json)
			pl->totals->isolation_json = strndup(nl1 + 1, (size_t)(nl2 - nl1 - 1));
	} else {
		moat_result r;
		moat_result_init(&r);
		r.status = MOAT_STATUS_SETUP_ERROR;
		char result[128];
		if (WIFSIGNALED(status))
			snprintf(result, sizeof(result), "failed: setup error: the worker running it died of signal %d",
				 WTERMSIG(status));
		else
			snprintf(result, sizeof(result), "failed: setup error: the worker running it failed (status %d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		v = MOAT_EVAL_SETUP_ERROR;
		line = moat_eval_result_json(pl->p, s, i, v, result, &r);
	}
	pl->verdicts[i] = v;
	moat_eval_totals_add(pl->totals, s, v);
	return line;
}

static void sample_emit(void *arg, size_t i, char *line)
{
	(void)i;
	run_ctx *pl = arg;
	if (pl->o->emit)
		pl->o->emit(pl->o->userdata, line);
	free(line);
}

static void sample_progress(void *arg, size_t done, size_t n)
{
	run_ctx *pl = arg;
	if (pl->o->progress)
		pl->o->progress(pl->o->userdata, done, n);
}

int moat_eval_run(const moat_config *base, const struct moat_gateway_config *gateway, const moat_eval_problems *p,
		  const moat_eval_samples *s, const moat_eval_options *o, moat_eval_totals *ret, moat_error *err)
{
	unsigned parallel = o->parallel;
	if (parallel == 0 || parallel > MOAT_EVAL_MAX_PARALLEL)
		return moat_error_set(err, MOAT_EINPUT, "parallel: %u is not between 1 and %d", parallel,
				      MOAT_EVAL_MAX_PARALLEL);
	if (moat_eval_totals_init(ret, p->n) < 0)
		return moat_error_set(err, ENOMEM, "eval");

	uint64_t t0 = moat__now_ns();
	_cleanup_free_ moat_eval_verdict *verdicts = calloc(s->n ? s->n : 1, sizeof(*verdicts));
	if (!verdicts)
		return moat_error_set(err, ENOMEM, "eval");
	run_ctx pl = {.base = base, .gateway = gateway, .p = p, .s = s, .o = o, .verdicts = verdicts, .totals = ret};
	static const moat_workpool_ops ops = {
		.work = sample_work, .done = sample_done, .emit = sample_emit, .progress = sample_progress};
	int r = moat__workpool_run(s->n, parallel, WORKER_MSG_MAX, &ops, &pl, err);
	if (r >= 0)
		ret->wall_ms = (moat__now_ns() - t0) / 1000000;
	return r;
}
