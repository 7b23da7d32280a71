/* moat session: long-lived sandboxes that commands run in one after
 * another and at once (session.h; docs/sessions.md). Parses, calls
 * libmoat, prints. */
#include <getopt.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "session.h"
#include "units.h"

static void session_usage(FILE *f)
{
	fprintf(f, "usage: moat session create [RUN OPTIONS] [--name NAME] [--json]\n"
		   "       moat session exec ID|NAME [-t] [-i] [--env NAME[=VALUE]] [--cwd DIR] [--time DUR]\n"
		   "                     [--result FILE] [--detach] -- COMMAND [ARG...]\n"
		   "       moat session ls [--json]\n"
		   "       moat session stop ID|NAME\n"
		   "       moat session rm ID|NAME\n"
		   "\n"
		   "A session is a sandbox that lives until it is stopped: create starts its\n"
		   "keeper and prints its id; exec runs one command in it (several may run at\n"
		   "once) and exits as 'moat run' would (the command's status, 128+N for a\n"
		   "signal, 125 when moat failed); files written in /tmp stay for the next\n"
		   "command. RUN OPTIONS are those of 'moat run' (--profile, --policy, limits,\n"
		   "--net...): see 'moat run --help'. docs/sessions.md tells what is built.\n");
}

static int fail_err(const char *what, const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("session %s: %s", what, moat_error_format(err, buf, sizeof(buf)));
}

/* The keeper's environment: only what tells it where its runtime folder is
 * (the same as ours) and, in a sanitizer build, where to report. */
static char **keeper_env(void)
{
	static char *env[5];
	const char *names[] = {"XDG_RUNTIME_DIR", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
	for (size_t i = 0, n = 0; i < 4; i++) {
		const char *v = getenv(names[i]);
		if (v && asprintf(&env[n], "%s=%s", names[i], v) > 0)
			n++;
	}
	return env;
}

static int cmd_create(int argc, char **argv)
{
	/* --name and --json are create's own; the rest go to the run options'
	 * parser as they are. */
	const char *name = NULL;
	bool json = false;
	_cleanup_free_ char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		return moat_cli_fail("out of memory");
	int n = 0;
	rest[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			for (; i < argc; i++)
				rest[n++] = argv[i];
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--name") == 0) {
			if (i + 1 >= argc)
				return moat_cli_fail("session create: --name needs a value");
			name = argv[++i];
		} else if (strncmp(argv[i], "--name=", 7) == 0)
			name = argv[i] + 7;
		else
			rest[n++] = argv[i];
	}
	_cleanup_policy_ moat_policy *policy = NULL;
	bool help;
	int first = moat_cli_load_run_policy(n, rest, &policy, NULL, &help);
	if (help) {
		session_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (first < n)
		return moat_cli_fail("session create: '%s': a session takes no command (run one with 'moat session exec')",
				     rest[first]);
	moat__session_default_limits(policy);
	moat_keeper_start_opts o = {.envp = keeper_env()};
	moat_session_info s;
	moat_error err = {0};
	if (moat_session_create(policy, name, &o, &s, &err) < 0)
		return fail_err("create", &err);
	if (json) {
		json_t *j = json_pack("{s:s, s:s?, s:s, s:s, s:i, s:s}", "id", s.id, "name", s.name[0] ? s.name : NULL,
				      "state_dir", s.dir, "socket", s.socket, "keeper_pid", (int)s.keeper_pid,
				      "policy_sha256", s.policy_sha256);
		char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!t)
			return moat_cli_fail("out of memory");
		printf("%s\n", t);
		free(t);
	} else
		printf("%s\n", s.id);
	return 0;
}

static int find(const char *what, const char *key, moat_session_info *s)
{
	moat_error err = {0};
	if (moat_session_find(key, s, &err) < 0)
		return fail_err(what, &err), -1;
	return 0;
}

static const struct option exec_options[] = {
	{"env", required_argument, NULL, 'e'},
	{"cwd", required_argument, NULL, 'c'},
	{"time", required_argument, NULL, 'T'},
	{"tty", no_argument, NULL, 't'},
	{"interactive", no_argument, NULL, 'i'},
	{"result", required_argument, NULL, 'r'},
	{"detach", no_argument, NULL, 'd'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int cmd_exec(int argc, char **argv)
{
	_cleanup_strv_free_ char **env = NULL;
	const char *cwd = NULL, *time_s = NULL, *key = NULL, *result = NULL;
	uint64_t time_ms = 0;
	bool tty = false, input = false, detach = false;
	moat_error err = {0};
	int opt;
	optind = 1;
	opterr = 0;
	/* Options may come before and after ID|NAME, up to "--". */
	for (;;) {
		opt = getopt_long(argc, argv, "+tih", exec_options, NULL);
		if (opt == -1) {
			if (key || optind >= argc || strcmp(argv[optind - 1], "--") == 0)
				break;
			key = argv[optind++];
			continue;
		}
		switch (opt) {
		case 'h':
			session_usage(stdout);
			return 0;
		case 't':
			tty = true;
			break;
		case 'i':
			input = true;
			break;
		case 'd':
			detach = true;
			break;
		case 'r':
			if (!optarg[0])
				return moat_cli_fail("session exec: --result needs a file (or - for stdout)");
			result = optarg;
			break;
		case 'e': {
			_cleanup_free_ char *kv = NULL;
			if (!strchr(optarg, '=')) {
				const char *v = getenv(optarg);
				if (!v)
					break;
				if (asprintf(&kv, "%s=%s", optarg, v) < 0)
					return moat_cli_fail("out of memory");
			}
			if (moat_env_spec_check(kv ? kv : optarg, &err) < 0)
				return fail_err("exec", &err);
			if (moat__strv_length(env) >= MOAT_MAX_ENV)
				return moat_cli_fail("session exec: more than %d --env", MOAT_MAX_ENV);
			if (moat__strv_push(&env, kv ? kv : optarg) < 0)
				return moat_cli_fail("out of memory");
			break;
		}
		case 'c':
			if (optarg[0] != '/')
				return moat_cli_fail("session exec: --cwd %s: not an absolute path", optarg);
			cwd = optarg;
			break;
		case 'T':
			time_s = optarg;
			if (moat_parse_duration_ms(optarg, &time_ms, &err) < 0)
				return fail_err("exec: --time", &err);
			break;
		default:
			return moat_cli_fail("session exec: unknown option '%s' (see 'moat session --help')",
					     argv[optind - 1]);
		}
	}
	if (!key && optind < argc && strcmp(argv[optind - 1], "--") != 0)
		key = argv[optind++];
	if (!key)
		return moat_cli_fail("session exec: no session given (usage: moat session exec ID|NAME -- COMMAND)");
	if (optind >= argc)
		return moat_cli_fail("session exec: no command given (usage: moat session exec ID|NAME -- COMMAND)");
	moat_session_info s;
	if (find("exec", key, &s) < 0)
		return MOAT_EXIT_ERROR;
	if (!s.running)
		return moat_cli_fail("session exec: session %s is not running (%s)", key, s.reason);
	if (detach && (tty || input || result || time_ms))
		return moat_cli_fail("session exec: --detach takes none of -t, -i, --result, --time (nothing stays "
				     "attached to the command)");
	moat_session_exec_opts o = {.argv = argv + optind,
				    .env = env,
				    .cwd = cwd,
				    .time_ms = time_ms,
				    .tty = tty,
				    .input = input,
				    .count_output = result != NULL,
				    .detach = detach};
	moat_session_exec_result x;
	if (moat_session_exec(&s, &o, &x, &err) < 0)
		return fail_err("exec", &err);
	if (detach) {
		/* The command's id in its session, for the caller's records. */
		printf("%u\n", (unsigned)x.id);
		return 0;
	}
	/* As `moat run`: a result that could not be written is moat's
	 * failure (125), whatever the command did. */
	if (result && moat_session_exec_result_write(&s, &o, &x, result, &err) < 0)
		return fail_err("exec: --result", &err);
	if (x.timed_out)
		moat_cli_fail("session exec: --time %s passed; the command was killed", time_s);
	else if (x.exit.error[0])
		moat_cli_fail("session exec: %s", x.exit.error);
	return x.exit.exit_status;
}

static int cmd_ls(int argc, char **argv)
{
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc > 2 || (argc == 2 && !json))
		return moat_cli_fail("session ls: unexpected '%s' (usage: moat session ls [--json])", argv[1]);
	_cleanup_free_ moat_session_info *v = NULL;
	size_t n = 0;
	moat_error err = {0};
	if (moat_session_list(&v, &n, &err) < 0)
		return fail_err("ls", &err);
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; a && i < n; i++)
			json_array_append_new(
				a, json_pack("{s:s, s:s?, s:s, s:s?, s:I, s:i, s:s, s:s}", "id", v[i].id, "name",
					     v[i].name[0] ? v[i].name : NULL, "state", v[i].running ? "running" : "dead",
					     "reason", v[i].running ? NULL : v[i].reason, "created", (json_int_t)v[i].created,
					     "keeper_pid", (int)v[i].keeper_pid, "state_dir", v[i].dir, "policy_sha256",
					     v[i].policy_sha256));
		char *t = a ? json_dumps(a, JSON_COMPACT) : NULL;
		json_decref(a);
		if (!t)
			return moat_cli_fail("out of memory");
		printf("%s\n", t);
		free(t);
		return 0;
	}
	printf("%-24s  %-16s  %-8s  %-20s  %s\n", "ID", "NAME", "STATE", "CREATED", "REASON");
	for (size_t i = 0; i < n; i++) {
		char when[32];
		time_t t = (time_t)v[i].created;
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		printf("%-24s  %-16s  %-8s  %-20s  %s\n", v[i].id, v[i].name[0] ? v[i].name : "-",
		       v[i].running ? "running" : "dead", when, v[i].running ? "" : v[i].reason);
	}
	return 0;
}

static int cmd_stop_rm(int argc, char **argv, bool rm)
{
	const char *what = rm ? "rm" : "stop";
	if (argc != 2)
		return moat_cli_fail("session %s: expected one ID or NAME (usage: moat session %s ID|NAME)", what, what);
	moat_session_info s;
	if (find(what, argv[1], &s) < 0)
		return MOAT_EXIT_ERROR;
	moat_error err = {0};
	if (rm ? moat_session_remove(&s, &err) < 0 : moat_session_stop(&s, &err) < 0)
		return fail_err(what, &err);
	return 0;
}

int moat_cmd_session(int argc, char **argv)
{
	if (argc < 2) {
		session_usage(stderr);
		return MOAT_EXIT_ERROR;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
		session_usage(stdout);
		return 0;
	}
	if (strcmp(sub, "create") == 0)
		return cmd_create(argc - 1, argv + 1);
	if (strcmp(sub, "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	if (strcmp(sub, "ls") == 0)
		return cmd_ls(argc - 1, argv + 1);
	if (strcmp(sub, "stop") == 0)
		return cmd_stop_rm(argc - 1, argv + 1, false);
	if (strcmp(sub, "rm") == 0)
		return cmd_stop_rm(argc - 1, argv + 1, true);
	return moat_cli_fail("session: unknown command '%s' (expected create, exec, ls, stop or rm)", sub);
}
