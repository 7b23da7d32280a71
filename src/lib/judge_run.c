/* Running graded cases: staging the source and the harness, one sandbox per
 * case, and a bounded pool of worker processes that keeps the output in case
 * order. The decisions themselves are pure and live in judge.c. */
#include "judge.h"
#include "sweep.h"
#include "workpool.h"

#include "egress.h"
#include "gateway.h"
#include "secretstore.h"
#include "sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* The harnesses, embedded at build time by harness/embed.py. */
extern const char moat__harness_python[];
extern const size_t moat__harness_python_len;
extern const char moat__harness_javascript[];
extern const size_t moat__harness_javascript_len;

typedef struct lang_info {
	const char *interpreter; /* default, inside the sandbox */
	const char *const *flags; /* before the script */
	const char *solution;    /* file names inside MOAT_JUDGE_DIR */
	const char *harness;
	const char *harness_data;
	const size_t *harness_len;
} lang_info;

/* -I: no user site, no PYTHON* variables, no script folder on sys.path; the
 * submission gets a plain interpreter. */
static const char *const python_flags[] = {"-I", NULL};
static const char *const no_flags[] = {NULL};

static const lang_info langs[_MOAT_JUDGE_LANG_MAX] = {
	[MOAT_JUDGE_LANG_PYTHON] = {"/usr/bin/python3", python_flags, "solution.py", "harness.py",
				    moat__harness_python, &moat__harness_python_len},
	[MOAT_JUDGE_LANG_JAVASCRIPT] = {"/usr/bin/node", no_flags, "solution.js", "harness.js",
					moat__harness_javascript, &moat__harness_javascript_len},
};

int moat_judge_program_command(moat_judge_program *p, char *const *argv, moat_error *err)
{
	memset(p, 0, sizeof(*p));
	if (!argv || !argv[0])
		return moat_error_set(err, MOAT_EINPUT, "no command given");
	p->lang = MOAT_JUDGE_LANG_NONE;
	p->command = moat__strv_copy(argv);
	return p->command ? 0 : moat_error_set(err, ENOMEM, "command");
}

/* Writes one staged file readable by the sandbox user, whatever the umask:
 * in root mode that user is an unprivileged id on the host. */
static int stage_file(int dirfd, const char *name, const char *data, size_t len, moat_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return moat_error_set(err, errno, "stage %s", name);
	int r = moat__write_all(fd, data, len);
	if (r < 0)
		return moat_error_set(err, r, "stage %s", name);
	if (fchmod(fd, 0644) < 0)
		return moat_error_set(err, errno, "stage %s", name);
	return 0;
}

int moat_judge_program_source(moat_judge_program *p, moat_judge_lang lang, const char *source_path,
			      const char *interpreter, moat_error *err)
{
	memset(p, 0, sizeof(*p));
	if (lang <= MOAT_JUDGE_LANG_NONE || lang >= _MOAT_JUDGE_LANG_MAX)
		return moat_error_set(err, MOAT_EINPUT, "%s: unknown language (python or javascript)", source_path);
	const lang_info *li = &langs[lang];
	if (interpreter && !moat_path_is_clean_absolute(interpreter))
		return moat_error_set(err, MOAT_EINPUT, "interpreter %s: an absolute path inside the sandbox",
				      interpreter);

	_cleanup_free_ char *src = NULL;
	size_t src_len;
	int r = moat__judge_read_file(source_path, MOAT_JUDGE_MAX_SOURCE_BYTES, &src, &src_len, err);
	if (r < 0)
		return r;
	if (memchr(src, '\0', src_len))
		return moat_error_set(err, MOAT_EINPUT, "%s: a source file holds no NUL byte", source_path);

	const char *tmp = getenv("TMPDIR");
	_cleanup_free_ char *dir = NULL;
	/* Named after our pid, so that the next moat sweeps it if we are
	 * killed before we remove it (sweep.h). */
	if (asprintf(&dir, "%s/" MOAT_STAGE_PREFIX "%d-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp",
		     (int)getpid()) < 0)
		return moat_error_set(err, ENOMEM, "stage");
	if (!mkdtemp(dir))
		return moat_error_set(err, errno, "stage folder %s", dir);
	p->stage_dir = TAKE_PTR(dir);
	p->lang = lang;
	/* Searchable but not listable by others: the sandbox user (an
	 * unprivileged host id in root mode) reaches the two files by name. */
	_cleanup_close_ int dfd = open(p->stage_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fchmod(dfd, 0711) < 0) {
		r = moat_error_set(err, errno, "stage folder %s", p->stage_dir);
		moat_judge_program_done(p);
		return r;
	}
	/* The full paths first, so that cleanup knows them even when writing
	 * fails half-way. */
	if (asprintf(&p->stage_files[0], "%s/%s", p->stage_dir, li->solution) < 0 ||
	    asprintf(&p->stage_files[1], "%s/%s", p->stage_dir, li->harness) < 0) {
		p->stage_files[0] = p->stage_files[1] = NULL;
		rmdir(p->stage_dir);
		moat_judge_program_done(p);
		return moat_error_set(err, ENOMEM, "stage");
	}
	if ((r = stage_file(dfd, li->solution, src, src_len, err)) < 0 ||
	    (r = stage_file(dfd, li->harness, li->harness_data, *li->harness_len, err)) < 0) {
		moat_judge_program_done(p);
		return r;
	}
	p->interpreter = strdup(interpreter ? interpreter : li->interpreter);
	if (!p->interpreter) {
		moat_judge_program_done(p);
		return moat_error_set(err, ENOMEM, "stage");
	}
	return 0;
}

void moat_judge_program_unstage(const moat_judge_program *p)
{
	if (!p || !p->stage_dir)
		return;
	for (size_t i = 0; i < ELEMENTSOF(p->stage_files); i++)
		if (p->stage_files[i])
			unlink(p->stage_files[i]);
	rmdir(p->stage_dir);
}

void moat_judge_program_done(moat_judge_program *p)
{
	if (!p)
		return;
	moat_judge_program_unstage(p);
	free(p->stage_dir);
	for (size_t i = 0; i < ELEMENTSOF(p->stage_files); i++)
		free(p->stage_files[i]);
	free(p->interpreter);
	moat__strv_free(p->command);
	memset(p, 0, sizeof(*p));
}

int moat_judge_program_configure(const moat_judge_program *p, moat_config *c, moat_error *err)
{
	if (!p->stage_dir)
		return 0;
	return moat_config_add_bind(c, p->stage_dir, MOAT_JUDGE_DIR, 0, err);
}

int moat_judge_program_argv(const moat_judge_program *p, const moat_judge_case *c, char ***ret, moat_error *err)
{
	_cleanup_strv_free_ char **argv = NULL;
	char path[64];
	int r = 0;
	if (p->lang == MOAT_JUDGE_LANG_NONE) {
		if (c->is_call)
			return moat_error_set(err, MOAT_EINPUT,
					      "case \"%s\" (line %u) calls a function: it needs the program as a source file",
					      c->name, c->line);
		argv = moat__strv_copy(p->command);
		if (!argv)
			return moat_error_set(err, ENOMEM, "argv");
	} else {
		const lang_info *li = &langs[p->lang];
		if (moat__strv_push(&argv, p->interpreter) < 0)
			return moat_error_set(err, ENOMEM, "argv");
		for (const char *const *f = li->flags; *f; f++)
			r |= moat__strv_push(&argv, *f);
		if (c->is_call) {
			snprintf(path, sizeof(path), "%s/%s", MOAT_JUDGE_DIR, li->harness);
			r |= moat__strv_push(&argv, path);
		}
		snprintf(path, sizeof(path), "%s/%s", MOAT_JUDGE_DIR, li->solution);
		r |= moat__strv_push(&argv, path);
		if (r < 0)
			return moat_error_set(err, ENOMEM, "argv");
	}
	for (char **a = c->args; a && *a; a++)
		if (moat__strv_push(&argv, *a) < 0)
			return moat_error_set(err, ENOMEM, "argv");
	if (moat__strv_length(argv) > MOAT_MAX_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "case \"%s\": more than %d arguments", c->name, MOAT_MAX_ARGS);
	*ret = TAKE_PTR(argv);
	return 0;
}

/* ---- one case ---------------------------------------------------------- */

#define STDERR_HEAD 2048

typedef struct capture {
	char *out;
	size_t out_len, out_alloc, out_max;
	bool out_overflow;
	char err_head[STDERR_HEAD];
	size_t err_len;
} capture;

static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	capture *cap = userdata;
	if (stream == 2) {
		size_t n = len < STDERR_HEAD - cap->err_len ? len : STDERR_HEAD - cap->err_len;
		memcpy(cap->err_head + cap->err_len, buf, n);
		cap->err_len += n;
		return;
	}
	if (cap->out_overflow)
		return;
	if (len > cap->out_max - cap->out_len) {
		/* More than can be compared: never compare a prefix. */
		cap->out_overflow = true;
		return;
	}
	if (cap->out_len + len > cap->out_alloc) {
		size_t want = cap->out_alloc ? cap->out_alloc : 4096;
		while (want < cap->out_len + len)
			want *= 2;
		if (want > cap->out_max)
			want = cap->out_max;
		char *n = realloc(cap->out, want);
		if (!n) {
			cap->out_overflow = true;
			return;
		}
		cap->out = n;
		cap->out_alloc = want;
	}
	memcpy(cap->out + cap->out_len, buf, len);
	cap->out_len += len;
}

/* Once a case's init is cloned: its TLS authority (the key must not be in
 * memory the init inherits). */
static int case_after_clone(void *arg, moat_error *err)
{
	return moat_egress_tls_arm(arg, "judge", err);
}

static int run_case(const moat_config *base, const moat_gateway_config *gateway, const moat_judge_program *p,
		    const moat_judge_case *c, moat_secrets *secrets, moat_egress *egress, moat_judge_outcome *ret,
		    moat_error *err);

int moat_judge_run_case(const moat_config *base, const moat_gateway_config *gateway,
			const moat_judge_program *p, const moat_judge_case *c, moat_judge_outcome *ret,
			moat_error *err)
{
	return run_case(base, gateway, p, c, NULL, NULL, ret, err);
}

static int run_case(const moat_config *base, const moat_gateway_config *gateway, const moat_judge_program *p,
		    const moat_judge_case *c, moat_secrets *secrets, moat_egress *egress, moat_judge_outcome *ret,
		    moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	moat_result_init(&ret->result);
	ret->verdict = MOAT_JUDGE_SETUP_ERROR;

	_cleanup_strv_free_ char **argv = NULL;
	int r = moat_judge_program_argv(p, c, &argv, err);
	if (r < 0)
		return r;

	/* A shallow copy: the case borrows everything but argv, limits and
	 * stdin from the base configuration. */
	moat_config cfg = *base;
	cfg.argv = argv;
	cfg.stdin_path = NULL;
	cfg.tty = false;
	moat_judge_case_limits(c, &base->limits, &cfg.limits);

	char nonce[MOAT_JUDGE_NONCE_LEN + 1] = "";
	_cleanup_free_ char *request = NULL;
	size_t request_len = 0;
	moat_run_io io;
	moat_run_io_init(&io);
	io.forward_stdout_fd = -1;
	io.forward_stderr_fd = -1;
	io.stdin_data_set = true;
	io.gateway = gateway;
	io.secrets = secrets;
	if (egress) {
		io.after_clone = case_after_clone;
		io.after_clone_arg = egress;
	}
	if (c->is_call) {
		if ((r = moat_judge_nonce(nonce, err)) < 0)
			return r;
		request = moat_judge_call_request(c, nonce, &request_len);
		if (!request)
			return moat_error_set(err, ENOMEM, "call request");
		io.stdin_data = request;
		io.stdin_len = request_len;
	} else {
		io.stdin_data = c->stdin_data ? c->stdin_data : "";
		io.stdin_len = c->stdin_len;
	}

	capture cap = {0};
	cap.out_max = cfg.limits.output_bytes < MOAT_JUDGE_MAX_CAPTURE ? (size_t)cfg.limits.output_bytes
								       : MOAT_JUDGE_MAX_CAPTURE;
	io.on_output = on_output;
	io.userdata = &cap;

	moat_error serr = {0};
	r = moat_sandbox_run(&cfg, &io, &ret->result, &serr);
	if (r < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		ret->result.status = MOAT_STATUS_SETUP_ERROR;
		snprintf(ret->result.error, sizeof(ret->result.error), "%s",
			 moat_error_format(&serr, buf, sizeof(buf)));
	}

	moat_judge_reply reply = {0};
	if (cap.out_overflow && ret->result.status == MOAT_STATUS_EXITED) {
		ret->verdict = MOAT_JUDGE_OUTPUT_LIMIT;
		snprintf(ret->detail, sizeof(ret->detail), "more than %zu bytes of stdout to compare", cap.out_max);
	} else {
		if (c->is_call && ret->result.status == MOAT_STATUS_EXITED) {
			moat_judge_reply_parse(cap.out ? cap.out : "", cap.out_len, nonce, &reply);
			ret->other_output_known = true;
			ret->other_stdout_bytes = reply.other_bytes;
		}
		ret->verdict = moat_judge_decide(c, &ret->result, cap.out ? cap.out : "", cap.out_len,
						 c->is_call ? &reply : NULL, cap.err_head, cap.err_len, ret->detail,
						 sizeof(ret->detail));
	}
	moat_judge_reply_done(&reply);
	free(cap.out);
	return 0;
}

/* The result's own JSON, parsed back, so that the case line carries exactly
 * the figures `moat run --result` reports. */
static json_t *result_object(const moat_result *r)
{
	_cleanup_free_ char *s = moat_result_to_json(r);
	return s ? json_loads(s, 0, NULL) : NULL;
}

char *moat_judge_outcome_json(const moat_judge_case *c, size_t index, const moat_judge_outcome *o)
{
	json_t *line = json_pack("{s:s, s:I, s:I, s:s, s:s}", "case", c->name, "index", (json_int_t)index, "line",
				 (json_int_t)c->line, "verdict", moat_judge_verdict_to_string(o->verdict), "detail",
				 o->detail);
	json_t *res = result_object(&o->result);
	if (!line || !res) {
		json_decref(line);
		json_decref(res);
		return NULL;
	}
	/* The isolation is the same for every case: the summary carries it.
	 * exit_status is how `moat run` exits, not a figure of the case. */
	json_object_del(res, "isolation");
	json_object_del(res, "exit_status");
	json_object_update(line, res);
	json_decref(res);
	if (o->other_output_known)
		json_object_set_new(line, "other_stdout_bytes", json_integer((json_int_t)o->other_stdout_bytes));
	char *s = json_dumps(line, JSON_COMPACT);
	json_decref(line);
	return s;
}

static char *isolation_json(const moat_result *r)
{
	json_t *res = result_object(r);
	char *s = res ? json_dumps(json_object_get(res, "isolation"), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(res);
	return s;
}

/* ---- the worker pool --------------------------------------------------- */

unsigned moat_judge_parallel_max(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	if (n > MOAT_JUDGE_MAX_PARALLEL / MOAT_JUDGE_MAX_PARALLEL_PER_CPU)
		return MOAT_JUDGE_MAX_PARALLEL;
	return (unsigned)n * MOAT_JUDGE_MAX_PARALLEL_PER_CPU;
}

/* What a worker sends back: one verdict byte, the case line, a newline, the
 * isolation object, a newline. Small by construction (names, details and
 * figures are all capped). */
#define WORKER_MSG_MAX (64u << 10)

typedef struct suite_ctx {
	const moat_config *base;
	const moat_gateway_config *gateway;
	const moat_judge_secrets *sec;
	const moat_judge_program *p;
	const moat_judge_suite *s;
	moat_judge_verdict *verdicts;
	char *isolation;
	moat_judge_emit_fn emit;
	void *userdata;
	moat_judge_totals *totals;
} suite_ctx;

/* In the worker (workpool.h): one case, its message on fd. */
static void case_work(void *arg, size_t i, int fd)
{
	const suite_ctx *pl = arg;
	moat_judge_outcome o;
	moat_error err = {0};
	const moat_judge_case *c = &pl->s->cases[i];
	/* Secrets are read here, in a worker that runs this one case and was
	 * forked from a process that never held them: each value goes into
	 * memory the case's init does not inherit and is wiped from this
	 * worker's environment (the judge keeps it in its own for the next
	 * worker), and the case gets an authority of its own. The run
	 * specification and the egress are this process's copies. */
	moat_secrets *secrets = NULL;
	moat_egress *egress = pl->sec ? pl->sec->egress : NULL;
	const moat_gateway_config *gateway = pl->gateway;
	int r = 0;
	if (pl->sec) {
		moat_config *own = (moat_config *)pl->base;
		if ((r = moat_secrets_open(pl->sec->policy, &secrets, &err)) >= 0 &&
		    (r = moat_secrets_apply_env(secrets, own, &err)) >= 0 &&
		    (r = moat_egress_tls_prepare(egress, own, pl->sec->upstream_ca_file, &err)) >= 0) {
			egress->cfg.secrets = secrets;
			gateway = moat_egress_gateway(egress);
		}
	}
	if (r >= 0)
		r = run_case(pl->base, gateway, pl->p, c, secrets, egress, &o, &err);
	if (egress)
		moat_egress_done(egress);
	moat_secrets_free(secrets);
	if (r < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		o.verdict = MOAT_JUDGE_SETUP_ERROR;
		snprintf(o.detail, sizeof(o.detail), "%s", moat_error_format(&err, buf, sizeof(buf)));
	}
	_cleanup_free_ char *line = moat_judge_outcome_json(c, i, &o);
	_cleanup_free_ char *iso = isolation_json(&o.result);
	if (!line || !iso)
		_exit(3);
	unsigned char v = (unsigned char)o.verdict;
	if (moat__write_all(fd, &v, 1) < 0 || moat__write_all(fd, line, strlen(line)) < 0 ||
	    moat__write_all(fd, "\n", 1) < 0 || moat__write_all(fd, iso, strlen(iso)) < 0 ||
	    moat__write_all(fd, "\n", 1) < 0)
		_exit(4);
	_exit(0);
}

/* A worker ended: what it sent becomes the case's line, or, if it died,
 * which is moat's failure, a setup_error line saying so. */
static char *case_done(void *arg, size_t i, const char *buf, size_t len, int status)
{
	suite_ctx *pl = arg;
	const moat_judge_case *c = &pl->s->cases[i];
	const char *nl1 = buf && len > 1 ? memchr(buf + 1, '\n', len - 1) : NULL;
	const char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(buf + len - nl1 - 1)) : NULL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && nl2 && (unsigned char)buf[0] < _MOAT_JUDGE_VERDICT_MAX) {
		pl->verdicts[i] = (moat_judge_verdict)(unsigned char)buf[0];
		if (!pl->isolation)
			pl->isolation = strndup(nl1 + 1, (size_t)(nl2 - nl1 - 1));
		return strndup(buf + 1, (size_t)(nl1 - buf - 1));
	}
	moat_judge_outcome o;
	memset(&o, 0, sizeof(o));
	moat_result_init(&o.result);
	o.verdict = MOAT_JUDGE_SETUP_ERROR;
	if (WIFSIGNALED(status))
		snprintf(o.detail, sizeof(o.detail), "the worker running this case died of signal %d", WTERMSIG(status));
	else
		snprintf(o.detail, sizeof(o.detail), "the worker running this case failed (status %d)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	snprintf(o.result.error, sizeof(o.result.error), "%s", o.detail);
	pl->verdicts[i] = MOAT_JUDGE_SETUP_ERROR;
	return moat_judge_outcome_json(c, i, &o);
}

static void case_emit(void *arg, size_t i, char *line)
{
	suite_ctx *pl = arg;
	pl->totals->total++;
	pl->totals->by_verdict[pl->verdicts[i]]++;
	pl->totals->passed += pl->verdicts[i] == MOAT_JUDGE_PASS;
	pl->emit(pl->userdata, line);
	free(line);
}

static int run_suite(const moat_config *base, const moat_gateway_config *gateway, const moat_judge_secrets *sec,
		     const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel, moat_judge_emit_fn emit,
		     void *userdata, moat_judge_totals *ret, moat_error *err);

int moat_judge_run_suite(const moat_config *base, const moat_gateway_config *gateway,
			 const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel, moat_judge_emit_fn emit, void *userdata, moat_judge_totals *ret,
			 moat_error *err)
{
	return run_suite(base, gateway, NULL, p, s, parallel, emit, userdata, ret, err);
}

int moat_judge_run_suite_secrets(const moat_config *base, const moat_judge_secrets *sec,
				 const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel,
				 moat_judge_emit_fn emit, void *userdata, moat_judge_totals *ret, moat_error *err)
{
	return run_suite(base, moat_egress_gateway(sec->egress), sec, p, s, parallel, emit, userdata, ret, err);
}

static int run_suite(const moat_config *base, const moat_gateway_config *gateway, const moat_judge_secrets *sec,
		     const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel, moat_judge_emit_fn emit,
		     void *userdata, moat_judge_totals *ret, moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	unsigned max = moat_judge_parallel_max();
	if (parallel == 0 || parallel > max)
		return moat_error_set(err, MOAT_EINPUT, "parallel: %u is not between 1 and %u on this host (CPUs x %d)",
				      parallel, max, MOAT_JUDGE_MAX_PARALLEL_PER_CPU);
	uint64_t t0 = moat__now_ns();
	_cleanup_free_ moat_judge_verdict *verdicts = calloc(s->n_cases ? s->n_cases : 1, sizeof(*verdicts));
	if (!verdicts)
		return moat_error_set(err, ENOMEM, "judge");
	suite_ctx pl = {.base = base,
			.gateway = gateway,
			.sec = sec,
			.p = p,
			.s = s,
			.verdicts = verdicts,
			.emit = emit,
			.userdata = userdata,
			.totals = ret};
	static const moat_workpool_ops ops = {.work = case_work, .done = case_done, .emit = case_emit};
	int r = moat__workpool_run(s->n_cases, parallel, WORKER_MSG_MAX, &ops, &pl, err);
	if (r >= 0) {
		ret->wall_ms = (moat__now_ns() - t0) / 1000000;
		ret->isolation_json = TAKE_PTR(pl.isolation);
	}
	free(pl.isolation);
	return r;
}

void moat_judge_totals_done(moat_judge_totals *t)
{
	if (!t)
		return;
	free(t->isolation_json);
	t->isolation_json = NULL;
}

char *moat_judge_totals_json(const moat_judge_totals *t)
{
	json_t *o = json_pack("{s:b, s:I, s:I, s:I}", "summary", 1, "total", (json_int_t)t->total, "passed",
			      (json_int_t)t->passed, "failed", (json_int_t)(t->total - t->passed));
	json_t *v = json_object();
	if (!o || !v) {
		json_decref(o);
		json_decref(v);
		return NULL;
	}
	for (int i = 0; i < _MOAT_JUDGE_VERDICT_MAX; i++)
		if (t->by_verdict[i])
			json_object_set_new(v, moat_judge_verdict_to_string((moat_judge_verdict)i),
					    json_integer((json_int_t)t->by_verdict[i]));
	json_object_set_new(o, "verdicts", v);
	json_object_set_new(o, "wall_ms", json_integer((json_int_t)t->wall_ms));
	json_t *iso = t->isolation_json ? json_loads(t->isolation_json, JSON_DECODE_ANY, NULL) : NULL;
	json_object_set_new(o, "isolation", iso ? iso : json_null());
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
