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
#include <sys/socket.h>
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

/* A worker's warm sandbox, started with its first Python sample. */
typedef struct warm_state {
	moat_eval_warm *w;
	bool tried;
} warm_state;

/* One sample: a Python sample of a problem without limits of its own in
 * the worker's warm interpreter when ws is given and one could be started
 * (a failure of it frees it and runs the sample cold, as every later one),
 * else cold. *ret_warm says which ran it. */
static int run_sample(const moat_config *base, const struct moat_gateway_config *gateway, const moat_eval_problem *p,
		      const moat_eval_sample *s, moat_eval_lang lang, warm_state *ws, bool *ret_warm,
		      moat_eval_verdict *ret_verdict, char *ret_result, size_t result_size, moat_result *ret_r,
		      moat_error *err)
{
	moat_result_init(ret_r);
	*ret_warm = false;
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

	tail *t = calloc(1, sizeof(*t));
	if (!t)
		return moat_error_set(err, ENOMEM, "output");
	bool python = lang == MOAT_EVAL_LANG_NONE || lang == MOAT_EVAL_LANG_PYTHON;
	if (ws && python && !p->limits_set && !ws->tried) {
		moat_error werr = {0};
		ws->tried = true;
		if (moat__eval_warm_new(base, &ws->w, &werr) < 0)
			ws->w = NULL;
	}
	if (ws && ws->w && python && !p->limits_set) {
		moat_error werr = {0};
		if (moat__eval_warm_run(ws->w, &cfg.limits, req, req_len, t->buf, TAIL_MAX, &t->len, ret_r, &werr) == 0) {
			*ret_warm = true;
			goto decide;
		}
		/* The interpreter or the sample's cgroup failed: this worker
		 * runs cold from now on, this sample first. */
		moat__eval_warm_free(ws->w);
		ws->w = NULL;
		moat_result_init(ret_r);
		t->len = 0;
	}

	moat_run_io io;
	moat_run_io_init(&io);
	io.forward_stdout_fd = -1;
	io.forward_stderr_fd = -1;
	io.stdin_data = req;
	io.stdin_len = req_len;
	io.stdin_data_set = true;
	io.gateway = gateway;
	io.on_output = on_output;
	io.userdata = t;

	moat_error serr = {0};
	if (moat_sandbox_run(&cfg, &io, ret_r, &serr) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		ret_r->status = MOAT_STATUS_SETUP_ERROR;
		snprintf(ret_r->error, sizeof(ret_r->error), "%s", moat_error_format(&serr, buf, sizeof(buf)));
	}
decide:;
	char detail[MOAT_EVAL_DETAIL_MAX];
	moat_eval_report rep = moat_eval_report_parse(t->buf, t->len, nonce, detail, sizeof(detail));
	free(t);
	*ret_verdict = moat_eval_decide(ret_r, false, rep, detail, ret_result, result_size);
	return 0;
}

int moat_eval_run_sample(const moat_config *base, const struct moat_gateway_config *gateway,
			 const moat_eval_problem *p, const moat_eval_sample *s, moat_eval_lang lang,
			 moat_eval_verdict *ret_verdict, char *ret_result, size_t result_size, moat_result *ret_r,
			 moat_error *err)
{
	bool warm;
	return run_sample(base, gateway, p, s, lang, NULL, &warm, ret_verdict, ret_result, result_size, ret_r, err);
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

/* One sample's message (below), malloc'd, or NULL when out of memory. */
static char *sample_message(const run_ctx *pl, size_t i, warm_state *w, size_t *ret_len)
{
	const moat_eval_sample *s = &pl->s->v[i];
	moat_eval_verdict v;
	char result[MOAT_EVAL_DETAIL_MAX + 64];
	moat_result r;
	moat_error err = {0};
	bool warm = false;
	if (run_sample(pl->base, pl->gateway, &pl->p->v[s->problem], s, pl->o->lang, w, &warm, &v, result,
		       sizeof(result), &r, &err) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		v = MOAT_EVAL_SETUP_ERROR;
		r.status = MOAT_STATUS_SETUP_ERROR;
		snprintf(result, sizeof(result), "failed: setup error: %s", moat_error_format(&err, buf, sizeof(buf)));
	}
	_cleanup_free_ char *line = moat_eval_result_json(pl->p, s, i, v, result, &r);
	_cleanup_free_ char *iso = isolation_json(&r);
	if (!line || !iso)
		return NULL;
	char *msg = NULL;
	int n = asprintf(&msg, "%c%" PRIu64 " %c\n%s\n%s\n", (char)v, r.cpu_ms, warm ? 'w' : 'c', line, iso);
	if (n < 0)
		return NULL;
	*ret_len = (size_t)n;
	return msg;
}

/* In the worker (workpool.h): one sample, cold, its message on fd. */
static void sample_work(void *arg, size_t i, int fd)
{
	size_t len;
	_cleanup_free_ char *msg = sample_message(arg, i, NULL, &len);
	if (!msg)
		_exit(3);
	if (moat__write_all(fd, msg, len) < 0)
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
		char *end;
		pl->totals->cpu_ms += strtoull(buf + 1, &end, 10);
		pl->totals->warm_samples += end[0] == ' ' && end[1] == 'w';
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

/* ---- the warm pool ----------------------------------------------------- */

/* A worker of the warm pool: one process, forked before any sample ran,
 * that keeps one warm sandbox (eval_warm.c) for all the samples it is
 * given. It reads sample indexes (a size_t each) and writes for each a
 * size_t length and the sample's message. */
_noreturn_ static void warm_worker(const run_ctx *pl, int jobs, int results)
{
	warm_state w = {0};
	size_t i;
	/* A warm interpreter that died is seen as EPIPE on its pipe, and the
	 * sample then runs cold, instead of this worker dying of SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	while (moat__read_all(jobs, &i, sizeof(i)) == (ssize_t)sizeof(i)) {
		if (i >= pl->s->n)
			_exit(5);
		size_t len = 0;
		_cleanup_free_ char *msg = sample_message(pl, i, &w, &len);
		if (!msg)
			_exit(3);
		if (moat__write_all(results, &len, sizeof(len)) < 0 || moat__write_all(results, msg, len) < 0)
			_exit(4);
	}
	moat__eval_warm_free(w.w);
	_exit(0);
}

/* Items a warm worker holds at once: the one it runs and the next, so that
 * it never waits for this process between two samples. */
#define WARM_QUEUE 2

typedef struct warm_slot {
	pid_t pid;
	int jobs, results;
	size_t q[WARM_QUEUE]; /* q[0] runs; its message comes first */
	size_t nq;
	size_t got, want; /* bytes of the message read, and its length */
	bool have_len;
	char *buf;
} warm_slot;

static void slot_end(warm_slot *w, int *ret_status)
{
	if (w->jobs >= 0)
		close(w->jobs);
	if (w->results >= 0)
		close(w->results);
	w->jobs = w->results = -1;
	int status = 0;
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	w->pid = 0;
	free(w->buf);
	w->buf = NULL;
	if (ret_status)
		*ret_status = status;
}

static int warm_pool_run(run_ctx *pl, unsigned parallel, moat_error *err)
{
	size_t n = pl->s->n;
	if (parallel > n)
		parallel = (unsigned)(n ? n : 1);
	_cleanup_free_ warm_slot *ws = calloc(parallel, sizeof(*ws));
	_cleanup_free_ char **lines = calloc(n ? n : 1, sizeof(*lines));
	if (!ws || !lines)
		return moat_error_set(err, ENOMEM, "eval");
	for (unsigned k = 0; k < parallel; k++)
		ws[k].jobs = ws[k].results = -1;
	int r = 0;
	for (unsigned k = 0; k < parallel; k++) {
		/* Jobs go on a socket: a send to a worker that died fails
		 * with EPIPE instead of raising SIGPIPE here. */
		int jp[2], rp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, jp) < 0) {
			r = moat_error_set(err, errno, "pipe");
			goto out;
		}
		if (pipe2(rp, O_CLOEXEC) < 0) {
			r = moat_error_set(err, errno, "pipe");
			close(jp[0]);
			close(jp[1]);
			goto out;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(jp[1]);
			close(rp[0]);
			for (unsigned j = 0; j < k; j++) {
				close(ws[j].jobs);
				close(ws[j].results);
			}
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			warm_worker(pl, jp[0], rp[1]);
		}
		close(jp[0]);
		close(rp[1]);
		ws[k].jobs = jp[1];
		ws[k].results = rp[0];
		if (pid < 0) {
			r = moat_error_set(err, errno, "fork");
			goto out;
		}
		ws[k].pid = pid;
	}

	size_t next = 0, done = 0, emitted = 0;
	while (done < n) {
		/* Hand out work to idle live workers. */
		unsigned live = 0;
		for (unsigned k = 0; k < parallel; k++) {
			if (ws[k].pid <= 0)
				continue;
			live++;
			while (ws[k].nq < WARM_QUEUE && next < n) {
				/* A worker that died is found by its results
				 * pipe below, its items with it. */
				if (send(ws[k].jobs, &next, sizeof(next), MSG_NOSIGNAL) != (ssize_t)sizeof(next))
					break;
				ws[k].q[ws[k].nq++] = next++;
			}
		}
		if (live == 0) {
			/* Every worker died: what is left is moat's failure. */
			for (; next < n; next++) {
				lines[next] = sample_done(pl, next, NULL, 0, 3 << 8);
				done++;
			}
			if (done >= n)
				break;
		}
		struct pollfd pf[MOAT_EVAL_MAX_PARALLEL];
		for (unsigned k = 0; k < parallel; k++)
			pf[k] = (struct pollfd){.fd = ws[k].pid > 0 ? ws[k].results : -1, .events = POLLIN};
		if (poll(pf, parallel, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = moat_error_set(err, errno, "poll");
			goto out;
		}
		for (unsigned k = 0; k < parallel; k++) {
			warm_slot *w = &ws[k];
			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)) || w->pid <= 0)
				continue;
			ssize_t got;
			if (!w->have_len) {
				got = read(w->results, (char *)&w->want + w->got, sizeof(w->want) - w->got);
				if (got > 0 && (w->got += (size_t)got) == sizeof(w->want)) {
					w->have_len = true;
					w->got = 0;
					free(w->buf);
					w->buf = w->want <= WORKER_MSG_MAX ? malloc(w->want ? w->want : 1) : NULL;
					if (!w->buf)
						got = -1; /* over the cap: the worker's failure */
				}
			} else {
				got = read(w->results, w->buf + w->got, w->want - w->got);
				if (got > 0)
					w->got += (size_t)got;
			}
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				int status;
				slot_end(w, &status);
				if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
					status = 3 << 8;
				for (size_t j = 0; j < w->nq; j++) {
					lines[w->q[j]] = sample_done(pl, w->q[j], NULL, 0, status);
					done++;
					sample_progress(pl, done, n);
				}
				w->nq = 0;
				continue;
			}
			if (w->have_len && w->got == w->want) {
				if (w->nq == 0) {
					/* A message nobody asked for. */
					slot_end(w, NULL);
					continue;
				}
				lines[w->q[0]] = sample_done(pl, w->q[0], w->buf, w->want, 0);
				memmove(w->q, w->q + 1, (w->nq - 1) * sizeof(w->q[0]));
				w->nq--;
				w->have_len = false;
				w->got = 0;
				done++;
				sample_progress(pl, done, n);
			}
		}
		for (; emitted < n && lines[emitted]; emitted++) {
			sample_emit(pl, emitted, lines[emitted]);
			lines[emitted] = NULL;
		}
	}
	for (; emitted < n && lines[emitted]; emitted++) {
		sample_emit(pl, emitted, lines[emitted]);
		lines[emitted] = NULL;
	}
out:
	for (unsigned k = 0; k < parallel; k++) {
		if (ws[k].jobs >= 0) {
			close(ws[k].jobs);
			ws[k].jobs = -1;
		}
	}
	for (unsigned k = 0; k < parallel; k++) {
		if (ws[k].pid > 0) {
			int status;
			/* Told to stop by the closed job pipe: its sandbox goes
			 * with it. A pool that failed kills it. */
			if (r < 0)
				kill(ws[k].pid, SIGKILL);
			while (waitpid(ws[k].pid, &status, 0) < 0 && errno == EINTR)
				;
			ws[k].pid = 0;
		}
		if (ws[k].results >= 0)
			close(ws[k].results);
		free(ws[k].buf);
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	return r;
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
	ret->cold_reason = moat__eval_warm_refusal(base);
	int r;
	if (!ret->cold_reason) {
		/* Whatever the warm pool could not run warm it ran cold. */
		ret->cold_reason = "not Python, limits of the problem's own, or no warm interpreter";
		r = warm_pool_run(&pl, parallel, err);
	} else
		r = moat__workpool_run(s->n, parallel, WORKER_MSG_MAX, &ops, &pl, err);
	if (r >= 0)
		ret->wall_ms = (moat__now_ns() - t0) / 1000000;
	return r;
}
