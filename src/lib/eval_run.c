/* Running benchmark samples: one fresh sandbox per sample, the embedded
 * harness as its program and the request on its stdin, and a bounded pool
 * of worker processes that keeps the result lines in sample order. The
 * decisions are pure and live in eval.c. */
#include "eval.h"
#include "judge.h"

#include "sandbox.h"
#include "util.h"

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

typedef struct worker {
	pid_t pid;
	int fd;
	size_t index;
	char *buf;
	size_t len;
} worker;

typedef struct pool {
	const moat_config *base;
	const struct moat_gateway_config *gateway;
	const moat_eval_problems *p;
	const moat_eval_samples *s;
	const moat_eval_options *o;
	worker *w;
	unsigned n_w;
	char **lines;
	moat_eval_verdict *verdicts;
	moat_eval_totals *totals;
} pool;

static char *isolation_json(const moat_result *r)
{
	_cleanup_free_ char *s = moat_result_to_json(r);
	json_t *res = s ? json_loads(s, 0, NULL) : NULL;
	char *out = res ? json_dumps(json_object_get(res, "isolation"), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(res);
	return out;
}

_noreturn_ static void worker_main(const pool *pl, size_t i, int fd)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
	for (size_t k = 0; k < ELEMENTSOF(sigs); k++)
		signal(sigs[k], SIG_DFL);
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

static int start_worker(pool *pl, worker *w, size_t i, moat_error *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "worker pipe");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return moat_error_set(err, e, "fork a worker");
	}
	if (pid == 0) {
		/* When eval dies, its workers stop too: SIGTERM reaches the
		 * sandbox's signal handling, which ends the run cleanly. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(5);
		close(pfd[0]);
		for (unsigned k = 0; k < pl->n_w; k++)
			if (pl->w[k].fd >= 0)
				close(pl->w[k].fd);
		worker_main(pl, i, pfd[1]);
	}
	close(pfd[1]);
	*w = (worker){.pid = pid, .fd = pfd[0], .index = i};
	return 0;
}

/* A worker ended: its message becomes the sample's line; a worker that died
 * is moat's failure and reads as setup_error. */
static int finish_worker(pool *pl, worker *w)
{
	int status = 0;
	while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
		;
	const moat_eval_sample *s = &pl->s->v[w->index];
	/* The verdict byte first, then text: the first newline is after it. */
	char *nl0 = w->len > 1 ? memchr(w->buf + 1, '\n', w->len - 1) : NULL;
	char *nl1 = nl0 ? memchr(nl0 + 1, '\n', (size_t)(w->buf + w->len - nl0 - 1)) : NULL;
	char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(w->buf + w->len - nl1 - 1)) : NULL;
	moat_eval_verdict v;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && nl2 && (unsigned char)w->buf[0] < _MOAT_EVAL_VERDICT_MAX) {
		v = (moat_eval_verdict)(unsigned char)w->buf[0];
		pl->totals->cpu_ms += strtoull(w->buf + 1, NULL, 10);
		pl->lines[w->index] = strndup(nl0 + 1, (size_t)(nl1 - nl0 - 1));
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
		pl->lines[w->index] = moat_eval_result_json(pl->p, s, w->index, v, result, &r);
	}
	pl->verdicts[w->index] = v;
	moat_eval_totals_add(pl->totals, s, v);
	free(w->buf);
	close(w->fd);
	*w = (worker){.fd = -1};
	return pl->lines[s - pl->s->v] ? 0 : -ENOMEM;
}

static int read_worker(pool *pl, worker *w)
{
	char tmp[16384];
	ssize_t n = read(w->fd, tmp, sizeof(tmp));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : finish_worker(pl, w);
	if (n == 0 || w->len + (size_t)n > WORKER_MSG_MAX)
		return finish_worker(pl, w);
	char *b = realloc(w->buf, w->len + (size_t)n);
	if (!b)
		return -ENOMEM;
	w->buf = b;
	memcpy(w->buf + w->len, tmp, (size_t)n);
	w->len += (size_t)n;
	return 0;
}

static void kill_workers(pool *pl)
{
	for (unsigned k = 0; k < pl->n_w; k++) {
		if (pl->w[k].pid > 0) {
			kill(pl->w[k].pid, SIGTERM);
			waitpid(pl->w[k].pid, NULL, 0);
		}
		if (pl->w[k].fd >= 0)
			close(pl->w[k].fd);
		free(pl->w[k].buf);
	}
}

int moat_eval_run(const moat_config *base, const struct moat_gateway_config *gateway, const moat_eval_problems *p,
		  const moat_eval_samples *s, const moat_eval_options *o, moat_eval_totals *ret, moat_error *err)
{
	unsigned parallel = o->parallel;
	if (parallel == 0 || parallel > MOAT_EVAL_MAX_PARALLEL)
		return moat_error_set(err, MOAT_EINPUT, "parallel: %u is not between 1 and %d", parallel,
				      MOAT_EVAL_MAX_PARALLEL);
	if (parallel > s->n)
		parallel = (unsigned)s->n;
	if (moat_eval_totals_init(ret, p->n) < 0)
		return moat_error_set(err, ENOMEM, "eval");

	uint64_t t0 = moat__now_ns();
	pool pl = {.base = base, .gateway = gateway, .p = p, .s = s, .o = o, .n_w = parallel, .totals = ret};
	_cleanup_free_ worker *w = calloc(parallel, sizeof(*w));
	_cleanup_free_ char **lines = calloc(s->n, sizeof(*lines));
	_cleanup_free_ moat_eval_verdict *verdicts = calloc(s->n, sizeof(*verdicts));
	_cleanup_free_ struct pollfd *pfd = calloc(parallel, sizeof(*pfd));
	if (!w || !lines || !verdicts || !pfd)
		return moat_error_set(err, ENOMEM, "eval");
	for (unsigned k = 0; k < parallel; k++)
		w[k].fd = -1;
	pl.w = w;
	pl.lines = lines;
	pl.verdicts = verdicts;

	size_t next = 0, emitted = 0, done = 0;
	int r = 0;
	while (emitted < s->n) {
		for (unsigned k = 0; k < parallel; k++) {
			if (w[k].fd < 0 && next < s->n && (r = start_worker(&pl, &w[k], next++, err)) < 0)
				goto out;
			pfd[k].fd = w[k].fd;
			pfd[k].events = POLLIN;
			pfd[k].revents = 0;
		}
		if (poll(pfd, parallel, -1) < 0 && errno != EINTR) {
			r = moat_error_set(err, errno, "poll");
			goto out;
		}
		for (unsigned k = 0; k < parallel; k++) {
			if (w[k].fd < 0 || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			bool was = w[k].fd >= 0;
			if ((r = read_worker(&pl, &w[k])) < 0) {
				r = moat_error_set(err, r, "eval");
				goto out;
			}
			if (was && w[k].fd < 0 && o->progress)
				o->progress(o->userdata, ++done, s->n);
		}
		while (emitted < s->n && lines[emitted]) {
			if (o->emit)
				o->emit(o->userdata, lines[emitted]);
			free(lines[emitted]);
			lines[emitted] = (char *)""; /* emitted; never freed twice */
			emitted++;
		}
	}
	ret->wall_ms = (moat__now_ns() - t0) / 1000000;
out:
	kill_workers(&pl);
	for (size_t i = emitted; i < s->n; i++)
		free(lines[i]);
	return r;
}
