/* moat judge --tests CASES.jsonl [OPTIONS] (--source FILE | -- COMMAND...):
 * grade a program against test cases, one fresh sandbox per case. */
#include <signal.h>
#include <string.h>

#include "cli.h"
#include "judge.h"
#include "egress.h"
#include "policy.h"

static void judge_usage(FILE *f)
{
	fprintf(f,
		"usage: moat judge --tests CASES.jsonl [OPTIONS] --source FILE\n"
		"       moat judge --tests CASES.jsonl [OPTIONS] -- COMMAND [ARG...]\n"
		"\n"
		"Runs the program once per test case, each time in a fresh sandbox, and prints\n"
		"one JSON line per case (in case order) and a summary line.\n"
		"\n"
		"  --tests FILE         the cases, one JSON object a line:\n"
		"                         {\"name\":\"add\",\"stdin\":\"1 2\\n\",\"expected_stdout\":\"3\\n\"}\n"
		"                         {\"name\":\"f\",\"call\":{\"function\":\"solve\",\"args\":[1,2]},\"expected\":3}\n"
		"                       optional: \"args\", \"limits\" {time,cpu,mem,pids,output,tmp-size},\n"
		"                       \"compare\" exact|whitespace|numeric, \"tolerance\" (numeric, 1e-6)\n"
		"  --source FILE        a Python (.py) or JavaScript (.js) file; function cases\n"
		"                       need it, stdin cases run it with its interpreter\n"
		"  --lang python|javascript   the language when the extension does not say\n"
		"  --interpreter PATH   interpreter inside the sandbox (default /usr/bin/python3,\n"
		"                       /usr/bin/node)\n"
		"  --parallel N         run up to N cases at once (at most CPUs x %d = %u here)\n"
		"  and the options of 'moat run' that shape each sandbox: --profile, --policy,\n"
		"  --time, --cpu, --mem, --pids, --output, --tmp-size, --files, --fsize, --cpus,\n"
		"  --ro, --env, --cwd, --hostname; a case's \"limits\" override them for that\n"
		"  case. Writable binds, --out, --stdin, -t and --result are refused.\n"
		"\n"
		"verdicts: pass, wrong_answer, runtime_error, timeout, cpu_limit, oom,\n"
		"          output_limit, pids_limit, setup_error\n"
		"exit status: 0 when every case passed, 1 when any did not, 125 when moat\n"
		"failed (bad option, bad cases file, or a setup_error verdict).\n"
		"\n"
		"example:\n"
		"  moat judge --tests cases.jsonl --source solution.py --time 2s --parallel 4\n",
		MOAT_JUDGE_MAX_PARALLEL_PER_CPU, moat_judge_parallel_max());
}

typedef struct judge_opts {
	const char *tests;
	const char *source;
	const char *lang;
	const char *interpreter;
	const char *parallel;
} judge_opts;

/* Takes the judge's own options out of argv (up to "--") and leaves the rest,
 * which are the options of `moat run`, for moat_cli_load_run_policy(). */
static int split_options(int argc, char **argv, judge_opts *o, char ***ret_rest)
{
	static const moat_cli_own_option own[] = {
		{"--tests", offsetof(judge_opts, tests)},
		{"--source", offsetof(judge_opts, source)},
		{"--lang", offsetof(judge_opts, lang)},
		{"--interpreter", offsetof(judge_opts, interpreter)},
		{"--parallel", offsetof(judge_opts, parallel)},
	};
	return moat_cli_split_own_options("judge", argc, argv, own, ELEMENTSOF(own), o, true, ret_rest);
}

/* Run options that would break "every case starts fresh and alone",
 * whether from the command line or from a policy file. */
static int refuse_shared_state(const moat_policy *p)
{
	if (p->tty)
		return moat_cli_fail("judge: -t/--tty does not apply: each case's stdin comes from the cases file");
	if (p->stdin_path)
		return moat_cli_fail("judge: --stdin does not apply: each case's stdin comes from the cases file");
	if (p->result_path)
		return moat_cli_fail("judge: --result does not apply: judge prints one JSON line per case");
	if (p->out_dir)
		return moat_cli_fail("judge: an output folder (--out) would let one case leave files for the next");
	for (size_t i = 0; i < p->n_binds; i++)
		if (p->binds[i].flags & MOAT_BIND_RW)
			return moat_cli_fail("judge: a writable bind (%s) would let one case leave files for the next",
					     p->binds[i].src);
	return 0;
}

/* The staged copy of the submission, removed by the handler below when a
 * signal ends judge early (Ctrl-C, a closed pipe, kill). */
static const moat_judge_program *staged;

static void on_fatal_signal(int sig)
{
	moat_judge_program_unstage(staged);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_fatal_signals(const moat_judge_program *p)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
	staged = p;
	struct sigaction sa = {.sa_handler = on_fatal_signal};
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

static void emit_line(void *userdata, const char *line)
{
	(void)userdata;
	fputs(line, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

static int fail_err(const char *what, const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("judge: %s%s%s", what ? what : "", what ? ": " : "",
			     moat_error_format(err, buf, sizeof(buf)));
}

/* Checks what can be checked before the first sandbox, runs the cases and
 * prints the summary; returns the exit status. */
static int grade(const moat_policy *policy, const char *net_log, const moat_judge_program *prog,
		 const moat_judge_suite *suite, unsigned parallel)
{
	moat_error err = {0};
	/* Each case's worker reads the secrets itself (judge.h): this
	 * process leaves them where they are, and only checks that a
	 * variable one is read from is there, so that a missing one is one
	 * error rather than a setup error per case. */
	for (size_t i = 0; i < policy->n_secrets; i++) {
		const char *from = policy->secrets[i].from;
		if (from && strncmp(from, "env:", 4) == 0 && !(getenv(from + 4) && getenv(from + 4)[0]))
			return moat_cli_fail("judge: secrets.%s: the variable %s is not set", policy->secrets[i].name,
					     from + 4);
	}
	/* One run specification for every case; each case changes only its
	 * command line, limits and stdin, on a copy (judge_run.c). */
	_cleanup_config_ moat_config *spec = NULL;
	if (moat_policy_compile(policy, NULL, &spec, &err) < 0 || moat_judge_program_configure(prog, spec, &err) < 0)
		return fail_err(NULL, &err);
	const moat_config *c = spec;
	/* The binds, paths and limits, with the first case's command line. */
	_cleanup_strv_free_ char **argv0 = NULL;
	if (moat_judge_program_argv(prog, &suite->cases[0], &argv0, &err) < 0)
		return fail_err(NULL, &err);
	moat_config check = *c;
	check.argv = argv0;
	if (moat_config_validate(&check, &err) < 0)
		return fail_err(NULL, &err);

	/* The same gateway as moat run's, from the same policy, shared by
	 * every case. */
	moat_egress egress;
	if (moat_egress_from_policy(policy, net_log, NULL, &egress, &err) < 0)
		return fail_err(NULL, &err);
	moat_judge_totals totals = {0};
	/* The test suite's upstream authority, as moat run reads it. */
	moat_judge_secrets sec = {.policy = policy, .egress = &egress, .upstream_ca_file = getenv("MOAT_TEST_UPSTREAM_CA")};
	int r = policy->n_secrets ? moat_judge_run_suite_secrets(c, &sec, prog, suite, parallel, emit_line, NULL, &totals, &err)
				  : moat_judge_run_suite(c, moat_egress_gateway(&egress), prog, suite, parallel, emit_line,
							 NULL, &totals, &err);
	moat_egress_done(&egress);
	if (r < 0)
		return fail_err(NULL, &err);
	_cleanup_free_ char *summary = moat_judge_totals_json(&totals);
	moat_judge_totals_done(&totals);
	if (!summary)
		return moat_cli_fail("out of memory");
	emit_line(NULL, summary);
	if (totals.by_verdict[MOAT_JUDGE_SETUP_ERROR] > 0)
		return moat_cli_fail("judge: %zu case(s) could not be set up; see their \"detail\"",
				     totals.by_verdict[MOAT_JUDGE_SETUP_ERROR]);
	return totals.passed == totals.total ? 0 : 1;
}

int moat_cmd_judge(int argc, char **argv)
{
	judge_opts o = {0};
	_cleanup_strv_free_ char **rest = NULL;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			judge_usage(stdout);
			return 0;
		}
	if (split_options(argc, argv, &o, &rest) != 0)
		return MOAT_EXIT_ERROR;

	_cleanup_policy_ moat_policy *policy = NULL;
	_cleanup_free_ char *net_log = NULL;
	bool help = false;
	int nrest = (int)moat__strv_length(rest);
	int first = moat_cli_load_run_policy(nrest, rest, &policy, &net_log, &help);
	if (help) {
		judge_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (refuse_shared_state(policy) != 0)
		return MOAT_EXIT_ERROR;
	if (!o.tests)
		return moat_cli_fail("judge: --tests CASES.jsonl is required (see 'moat judge --help')");
	if (o.source && first < nrest)
		return moat_cli_fail("judge: give either --source FILE or -- COMMAND, not both");
	if (!o.source && first >= nrest)
		return moat_cli_fail("judge: nothing to grade: give --source FILE or -- COMMAND");
	if (!o.source && (o.lang || o.interpreter))
		return moat_cli_fail("judge: --lang and --interpreter go with --source");

	unsigned parallel = 1;
	if (o.parallel) {
		char *end = NULL;
		errno = 0;
		unsigned long v = strtoul(o.parallel, &end, 10);
		if (errno || !end || *end || o.parallel[0] < '1' || o.parallel[0] > '9' || v > moat_judge_parallel_max())
			return moat_cli_fail("judge: --parallel %s: a number from 1 to %u on this host (CPUs x %d)",
					     o.parallel, moat_judge_parallel_max(), MOAT_JUDGE_MAX_PARALLEL_PER_CPU);
		parallel = (unsigned)v;
	}

	moat_error err = {0};
	_cleanup_judge_suite_ moat_judge_suite *suite = NULL;
	if (moat_judge_suite_load(o.tests, &suite, &err) < 0)
		return fail_err(NULL, &err);

	moat_judge_program prog = {0};
	int r;
	if (o.source) {
		moat_judge_lang lang = o.lang ? moat_judge_lang_from_string(o.lang) : moat_judge_lang_from_path(o.source);
		if (lang == _MOAT_JUDGE_LANG_INVALID)
			return moat_cli_fail(o.lang ? "judge: --lang %s: python or javascript"
						    : "judge: --source %s: cannot tell the language from the extension "
						      "(.py, .js); give --lang",
					     o.lang ? o.lang : o.source);
		r = moat_judge_program_source(&prog, lang, o.source, o.interpreter, &err);
	} else {
		if (suite->n_call_cases > 0)
			return moat_cli_fail("judge: %s has %zu function case(s) (\"call\"); they need --source FILE",
					     o.tests, suite->n_call_cases);
		r = moat_judge_program_command(&prog, rest + first, &err);
	}
	if (r < 0)
		return fail_err(NULL, &err);

	catch_fatal_signals(&prog);
	r = grade(policy, net_log, &prog, suite, parallel);
	moat_judge_program_done(&prog);
	return r;
}
