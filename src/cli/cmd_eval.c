/* moat eval --problems P --samples S [OPTIONS]: run model-written samples
 * of a code benchmark (HumanEval, MBPP, EvalPlus, MultiPL-E), each in a
 * fresh strict sandbox, and report pass@k. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "egress.h"
#include "eval.h"
#include "policy.h"

static void eval_usage(FILE *f)
{
	fprintf(f, "usage: moat eval --problems PROBLEMS.jsonl[.gz] --samples SAMPLES.jsonl[.gz] [OPTIONS]\n"
		   "\n"
		   "Runs every sample confined as a fresh sandbox of its own would confine it (the\n"
		   "code profile: no network) through a harness that reports success only once the\n"
		   "problem's check has returned, and reports pass@k. Python samples are forked from\n"
		   "a warm interpreter, each into a cgroup of its own (MOAT_EVAL_WARM=0: every\n"
		   "sample in a sandbox of its own; docs/eval.md).\n"
		   "\n"
		   "  --problems FILE      task_id, prompt, test, entry_point (HumanEval, MBPP, EvalPlus)\n"
		   "                       or name, prompt, tests, language (MultiPL-E); gzip accepted\n"
		   "  --samples FILE       {\"task_id\",\"completion\"} or {\"task_id\",\"solution\"}, any number\n"
		   "                       per task; gzip accepted\n"
		   "  --k LIST             pass@k to report (default 1,10,100; only those every task has\n"
		   "                       enough samples for)\n"
		   "  --parallel N         samples at once (default: online CPUs; at most %d)\n"
		   "  --out FILE           one result line per sample, in sample order (default: stdout,\n"
		   "                       then the summary)\n"
		   "  --language L         python (default), javascript, c, cpp: for problems that do\n"
		   "                       not say (C and C++ are compiled inside each sandbox)\n"
		   "  and the options of 'moat run' that shape each sandbox: --time, --cpu, --mem,\n"
		   "  --pids, --output, --tmp-size, --files, --fsize, --ro, --env, --profile, --policy.\n"
		   "\n"
		   "verdicts: pass, fail, error, timeout, cpu_limit, oom, output_limit, pids_limit,\n"
		   "          setup_error\n"
		   "exit status: 0 when every sample ran (whatever its verdict), 125 when moat failed.\n"
		   "\n"
		   "example:\n"
		   "  moat eval --problems HumanEval.jsonl.gz --samples samples.jsonl --time 10s --k 1,10\n",
		MOAT_EVAL_MAX_PARALLEL);
}

typedef struct eval_opts {
	const char *problems;
	const char *samples;
	const char *k;
	const char *parallel;
	const char *out;
	const char *language;
} eval_opts;

/* Takes eval's own options out of argv and leaves the rest, which are the
 * options of `moat run`, for moat_cli_load_run_policy(). eval's --out (the
 * results file) is taken here, before run's --out (a folder) could see it. */
static int split_options(int argc, char **argv, eval_opts *o, char ***ret_rest)
{
	static const moat_cli_own_option own[] = {
		{"--problems", offsetof(eval_opts, problems)}, {"--samples", offsetof(eval_opts, samples)},
		{"--k", offsetof(eval_opts, k)},               {"--parallel", offsetof(eval_opts, parallel)},
		{"--out", offsetof(eval_opts, out)},           {"--language", offsetof(eval_opts, language)},
	};
	return moat_cli_split_own_options("eval", argc, argv, own, ELEMENTSOF(own), o, false, ret_rest);
}

/* Run options that would break "every sample starts fresh, alone and
 * offline", whether from the command line or from a policy file. */
static int refuse_shared_state(const moat_policy *p)
{
	if (p->tty)
		return moat_cli_fail("eval: -t/--tty does not apply: the harness owns each sample's stdin");
	if (p->stdin_path)
		return moat_cli_fail("eval: --stdin does not apply: the harness owns each sample's stdin");
	if (p->result_path)
		return moat_cli_fail("eval: --result does not apply: eval writes one result line per sample");
	if (p->out_dir)
		return moat_cli_fail("eval: an output folder would let one sample leave files for the next");
	for (size_t i = 0; i < p->n_binds; i++)
		if (p->binds[i].flags & MOAT_BIND_RW)
			return moat_cli_fail("eval: a writable bind (%s) would let one sample leave files for the next",
					     p->binds[i].src);
	if (p->net != MOAT_NET_NONE && p->net != _MOAT_NET_INVALID)
		return moat_cli_fail("eval: samples run without network (--net none)");
	return 0;
}

typedef struct sink {
	FILE *results;
	bool progress;
	uint64_t t0;
} sink;

static void emit_line(void *userdata, const char *line)
{
	sink *k = userdata;
	fputs(line, k->results);
	fputc('\n', k->results);
	if (k->results == stdout)
		fflush(stdout);
}

/* A bar on stderr, redrawn in place: only when stderr is a terminal. */
static void show_progress(void *userdata, size_t done, size_t total)
{
	sink *k = userdata;
	if (!k->progress)
		return;
	double secs = (double)(moat__now_ns() - k->t0) / 1e9;
	double rate = secs > 0 ? (double)done / secs : 0;
	unsigned eta = rate > 0 ? (unsigned)((double)(total - done) / rate + 0.5) : 0;
	char bar[31];
	size_t fill = total ? done * 30 / total : 30;
	for (size_t i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	fprintf(stderr, "\r\033[Keval [%s] %zu/%zu  %.1f/s  ETA %u:%02u", bar, done, total, rate, eta / 60, eta % 60);
	if (done == total)
		fputc('\n', stderr);
	fflush(stderr);
}

static int fail_err(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("eval: %s", moat_error_format(err, buf, sizeof(buf)));
}

int moat_cmd_eval(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			eval_usage(stdout);
			return 0;
		}
	eval_opts o = {0};
	_cleanup_strv_free_ char **rest = NULL;
	if (split_options(argc, argv, &o, &rest) != 0)
		return MOAT_EXIT_ERROR;
	_cleanup_policy_ moat_policy *policy = NULL;
	_cleanup_free_ char *net_log = NULL;
	bool help = false;
	int nrest = (int)moat__strv_length(rest);
	int first = moat_cli_load_run_policy(nrest, rest, &policy, &net_log, &help);
	if (help) {
		eval_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (first < nrest)
		return moat_cli_fail("eval: unexpected argument '%s': the samples are the programs", rest[first]);
	if (refuse_shared_state(policy) != 0)
		return MOAT_EXIT_ERROR;
	if (!o.problems || !o.samples)
		return moat_cli_fail("eval: --problems FILE and --samples FILE are required (see 'moat eval --help')");

	moat_error err = {0};
	unsigned ks[MOAT_EVAL_MAX_KS];
	int n_ks = moat_eval_parse_ks(o.k ? o.k : "1,10,100", ks, MOAT_EVAL_MAX_KS, &err);
	if (n_ks < 0)
		return fail_err(&err);
	moat_eval_options eo = {.lang = MOAT_EVAL_LANG_PYTHON};
	if (o.language) {
		eo.lang = moat_eval_lang_from_string(o.language);
		if (eo.lang == _MOAT_EVAL_LANG_INVALID)
			return moat_cli_fail("eval: --language %s: python, javascript, c or cpp", o.language);
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	eo.parallel = cpus > 0 ? (unsigned)(cpus < MOAT_EVAL_MAX_PARALLEL ? cpus : MOAT_EVAL_MAX_PARALLEL) : 1;
	if (o.parallel) {
		char *end = NULL;
		errno = 0;
		unsigned long v = strtoul(o.parallel, &end, 10);
		if (errno || !end || *end || o.parallel[0] < '1' || o.parallel[0] > '9' || v > MOAT_EVAL_MAX_PARALLEL)
			return moat_cli_fail("eval: --parallel %s: a number from 1 to %d", o.parallel,
					     MOAT_EVAL_MAX_PARALLEL);
		eo.parallel = (unsigned)v;
	}

	_cleanup_eval_problems_ moat_eval_problems *problems = NULL;
	_cleanup_eval_samples_ moat_eval_samples *samples = NULL;
	if (moat_eval_problems_load(o.problems, &problems, &err) < 0 ||
	    moat_eval_samples_load(o.samples, problems, &samples, &err) < 0)
		return fail_err(&err);

	_cleanup_config_ moat_config *spec = NULL;
	if (moat_policy_compile(policy, NULL, &spec, &err) < 0)
		return fail_err(&err);
	char *check_argv[] = {(char *)"/usr/bin/true", NULL};
	moat_config check = *spec;
	check.argv = check_argv;
	if (moat_config_validate(&check, &err) < 0)
		return fail_err(&err);

	sink k = {.results = stdout, .progress = isatty(STDERR_FILENO) == 1, .t0 = moat__now_ns()};
	_cleanup_fclose_ FILE *out = NULL;
	if (o.out) {
		int fd = open(o.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd < 0)
			return moat_cli_fail("eval: --out %s: %s", o.out, strerror(errno));
		out = fdopen(fd, "w");
		if (!out) {
			close(fd);
			return moat_cli_fail("eval: --out %s: %s", o.out, strerror(errno));
		}
		k.results = out;
	}
	eo.emit = emit_line;
	eo.progress = show_progress;
	eo.userdata = &k;
	/* A closed pipe on stdout ends eval by EPIPE on write, not by a
	 * signal in the middle of a worker's bookkeeping. */
	signal(SIGPIPE, SIG_IGN);

	moat_eval_totals totals = {0};
	int r = moat_eval_run(spec, NULL, problems, samples, &eo, &totals, &err);
	if (r < 0) {
		moat_eval_totals_done(&totals);
		return fail_err(&err);
	}
	_cleanup_free_ char *summary = moat_eval_summary_json(&totals, ks, (size_t)n_ks);
	size_t setup_errors = totals.by_verdict[MOAT_EVAL_SETUP_ERROR];
	moat_eval_totals_done(&totals);
	if (!summary)
		return moat_cli_fail("out of memory");
	if (out && (fflush(out) != 0 || ferror(out)))
		return moat_cli_fail("eval: --out %s: %s", o.out, strerror(errno));
	puts(summary);
	if (fflush(stdout) != 0)
		return MOAT_EXIT_ERROR;
	if (setup_errors > 0)
		return moat_cli_fail("eval: %zu sample(s) could not be set up; see their \"result\"", setup_errors);
	return 0;
}
