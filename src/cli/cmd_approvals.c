/* moat approvals, moat approve, moat deny: the people's side of approval
 * gates (approvals.h; docs/approvals.md). Each session's keeper holds its
 * own queue; these commands ask the keepers of this user's running
 * sessions over their control sockets, which only their owner or root can
 * reach. Parses, asks, prints. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "approval.h"
#include "cli.h"
#include "keeper-proto.h"
#include "keeper.h"
#include "session.h"
#include "units.h"

static void approvals_usage(FILE *f)
{
	fprintf(f, "usage: moat approvals ls [--session ID|NAME] [--json]\n"
		   "       moat approvals leases [--session ID|NAME] [--json]\n"
		   "       moat approvals revoke LEASE\n"
		   "       moat approve ID [--once | --for DURATION | --session] [--scope exact|path|host] [--note TEXT]\n"
		   "       moat deny ID [--reason TEXT]\n"
		   "\n"
		   "Actions a session's policy gates (network.approve) wait in its keeper until\n"
		   "someone decides. ls lists what waits, oldest first; approve lets it through:\n"
		   "--once (the default) that one action, --for DURATION or --session a lease\n"
		   "that lets matching actions through until it ends or is revoked; --scope\n"
		   "widens what matches (exact: the same request; path: the same method under\n"
		   "the same folder; host: anything on that host and port). deny answers the\n"
		   "action with 403 and the reason. docs/approvals.md tells the whole story.\n");
}

static int fail_err(const char *what, const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("%s: %s", what, moat_error_format(err, buf, sizeof(buf)));
}

/* Sends body to one session's keeper. -ENOTSUP: a keeper of an older moat,
 * which holds no approvals. -ESRCH: its keeper went away since the session
 * was listed (the session ended meanwhile): it holds nothing any more. */
static int ask_one(const moat_session_info *s, json_t *body, json_t **ret, moat_error *err)
{
	moat_keeper *k = NULL;
	int r = moat_keeper_connect(s->socket, &k, err);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return -ESRCH;
	if (r < 0)
		return r;
	r = moat_keeper_approvals(k, body, ret, err);
	moat_keeper_close(k);
	if (r == -EINVAL && strstr(err->msg, "unknown message type 'approvals'"))
		return -ENOTSUP;
	return r;
}

/* Adds the `moat mcp wrap` relays of this user that hold approval queues:
 * a keeper's runtime folder with an "mcp" file (the server's name) and a
 * control socket that speaks hello and approvals. Named "mcp:SERVER". */
static int add_relays(moat_session_info **v, size_t *n)
{
	char base[PATH_MAX];
	moat_error err = {0};
	int bfd = moat__keeper_base_open(base, sizeof(base), &err);
	if (bfd < 0)
		return 0; /* no folder: no relay */
	DIR *dir = fdopendir(bfd);
	if (!dir) {
		close(bfd);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(dir)) && *n < 1024) {
		if (!moat__keeper_id_valid(de->d_name))
			continue;
		_cleanup_close_ int dfd = openat(bfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid())
			continue;
		/* A relay that ended without a word (killed) left its folder:
		 * its lock is free, no one to ask. */
		_cleanup_close_ int lock = openat(dfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (lock < 0 || flock(lock, LOCK_SH | LOCK_NB) == 0)
			continue;
		_cleanup_close_ int mf = openat(dfd, "mcp", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char server[MOAT_SESSION_NAME_MAX - 3];
		ssize_t got = mf >= 0 ? read(mf, server, sizeof(server) - 1) : -1;
		if (got <= 0)
			continue;
		server[got] = '\0';
		moat_session_info *nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			closedir(dir);
			return moat_cli_fail("out of memory");
		}
		*v = nv;
		moat_session_info *s = &nv[(*n)++];
		memset(s, 0, sizeof(*s));
		snprintf(s->id, sizeof(s->id), "%s", de->d_name);
		snprintf(s->name, sizeof(s->name), "mcp:%s", server);
		snprintf(s->socket, sizeof(s->socket), "%s/%s/ctl", base, de->d_name);
		s->running = true;
	}
	closedir(dir);
	return 0;
}

/* The running sessions to ask: the one named, or all (with the MCP
 * relays' queues). */
static int sessions(const char *what, const char *key, moat_session_info **ret, size_t *ret_n)
{
	moat_error err = {0};
	if (key) {
		moat_session_info *s = calloc(1, sizeof(*s));
		if (!s)
			return moat_cli_fail("out of memory");
		if (moat_session_find(key, s, &err) < 0) {
			free(s);
			return fail_err(what, &err);
		}
		if (!s->running) {
			int r = moat_cli_fail("%s: session %s is not running (%s)", what, key, s->reason);
			free(s);
			return r;
		}
		*ret = s;
		*ret_n = 1;
		return 0;
	}
	if (moat_session_list(ret, ret_n, &err) < 0)
		return fail_err(what, &err);
	return add_relays(ret, ret_n);
}

static void fmt_time(json_t *t, char *buf, size_t len)
{
	if (!json_is_number(t)) {
		snprintf(buf, len, "-");
		return;
	}
	time_t s = (time_t)json_number_value(t);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, len, "%H:%M:%SZ", &tm);
}

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static int cmd_list(int argc, char **argv, bool leases)
{
	static const struct option opts[] = {
		{"session", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *what = leases ? "approvals leases" : "approvals ls";
	const char *key = NULL;
	bool json = false;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			key = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			approvals_usage(stdout);
			return 0;
		default:
			return moat_cli_fail("%s: unknown option '%s' (see 'moat approvals --help')", what, argv[optind - 1]);
		}
	}
	if (optind < argc)
		return moat_cli_fail("%s: unexpected argument '%s'", what, argv[optind]);
	_cleanup_free_ moat_session_info *ss = NULL;
	size_t n = 0;
	int r = sessions(what, key, &ss, &n);
	if (r)
		return r;
	json_t *all = json_array();
	json_t *req = json_pack("{s:s}", "op", leases ? "leases" : "ls");
	if (!all || !req)
		return moat_cli_fail("out of memory");
	int status = 0;
	for (size_t i = 0; i < n; i++) {
		if (!ss[i].running)
			continue;
		json_t *ans = NULL;
		moat_error err = {0};
		int rr = ask_one(&ss[i], req, &ans, &err);
		if (rr == -ENOTSUP || rr == -ESRCH)
			continue;
		if (rr < 0) {
			char buf[MOAT_ERROR_MAX + 64];
			fprintf(stderr, "moat: %s: session %s: %s\n", what, ss[i].id, moat_error_format(&err, buf, sizeof(buf)));
			status = MOAT_EXIT_ERROR;
			continue;
		}
		json_t *items = json_object_get(ans, leases ? "leases" : "approvals");
		size_t j;
		json_t *it;
		json_array_foreach(items, j, it) {
			json_object_set_new(it, "session", json_string(ss[i].id));
			json_object_set_new(it, "session_name", ss[i].name[0] ? json_string(ss[i].name) : json_null());
			json_array_append(all, it);
		}
		json_decref(ans);
	}
	json_decref(req);
	if (json) {
		char *t = json_dumps(all, JSON_COMPACT);
		if (t)
			printf("%s\n", t);
		free(t);
	} else {
		size_t j;
		json_t *it;
		if (leases)
			printf("%-10s %-14s %-8s %-6s %-10s %s\n", "LEASE", "SESSION", "KIND", "SCOPE", "UNTIL", "WHAT");
		else
			printf("%-10s %-14s %-10s %-10s %s\n", "ID", "SESSION", "ASKED", "EXPIRES", "WHAT");
		json_array_foreach(all, j, it) {
			char a[32], b[32];
			const char *sn = json_string_value(json_object_get(it, "session_name"));
			char sess[16];
			snprintf(sess, sizeof(sess), "%.14s", sn ? sn : jstr(it, "session"));
			_cleanup_free_ char *w = moat__escape_controls_dup(jstr(it, "what"));
			if (leases) {
				fmt_time(json_object_get(it, "until"), a, sizeof(a));
				printf("%-10s %-14s %-8s %-6s %-10s %s\n", jstr(it, "lease"), sess, jstr(it, "kind"),
				       jstr(it, "scope"), strcmp(jstr(it, "kind"), "session") == 0 ? "session" : a,
				       w ? w : "");
			} else {
				fmt_time(json_object_get(it, "asked_at"), a, sizeof(a));
				fmt_time(json_object_get(it, "expires_at"), b, sizeof(b));
				printf("%-10s %-14s %-10s %-10s %s\n", jstr(it, "id"), sess, a, b, w ? w : "");
			}
		}
	}
	json_decref(all);
	return status;
}

/* Asks every running session's keeper in turn until one holds id. */
static int decide(const char *what, const char *id, json_t *req)
{
	_cleanup_free_ moat_session_info *ss = NULL;
	size_t n = 0;
	int r = sessions(what, NULL, &ss, &n);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (!ss[i].running)
			continue;
		json_t *ans = NULL;
		moat_error err = {0};
		r = ask_one(&ss[i], req, &ans, &err);
		if (r == -ENOENT || r == -ENOTSUP || r == -ESRCH)
			continue;
		if (r < 0)
			return fail_err(what, &err);
		const char *lease = json_string_value(json_object_get(ans, "lease"));
		json_t *until = json_object_get(ans, "until");
		if (strcmp(what, "approve") == 0) {
			if (lease && json_is_number(until)) {
				char t[32];
				fmt_time(until, t, sizeof(t));
				printf("%s: approved; lease %s until %s\n", id, lease, t);
			} else if (lease)
				printf("%s: approved; lease %s for the session\n", id, lease);
			else
				printf("%s: approved once\n", id);
		} else if (strcmp(what, "deny") == 0)
			printf("%s: denied\n", id);
		else
			printf("%s: revoked\n", id);
		json_decref(ans);
		return 0;
	}
	return moat_cli_fail("%s: %s: no running session of yours holds it (see 'moat approvals %s')", what, id,
			     strcmp(what, "revoke") == 0 ? "leases" : "ls");
}

static int cmd_approve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"once", no_argument, NULL, 'o'},
		{"for", required_argument, NULL, 'f'},
		{"session", no_argument, NULL, 's'},
		{"scope", required_argument, NULL, 'S'},
		{"note", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *kind = NULL, *scope = NULL, *note = NULL;
	uint64_t for_ms = 0;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *k = NULL;
		switch (opt) {
		case 'o':
			k = "once";
			break;
		case 'f': {
			moat_error err = {0};
			if (moat_parse_duration_ms(optarg, &for_ms, &err) < 0)
				return fail_err("approve: --for", &err);
			if (for_ms == 0 || for_ms == MOAT_UNLIMITED)
				return moat_cli_fail("approve: --for %s: expected a duration above zero (for no end, --session)",
						     optarg);
			k = "for";
			break;
		}
		case 's':
			k = "session";
			break;
		case 'S':
			if (moat_scope_from_string(optarg) < 0)
				return moat_cli_fail("approve: --scope %s: expected exact, path or host", optarg);
			scope = optarg;
			break;
		case 'n':
			note = optarg;
			break;
		case 'h':
			approvals_usage(stdout);
			return 0;
		default:
			return moat_cli_fail("approve: unknown option '%s' (see 'moat approvals --help')", argv[optind - 1]);
		}
		if (k && kind && strcmp(k, kind) != 0)
			return moat_cli_fail("approve: --%s and --%s: choose one of --once, --for and --session", kind, k);
		if (k)
			kind = k;
	}
	if (optind + 1 != argc)
		return moat_cli_fail("approve: expected one approval id (see 'moat approvals ls')");
	const char *id = argv[optind];
	if (!moat__approval_id_valid(id, 'a'))
		return moat_cli_fail("approve: '%s' is not an approval id (see 'moat approvals ls')", id);
	if (scope && (!kind || strcmp(kind, "once") == 0) && strcmp(scope, "exact") != 0)
		return moat_cli_fail("approve: --scope %s: a once approval is for that one action; add --for or --session",
				     scope);
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "approve", "id", id, "kind", kind ? kind : "once");
	if (!req)
		return moat_cli_fail("out of memory");
	if (for_ms)
		json_object_set_new(req, "for_ms", json_integer((json_int_t)for_ms));
	if (scope)
		json_object_set_new(req, "scope", json_string(scope));
	if (note)
		json_object_set_new(req, "note", json_string(note));
	int r = decide("approve", id, req);
	json_decref(req);
	return r;
}

static int cmd_deny(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reason", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *reason = NULL;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			reason = optarg;
			break;
		case 'h':
			approvals_usage(stdout);
			return 0;
		default:
			return moat_cli_fail("deny: unknown option '%s' (see 'moat approvals --help')", argv[optind - 1]);
		}
	}
	if (optind + 1 != argc)
		return moat_cli_fail("deny: expected one approval id (see 'moat approvals ls')");
	const char *id = argv[optind];
	if (!moat__approval_id_valid(id, 'a'))
		return moat_cli_fail("deny: '%s' is not an approval id (see 'moat approvals ls')", id);
	json_t *req = json_pack("{s:s, s:s}", "op", "deny", "id", id);
	if (!req)
		return moat_cli_fail("out of memory");
	if (reason)
		json_object_set_new(req, "reason", json_string(reason));
	int r = decide("deny", id, req);
	json_decref(req);
	return r;
}

static int cmd_revoke(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		approvals_usage(stdout);
		return 0;
	}
	if (argc != 2)
		return moat_cli_fail("approvals revoke: expected one lease id (see 'moat approvals leases')");
	if (!moat__approval_id_valid(argv[1], 'l'))
		return moat_cli_fail("approvals revoke: '%s' is not a lease id (see 'moat approvals leases')", argv[1]);
	json_t *req = json_pack("{s:s, s:s}", "op", "revoke", "lease", argv[1]);
	if (!req)
		return moat_cli_fail("out of memory");
	int r = decide("revoke", argv[1], req);
	json_decref(req);
	return r;
}

int moat_cmd_approvals(int argc, char **argv)
{
	if (argc < 2) {
		approvals_usage(stderr);
		return MOAT_EXIT_ERROR;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
		approvals_usage(stdout);
		return 0;
	}
	if (strcmp(sub, "ls") == 0)
		return cmd_list(argc - 1, argv + 1, false);
	if (strcmp(sub, "leases") == 0)
		return cmd_list(argc - 1, argv + 1, true);
	if (strcmp(sub, "revoke") == 0)
		return cmd_revoke(argc - 1, argv + 1);
	return moat_cli_fail("approvals: unknown subcommand '%s' (see 'moat approvals --help')", sub);
}

int moat_cmd_approve(int argc, char **argv)
{
	return cmd_approve(argc, argv);
}

int moat_cmd_deny(int argc, char **argv)
{
	return cmd_deny(argc, argv);
}
