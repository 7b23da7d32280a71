/* moat session: long-lived sandboxes that commands run in one after
 * another and at once (session.h; docs/sessions.md). Parses, calls
 * libmoat, prints. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "session.h"
#include "units.h"

static void session_usage(FILE *f)
{
	fprintf(f, "usage: moat session create [RUN OPTIONS] [--name NAME] [--workspace DIR] [--ttl DUR] [--idle DUR]\n"
		   "                           [--record] [--json]\n"
		   "       moat session exec ID|NAME [-t] [-i] [--env NAME[=VALUE]] [--cwd DIR] [--time DUR]\n"
		   "                     [--result FILE] [--detach] -- COMMAND [ARG...]\n"
		   "       moat session cp HOST_PATH ID|NAME:PATH | [--max-bytes SIZE] [--file] ID|NAME:PATH HOST_PATH\n"
		   "       moat session ls [--json]\n"
		   "       moat session show ID|NAME\n"
		   "       moat session logs ID|NAME [--follow] [--type TYPE]\n"
		   "       moat session stop ID|NAME\n"
		   "       moat session rm [--purge] ID|NAME\n"
		   "\n"
		   "A session is a sandbox that lives until it is stopped: create starts its\n"
		   "keeper and prints its id; exec runs one command in it (several may run at\n"
		   "once) in /workspace and exits as 'moat run' would (the command's status,\n"
		   "128+N for a signal, 125 when moat failed); /workspace (--workspace DIR, or\n"
		   "the session's own) and /tmp stay for the next command; cp copies files in\n"
		   "and out, never through a link; every command and copy is in the session's\n"
		   "audit log (logs, show). --ttl and --idle end it; ls says why it ended.\n"
		   "RUN OPTIONS are those of 'moat run' (--profile, --policy, limits, --net...):\n"
		   "see 'moat run --help'. docs/sessions.md tells the whole of it.\n");
}

static int fail_err(const char *what, const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("session %s: %s", what, moat_error_format(err, buf, sizeof(buf)));
}

/* The keeper's environment: what it needs (its runtime folder, TMPDIR for
 * a delegating session's nested runs, where a sanitizer build reports), and the variables the policy's
 * secrets are read from (env:VAR), which the keeper reads into memory its
 * sandbox's init does not inherit and wipes from its own environment
 * before the sandbox exists, as moat run does (secretstore.h). */
static char **keeper_env(const moat_policy *p)
{
	char **env = NULL;
	const char *names[] = {"XDG_RUNTIME_DIR", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
			       "MOAT_TEST_UPSTREAM_CA"};
	for (size_t i = 0; i < ELEMENTSOF(names) + p->n_secrets; i++) {
		const char *name = NULL;
		if (i < ELEMENTSOF(names))
			name = names[i];
		else if (p->secrets[i - ELEMENTSOF(names)].from &&
			 moat__startswith(p->secrets[i - ELEMENTSOF(names)].from, "env:"))
			name = p->secrets[i - ELEMENTSOF(names)].from + 4;
		const char *v = name ? getenv(name) : NULL;
		_cleanup_free_ char *e = NULL;
		if (v && asprintf(&e, "%s=%s", name, v) > 0 && moat__strv_push(&env, e) < 0)
			break;
		if (e)
			explicit_bzero(e, strlen(e));
	}
	return env;
}

static int create_with(int n, char **rest, const char *name, bool json, const char *ws_path, const char *ws_tmp,
		       const moat_session_lifetime *life, bool record)
{
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
	/* Holds the secrets' values (env:VAR): wiped once the keeper has them. */
	_cleanup_strv_free_ char **kenv = keeper_env(policy);
	moat_keeper_start_opts o = {.envp = kenv};
	moat_session_workspace ws = {.host_path = ws_path, .persistent_tmp = ws_tmp, .record = record};
	moat_error err = {0};
	/* Every session has its audit log: create's --audit FILE, or one of
	 * its own. */
	char log_path[PATH_MAX], log_tmp[64] = "";
	if (!policy->audit_log) {
		if (moat__session_log_new(log_path, sizeof(log_path), log_tmp, sizeof(log_tmp), &err) < 0)
			return fail_err("create", &err);
		if (!(policy->audit_log = strdup(log_path)))
			return moat_cli_fail("out of memory");
		ws.log_tmp = log_tmp;
	}
	ws.log_path = policy->audit_log;
	moat_session_info s;
	int cr = moat_session_create(policy, name, &ws, life, &o, &s, &err);
	if (cr == -EOPNOTSUPP && log_tmp[0] && policy->audit_files) {
		/* The session's own log was not asked for, and a file trail in
		 * it (a profile's audit.files) is not offered by a keeper's
		 * sandbox yet: the session goes on with a log without file
		 * events, as it would have had no log at all. */
		fprintf(stderr, "moat: session create: note: the session's log has no file events (audit.files is "
				"not offered for sessions yet)\n");
		policy->audit_files = false;
		moat_error_clear(&err);
		/* A fresh log: the failed keeper's may still be held. */
		moat_error e2 = {0};
		(void)moat__session_log_remove(log_tmp, &e2);
		if (moat__session_log_new(log_path, sizeof(log_path), log_tmp, sizeof(log_tmp), &err) < 0)
			return fail_err("create", &err);
		free(policy->audit_log);
		if (!(policy->audit_log = strdup(log_path)))
			return moat_cli_fail("out of memory");
		ws.log_path = policy->audit_log;
		cr = moat_session_create(policy, name, &ws, life, &o, &s, &err);
	}
	for (char **e = kenv; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
	if (cr < 0) {
		moat_error e2 = {0};
		if (log_tmp[0])
			(void)moat__session_log_remove(log_tmp, &e2);
		return fail_err("create", &err);
	}
	if (json) {
		/* The isolation report is what session.start logged: what was
		 * in force, as the mechanisms themselves said. */
		moat_session_log_summary sum;
		moat_error e2 = {0};
		json_t *iso = moat_session_log_summarize(&s, &sum, &e2) == 0 ? sum.isolation : NULL;
		json_t *j = json_pack("{s:s, s:s?, s:s, s:s, s:i, s:s, s:s, s:b, s:s, s:o?}", "id", s.id, "name",
				      s.name[0] ? s.name : NULL, "state_dir", s.dir, "socket", s.socket, "keeper_pid",
				      (int)s.keeper_pid, "policy_sha256", s.policy_sha256, "workspace", s.workspace,
				      "workspace_persistent", s.workspace_persistent, "audit_log", s.audit_log, "isolation",
				      iso);
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

static int cmd_create(int argc, char **argv)
{
	/* --name, --json and --workspace are create's own; the rest go to the
	 * run options' parser as they are, with the workspace's bind and
	 * working directory added. */
	const char *name = NULL, *workspace = NULL;
	bool json = false, cwd_given = false, record = false;
	moat_session_lifetime life = {0};
	moat_error err = {0};
	_cleanup_free_ char **rest = calloc((size_t)argc + 8, sizeof(char *));
	if (!rest)
		return moat_cli_fail("out of memory");
	int n = 0, tail = -1;
	rest[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			tail = i;
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--record") == 0)
			record = true;
		else if (strcmp(argv[i], "--ttl") == 0 || strcmp(argv[i], "--idle") == 0) {
			if (i + 1 >= argc)
				return moat_cli_fail("session create: %s needs a duration", argv[i]);
			uint64_t *to = argv[i][2] == 't' ? &life.ttl_ms : &life.idle_ms;
			if (moat_parse_duration_ms(argv[i + 1], to, &err) < 0 || *to == 0 ||
			    *to > MOAT_KEEPER_MAX_LIFETIME_MS) {
				if (!err.code)
					moat_error_set(&err, MOAT_EINPUT, "'%s': between 1ms and 366 days", argv[i + 1]);
				char what[16];
				snprintf(what, sizeof(what), "create: %s", argv[i] + 2);
				return fail_err(what, &err);
			}
			i++;
		} else if (strcmp(argv[i], "--name") == 0 || strcmp(argv[i], "--workspace") == 0) {
			if (i + 1 >= argc)
				return moat_cli_fail("session create: %s needs a value", argv[i]);
			*(argv[i][2] == 'n' ? &name : &workspace) = argv[i + 1];
			i++;
		} else if (strncmp(argv[i], "--name=", 7) == 0)
			name = argv[i] + 7;
		else if (strncmp(argv[i], "--workspace=", 12) == 0)
			workspace = argv[i] + 12;
		else {
			if (strcmp(argv[i], "--cwd") == 0 || strncmp(argv[i], "--cwd=", 6) == 0)
				cwd_given = true;
			rest[n++] = argv[i];
		}
	}
	/* The workspace: the folder given, or one of the session's own that
	 * outlives stop (and rm, but for rm --purge). */
	char ws_path[PATH_MAX], ws_tmp[64] = "";
	if (workspace) {
		if (!workspace[0] || !realpath(workspace, ws_path))
			return moat_cli_fail("session create: --workspace %s: %s", workspace,
					     workspace[0] ? strerror(errno) : "empty");
		struct stat st;
		if (stat(ws_path, &st) < 0 || !S_ISDIR(st.st_mode))
			return moat_cli_fail("session create: --workspace %s: not a folder", workspace);
	} else if (moat__session_workspace_new(ws_path, sizeof(ws_path), ws_tmp, sizeof(ws_tmp), &err) < 0)
		return fail_err("create", &err);
	_cleanup_free_ char *bind = NULL;
	if (asprintf(&bind, "%s:/workspace", ws_path) < 0)
		return moat_cli_fail("out of memory");
	rest[n++] = "--rw";
	rest[n++] = bind;
	if (!cwd_given) {
		rest[n++] = "--cwd";
		rest[n++] = "/workspace";
	}
	for (int i = tail; tail >= 0 && i < argc; i++)
		rest[n++] = argv[i];
	int rc = create_with(n, rest, name, json, ws_path, ws_tmp[0] ? ws_tmp : NULL, &life, record);
	if (rc != 0 && ws_tmp[0]) {
		/* Nothing of a session that was not made stays. */
		moat_error e2 = {0};
		(void)moat__session_workspace_purge(ws_tmp, &e2);
	}
	return rc;
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
	/* The connection that found the session running carries the
	 * command too: one connection and one hello per exec. */
	moat_session_info s;
	_cleanup_keeper_ moat_keeper *k = NULL;
	if (moat_session_find_connected(key, &s, &k, &err) < 0)
		return fail_err("exec", &err);
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
	if (moat_session_exec_on(k, &s, &o, &x, &err) < 0)
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

/* cp [--max-bytes SIZE] [--file] SRC ID:DST | ID:SRC DST: exactly one
 * side names a session. The caps are for a copy out made for someone else
 * (moatd's GET .../files): a sparse file in the session is dense on the
 * host, and a folder's tree would stay wherever it landed. */
static int cmd_cp(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		session_usage(stdout);
		return 0;
	}
	moat_session_cp_caps caps = {0};
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		const char *v = NULL;
		if (strcmp(argv[i], "--file") == 0)
			caps.file_only = true;
		else if (strncmp(argv[i], "--max-bytes=", 12) == 0)
			v = argv[i] + 12;
		else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
			v = argv[++i];
		else
			return moat_cli_fail("session cp: unknown option '%s' (expected --max-bytes SIZE, --file)",
					     argv[i]);
		moat_error e = {0};
		if (v && (moat_parse_size(v, &caps.max_bytes, &e) < 0 || caps.max_bytes == 0 ||
			  caps.max_bytes == MOAT_UNLIMITED))
			return moat_cli_fail("session cp: --max-bytes %s: expected a size above 0 (4K, 16M)", v);
	}
	argc -= i - 1;
	argv += i - 1;
	if (argc != 3)
		return moat_cli_fail("session cp: expected a source and a destination (usage: moat session cp SRC "
				     "ID:DST, or ID:SRC DST)");
	char k1[MOAT_SESSION_NAME_MAX + 1], k2[MOAT_SESSION_NAME_MAX + 1];
	const char *p1, *p2;
	bool s1 = moat__session_cp_split(argv[1], k1, sizeof(k1), &p1);
	bool s2 = moat__session_cp_split(argv[2], k2, sizeof(k2), &p2);
	if (s1 == s2)
		return moat_cli_fail("session cp: exactly one of '%s' and '%s' must be ID:/PATH in a session", argv[1],
				     argv[2]);
	bool into = s2;
	if (into && (caps.file_only || caps.max_bytes))
		return moat_cli_fail("session cp: --max-bytes and --file are for a copy out of a session");
	moat_session_info s;
	if (find("cp", into ? k2 : k1, &s) < 0)
		return MOAT_EXIT_ERROR;
	if (!s.running)
		return moat_cli_fail("session cp: session %s is not running (%s)", into ? k2 : k1, s.reason);
	moat_session_cp_stats st;
	moat_error err = {0};
	if (moat_session_cp_capped(&s, into, into ? argv[1] : argv[2], into ? p2 : p1, &caps, &st, &err) < 0)
		return fail_err("cp", &err);
	printf("%llu files, %llu folders, %llu bytes\n", (unsigned long long)st.files, (unsigned long long)st.dirs,
	       (unsigned long long)st.bytes);
	return 0;
}

static int cmd_logs(int argc, char **argv)
{
	const char *key = NULL, *type = NULL;
	bool follow = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--follow") == 0 || strcmp(argv[i], "-f") == 0)
			follow = true;
		else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
			type = argv[++i];
		else if (strncmp(argv[i], "--type=", 7) == 0)
			type = argv[i] + 7;
		else if (!key && argv[i][0] != '-')
			key = argv[i];
		else
			return moat_cli_fail("session logs: unexpected '%s' (usage: moat session logs ID|NAME [--follow] "
					     "[--type TYPE])",
					     argv[i]);
	}
	if (!key)
		return moat_cli_fail("session logs: no session given (usage: moat session logs ID|NAME)");
	if (type && !type[0])
		return moat_cli_fail("session logs: --type needs an event type (session.start, command, session.cp...)");
	moat_session_info s;
	if (find("logs", key, &s) < 0)
		return MOAT_EXIT_ERROR;
	moat_error err = {0};
	if (moat_session_logs(&s, type, follow && s.running, &err) < 0)
		return fail_err("logs", &err);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	if (argc != 2)
		return moat_cli_fail("session show: expected one ID or NAME (usage: moat session show ID|NAME)");
	moat_session_info s;
	if (find("show", argv[1], &s) < 0)
		return MOAT_EXIT_ERROR;
	moat_error err = {0};
	moat_session_log_summary sum;
	if (moat_session_log_summarize(&s, &sum, &err) < 0)
		return fail_err("show", &err);
	/* The commands running now, by the keeper's own word. */
	json_t *live = json_array();
	/* The gateway's counters and the approval gates, by the keeper's word
	 * too: null when the session is not running (or has no gateway). */
	json_t *net = NULL, *approvals = NULL;
	if (s.running) {
		_cleanup_keeper_ moat_keeper *k = NULL;
		moat_keeper_msg st;
		if (moat_keeper_connect(s.socket, &k, &err) == 0 && moat_keeper_status(k, &st, &err) == 0) {
			for (size_t i = 0; i < st.n_commands; i++)
				json_array_append_new(live, json_integer(st.commands[i]));
			if (st.net_known)
				net = json_pack("{s:I, s:I, s:I, s:I}", "requests_allowed", (json_int_t)st.net_allowed,
						"requests_denied", (json_int_t)st.net_denied, "bytes_up",
						(json_int_t)st.net_bytes_up, "bytes_down", (json_int_t)st.net_bytes_down);
			approvals = json_pack("{s:I, s:I}", "pending", (json_int_t)st.approvals_pending, "leases",
					      (json_int_t)st.approvals_leases);
			moat_keeper_msg_done(&st);
		}
	}
	json_t *j = json_pack(
		"{s:s, s:s?, s:s, s:s?, s:s?, s:I, s:s, s:s, s:b, s:I, s:I, s:s, "
		"s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:{s:I, s:s, s:s, s:s}, s:o?}",
		"id", s.id, "name", s.name[0] ? s.name : NULL, "state", s.running ? "running" : "dead", "reason",
		s.running ? NULL : s.reason, "end_reason", !s.running && s.end_reason[0] ? s.end_reason : NULL, "created",
		(json_int_t)s.created, "policy_sha256", s.policy_sha256, "workspace", s.workspace,
		"workspace_persistent", s.workspace_persistent, "ttl_ms", (json_int_t)s.ttl_ms, "idle_ms",
		(json_int_t)s.idle_ms, "audit_log", s.audit_log, "used", "commands", (json_int_t)sum.commands, "cpu_ms",
		(json_int_t)sum.cpu_ms, "wall_ms", (json_int_t)sum.wall_ms, "copies", (json_int_t)sum.copies,
		"cp_in_bytes", (json_int_t)sum.cp_in_bytes, "cp_out_bytes", (json_int_t)sum.cp_out_bytes, "limit_hits",
		(json_int_t)sum.limit_hits, "running", live, "gateway", net ? net : json_null(), "approvals",
		approvals ? approvals : json_null(), "audit_head", "seq", (json_int_t)sum.head_seq, "type",
		sum.head_type, "time", sum.head_time, "prev", sum.head_prev, "isolation", sum.isolation);
	char *t = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(j);
	if (!t)
		return moat_cli_fail("out of memory");
	printf("%s\n", t);
	free(t);
	return 0;
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
				a, json_pack("{s:s, s:s?, s:s, s:s?, s:I, s:i, s:s, s:s, s:s, s:b}", "id", v[i].id, "name",
					     v[i].name[0] ? v[i].name : NULL, "state", v[i].running ? "running" : "dead",
					     "reason", v[i].running ? NULL : v[i].reason, "created", (json_int_t)v[i].created,
					     "keeper_pid", (int)v[i].keeper_pid, "state_dir", v[i].dir, "policy_sha256",
					     v[i].policy_sha256, "workspace", v[i].workspace, "workspace_persistent",
					     v[i].workspace_persistent));
		for (size_t i = 0; a && i < n; i++) {
			/* How it ended, as its keeper said (null: running, or
			 * killed without a word), and its lifetime. */
			json_t *e = json_array_get(a, i);
			json_object_set_new(e, "end_reason",
					    !v[i].running && v[i].end_reason[0] ? json_string(v[i].end_reason) : json_null());
			json_object_set_new(e, "ttl_ms", json_integer((json_int_t)v[i].ttl_ms));
			json_object_set_new(e, "idle_ms", json_integer((json_int_t)v[i].idle_ms));
		}
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
	bool purge = false;
	const char *key = NULL;
	for (int i = 1; i < argc; i++) {
		if (rm && strcmp(argv[i], "--purge") == 0)
			purge = true;
		else if (!key && argv[i][0] != '-')
			key = argv[i];
		else
			key = NULL, i = argc;
	}
	if (!key || argc != 2 + (int)purge)
		return moat_cli_fail("session %s: expected one ID or NAME (usage: moat session %s%s ID|NAME)", what, what,
				     rm ? " [--purge]" : "");
	moat_session_info s;
	if (find(what, key, &s) < 0)
		return MOAT_EXIT_ERROR;
	moat_error err = {0};
	if (rm ? moat_session_remove(&s, purge, &err) < 0 : moat_session_stop(&s, &err) < 0)
		return fail_err(what, &err);
	/* Said, so that no one takes it to be gone. */
	if (rm && s.workspace_persistent && !purge)
		fprintf(stderr, "moat: session rm: its workspace stays at %s (rm --purge removes it)\n", s.workspace);
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
	if (strcmp(sub, "cp") == 0)
		return cmd_cp(argc - 1, argv + 1);
	if (strcmp(sub, "logs") == 0)
		return cmd_logs(argc - 1, argv + 1);
	if (strcmp(sub, "show") == 0)
		return cmd_show(argc - 1, argv + 1);
	if (strcmp(sub, "ls") == 0)
		return cmd_ls(argc - 1, argv + 1);
	if (strcmp(sub, "stop") == 0)
		return cmd_stop_rm(argc - 1, argv + 1, false);
	if (strcmp(sub, "rm") == 0)
		return cmd_stop_rm(argc - 1, argv + 1, true);
	return moat_cli_fail("session: unknown command '%s' (expected create, exec, cp, ls, show, logs, stop or rm)", sub);
}
