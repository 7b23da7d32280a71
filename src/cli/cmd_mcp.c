/* moat mcp serve: the sandbox as tools for an agent, over the Model Context
 * Protocol on stdio (docs/mcp.md).
 *
 * One event loop reads newline-delimited JSON-RPC from fd 0 and answers on
 * fd 1; log lines go to fd 2. Every tool call that runs something is a new
 * process: this binary executed afresh (moat run, moat session ...), never
 * a fork of the server that would carry other requests' data in its heap.
 * A call's arguments are checked against its schema first, then its
 * policy against the server's own (--policy/--profile): a call asking for
 * more than the server allows is a tool error naming the field, never a
 * wider sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "approval.h"
#include "cli.h"
#include "jsonrpc.h"
#include "keeper.h"
#include "mcp.h"
#include "moat-config.h"
#include "policy.h"
#include "session.h"
#include "units.h"
#include "util.h"

extern char **environ;

/* Calls running at once; more wait as a JSON-RPC error the client may retry. */
#define MCP_MAX_CALLS 16
/* What one call's stdout and stderr keep each; the rest is counted. */
#define MCP_MAX_OUTPUT (1u << 20)
/* Sessions one server may hold. */
#define MCP_MAX_SESSIONS 32
/* After SIGTERM, a cancelled call's process gets this long before SIGKILL. */
#define MCP_KILL_GRACE_MS 5000
#define MCP_PROGRESS_MS 1000
/* session_exec's default timeout, and the one of the file tools. */
#define MCP_EXEC_DEFAULT_S 60
#define MCP_FILE_TIMEOUT "30s"

typedef enum call_kind {
	CALL_RUN_CODE,
	CALL_SESSION_CREATE,
	CALL_SESSION_EXEC,
	CALL_SESSION_READ,
	CALL_SESSION_WRITE,
	CALL_SESSION_LIST,
	CALL_SESSION_STOP,
} call_kind;

/* Held approvals one call remembers; how often a running session call asks
 * its keeper what waits. */
#define MCP_MAX_HELD 8
#define MCP_ASK_MS 500

typedef struct outbuf {
	char *p;
	size_t len;
	uint64_t total;
} outbuf;

typedef struct mcp_call {
	bool used;
	call_kind kind;
	json_t *id;
	json_t *progress_token;
	pid_t pid;
	int pidfd, out_fd, err_fd;
	outbuf out, err;
	char dir[PATH_MAX]; /* the call's own folder, or "" */
	char session[MOAT_KEEPER_ID_LEN];
	char name[MOAT_SESSION_NAME_MAX + 1];
	char path[MOAT_MCP_MAX_PATH + 1];
	uint64_t start_ms, next_progress_ms, kill_at_ms;
	bool cancelled;
	uint64_t bytes; /* session_write_file: the content's */
	/* A session call: the approvals its session held while it ran (the
	 * session's approval gate, docs/approvals.md), told to the client
	 * once each, and when to ask the keeper again. */
	char held[MCP_MAX_HELD][MOAT_APPROVAL_ID_LEN];
	char held_what[MCP_MAX_HELD][160];
	size_t n_held;
	uint64_t next_ask_ms;
} mcp_call;

typedef struct mcp_session {
	char id[MOAT_KEEPER_ID_LEN];
	char name[MOAT_SESSION_NAME_MAX + 1];
	char policy[PATH_MAX];
} mcp_session;

typedef struct mcp_server {
	moat_policy *policy;
	char self[PATH_MAX];
	char state[PATH_MAX];
	moat_jsonrpc_ids ids;
	mcp_call calls[MCP_MAX_CALLS];
	mcp_session sessions[MCP_MAX_SESSIONS];
	size_t n_sessions;
	unsigned seq;
	bool closing;
	int out_fd;
	bool elicit; /* the client declared the elicitation capability */
	int log_level; /* logging/setLevel's, an index of moat_mcp_log_level */
	uint64_t next_elicit;
} mcp_server;

/* Milliseconds on the monotonic clock. */
static uint64_t now_ms(void)
{
	return moat__now_ns() / 1000000;
}

_printf_(1, 2) static void logline(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "moat mcp: %s\n", buf);
}

/* Sends msg (stolen) to the client. */
static int send_msg(mcp_server *s, json_t *msg)
{
	if (!msg)
		return -ENOMEM;
	size_t n;
	_cleanup_free_ char *line = moat_jsonrpc_encode_line(msg, &n);
	json_decref(msg);
	if (!line)
		return -ENOMEM;
	return moat__write_all(s->out_fd, line, n);
}

static int send_error(mcp_server *s, json_t *id, int code, const char *fmt, ...) _printf_(4, 5);
static int send_error(mcp_server *s, json_t *id, int code, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return send_msg(s, moat_jsonrpc_error(id, code, buf, NULL));
}

/* A tool result: structured (stolen, may be NULL) with its text beside it,
 * as the specification asks for clients that do not read structured output. */
static json_t *tool_result(json_t *structured, const char *text, bool is_error)
{
	_cleanup_free_ char *dump = NULL;
	if (!text && structured)
		text = dump = json_dumps(structured, JSON_COMPACT);
	json_t *r = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text ? text : "", "isError",
			      is_error);
	if (r && structured)
		json_object_set_new(r, "structuredContent", structured);
	else
		json_decref(structured);
	return r;
}

static int send_tool_error(mcp_server *s, json_t *id, const char *fmt, ...) _printf_(3, 4);
static int send_tool_error(mcp_server *s, json_t *id, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return send_msg(s, moat_jsonrpc_result(id, tool_result(NULL, buf, true)));
}

/* ---- files of the server's own state folder ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	int r = moat__write_all(fd, data, len);
	/* The mode asked for, whatever the umask. */
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	return r;
}

/* ---- policies of calls: at most the server's ---- */

/* Sets the limits a call asks for on p; msg names the field. */
static int apply_limits(moat_policy *p, const json_t *limits, char *msg, size_t size)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)limits, key, v) {
		moat_error err = {0};
		int r = 0;
		if (strcmp(key, "wall") == 0) {
			r = moat_parse_duration_ms(json_string_value(v), &p->limits.wall_ms, &err);
			p->limits_set |= MOAT_LIMIT_WALL;
		} else if (strcmp(key, "cpu_time") == 0) {
			r = moat_parse_duration_ms(json_string_value(v), &p->limits.cpu_ms, &err);
			p->limits_set |= MOAT_LIMIT_CPU_TIME;
		} else if (strcmp(key, "memory") == 0) {
			r = moat_parse_size(json_string_value(v), &p->limits.memory_bytes, &err);
			p->limits_set |= MOAT_LIMIT_MEMORY;
		} else if (strcmp(key, "output") == 0) {
			r = moat_parse_size(json_string_value(v), &p->limits.output_bytes, &err);
			p->limits_set |= MOAT_LIMIT_OUTPUT;
		} else if (strcmp(key, "pids") == 0) {
			p->limits.pids = (uint64_t)json_integer_value(v);
			p->limits_set |= MOAT_LIMIT_PIDS;
		}
		if (r < 0) {
			snprintf(msg, size, "arguments.limits.%s: %s", key, err.msg);
			return -EINVAL;
		}
	}
	return 0;
}

/* Replaces "the parent's" in a message of moat_policy_intersect: here the
 * parent is the server's policy. */
static void name_server_policy(const char *in, char *msg, size_t size)
{
	const char *p = strstr(in, "the parent's");
	if (p)
		snprintf(msg, size, "%.*sthe server policy's%s", (int)(p - in), in, p + strlen("the parent's"));
	else
		snprintf(msg, size, "%s", in);
}

/* Writes to path the effective policy of a call: child (NULL: the server's
 * own) with the call's limits, narrowed by the server's policy. */
static int write_call_policy(mcp_server *s, moat_policy *child, const json_t *limits, bool session, const char *path,
			     char *msg, size_t size)
{
	_cleanup_policy_ moat_policy *own = NULL;
	if (!child) {
		own = moat_policy_copy(s->policy);
		if (!own)
			return snprintf(msg, size, "out of memory"), -ENOMEM;
		child = own;
	}
	if (limits && apply_limits(child, limits, msg, size) < 0)
		return -EINVAL;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *eff = NULL;
	if (moat_policy_intersect(s->policy, child, &eff, &err) < 0) {
		name_server_policy(err.msg, msg, size);
		return -EPERM;
	}
	/* A session's life and CPU time, where no policy set them, are the
	 * session's defaults (as for moat session create), not one command's. */
	if (session)
		moat__session_default_limits(eff);
	_cleanup_free_ char *yaml = moat_policy_to_yaml(eff);
	if (!yaml)
		return snprintf(msg, size, "out of memory"), -ENOMEM;
	int r = write_file(path, yaml, strlen(yaml), 0600);
	if (r < 0)
		snprintf(msg, size, "cannot write the call's policy: %s", strerror(-r));
	return r;
}

/* ---- processes of calls ---- */

static void outbuf_take(outbuf *b, const char *p, size_t n)
{
	b->total += n;
	if (b->len >= MCP_MAX_OUTPUT)
		return;
	size_t keep = n < MCP_MAX_OUTPUT - b->len ? n : MCP_MAX_OUTPUT - b->len;
	if (!b->p && !(b->p = malloc(MCP_MAX_OUTPUT + 1)))
		return;
	memcpy(b->p + b->len, p, keep);
	b->len += keep;
	b->p[b->len] = '\0';
}

static void drain(int *fd, outbuf *b)
{
	char buf[65536];
	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			outbuf_take(b, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
	}
}

/* Starts self with argv in its own process group; its stdout and stderr
 * come back through pipes, its stdin is stdin_path (NULL: /dev/null). */
static int spawn_call(mcp_server *s, mcp_call *c, char **argv, const char *stdin_path)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1};
	_cleanup_close_ int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = -errno;
		close(out[0]);
		close(out[1]);
		return e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	posix_spawnattr_init(&at);
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGHUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	pid_t pid;
	int r = posix_spawn(&pid, s->self, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(out[1]);
	close(err[1]);
	if (r != 0) {
		close(out[0]);
		close(err[0]);
		return -r;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		r = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(out[0]);
		close(err[0]);
		return r;
	}
	fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	c->pid = pid;
	c->pidfd = pidfd;
	c->out_fd = out[0];
	c->err_fd = err[0];
	return 0;
}

static void call_free(mcp_call *c)
{
	json_decref(c->id);
	json_decref(c->progress_token);
	free(c->out.p);
	free(c->err.p);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	rm_tree(c->dir);
	*c = (mcp_call){.pidfd = -1, .out_fd = -1, .err_fd = -1};
}

static mcp_call *call_new(mcp_server *s, call_kind kind, json_t *id, json_t *params)
{
	for (size_t i = 0; i < MCP_MAX_CALLS; i++) {
		mcp_call *c = &s->calls[i];
		if (c->used)
			continue;
		*c = (mcp_call){.used = true, .kind = kind, .pidfd = -1, .out_fd = -1, .err_fd = -1};
		c->id = json_incref(id);
		json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
		if (json_is_string(tok) || json_is_integer(tok))
			c->progress_token = json_incref(tok);
		c->start_ms = now_ms();
		c->next_progress_ms = c->start_ms + MCP_PROGRESS_MS;
		c->next_ask_ms = c->start_ms + MCP_ASK_MS / 2;
		return c;
	}
	return NULL;
}

/* The call's own folder, for its policy, code and stdin. A root sandbox
 * resolves its binds as its own user, so the folders on the way to /src
 * must let others pass (0711), but not list: the random name keeps other
 * users of the host from finding a call's code and input. */
static int call_dir(mcp_server *s, mcp_call *c)
{
	snprintf(c->dir, sizeof(c->dir), "%s/call%u-XXXXXX", s->state, ++s->seq);
	if (!mkdtemp(c->dir) || chmod(c->dir, 0711) < 0) {
		int r = -errno;
		c->dir[0] = '\0';
		return r;
	}
	return 0;
}

static const mcp_session *session_find(const mcp_server *s, const char *key)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (strcmp(s->sessions[i].id, key) == 0 || (s->sessions[i].name[0] && strcmp(s->sessions[i].name, key) == 0))
			return &s->sessions[i];
	return NULL;
}

static void session_forget(mcp_server *s, const char *id)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (strcmp(s->sessions[i].id, id) == 0) {
			unlink(s->sessions[i].policy);
			s->sessions[i] = s->sessions[--s->n_sessions];
			return;
		}
}

/* ---- tools ---- */

static const char *str_arg(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

/* Starts the call's process, or answers with a tool error; returns 1 when
 * a process runs (the answer comes when it ends), 0 when answered. */
static int start_tool(mcp_server *s, mcp_call *c, const char *tool, const json_t *args)
{
	char msg[1024] = "";
	char pol[PATH_MAX + 16], res[PATH_MAX + 16], src[PATH_MAX + 16], in[PATH_MAX + 16], bind[2 * PATH_MAX];
	char timebuf[32];
	const char *stdin_path = NULL;
	char *argv[32];
	size_t n = 0;
	int r;
	argv[n++] = "moat";
	if (strcmp(tool, "run_code") == 0) {
		const char *file;
		const char *const *largv = moat_mcp_language_argv(str_arg(args, "language"), &file);
		if ((r = call_dir(s, c)) < 0)
			return send_tool_error(s, c->id, "cannot make the call's folder: %s", strerror(-r)), 0;
		snprintf(pol, sizeof(pol), "%s/policy.yaml", c->dir);
		snprintf(res, sizeof(res), "%s/result.json", c->dir);
		snprintf(src, sizeof(src), "%s/src", c->dir);
		if (write_call_policy(s, NULL, json_object_get(args, "limits"), false, pol, msg, sizeof(msg)) < 0)
			return send_tool_error(s, c->id, "%s", msg), 0;
		if (mkdir(src, 0755) < 0 || chmod(src, 0755) < 0)
			return send_tool_error(s, c->id, "cannot make the code's folder: %s", strerror(errno)), 0;
		const char *key;
		json_t *v;
		json_object_foreach(json_object_get(args, "files"), key, v) {
			/* One name in /src: no folder, no dot names, not the program. */
			if (!key[0] || strchr(key, '/') || key[0] == '.' || strlen(key) > 255 || strcmp(key, file) == 0)
				return send_tool_error(s, c->id,
						       "arguments.files: '%.64s' is not a plain file name (or is the program's)",
						       key), 0;
			char p[2 * PATH_MAX];
			snprintf(p, sizeof(p), "%s/%s", src, key);
			if ((r = write_file(p, json_string_value(v), json_string_length(v), 0644)) < 0)
				return send_tool_error(s, c->id, "cannot write arguments.files.%.64s: %s", key, strerror(-r)), 0;
		}
		char p[2 * PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", src, file);
		const json_t *code = json_object_get(args, "code");
		if ((r = write_file(p, json_string_value(code), json_string_length(code), 0644)) < 0)
			return send_tool_error(s, c->id, "cannot write the code: %s", strerror(-r)), 0;
		const json_t *sin = json_object_get(args, "stdin");
		if (sin) {
			snprintf(in, sizeof(in), "%s/stdin", c->dir);
			if ((r = write_file(in, json_string_value(sin), json_string_length(sin), 0644)) < 0)
				return send_tool_error(s, c->id, "cannot write the stdin: %s", strerror(-r)), 0;
		}
		snprintf(bind, sizeof(bind), "%s:/src", src);
		argv[n++] = "run";
		argv[n++] = "--policy";
		argv[n++] = pol;
		argv[n++] = "--result";
		argv[n++] = res;
		argv[n++] = "--ro";
		argv[n++] = bind;
		if (sin) {
			argv[n++] = "--stdin";
			argv[n++] = in;
		}
		argv[n++] = "--";
		for (size_t i = 0; largv[i]; i++)
			argv[n++] = (char *)largv[i];
	} else if (strcmp(tool, "session_create") == 0) {
		if (s->n_sessions >= MCP_MAX_SESSIONS)
			return send_tool_error(s, c->id, "this server holds %d sessions already: stop one first",
					       MCP_MAX_SESSIONS), 0;
		const char *name = str_arg(args, "name");
		if (name && !moat__session_name_valid(name))
			return send_tool_error(s, c->id, "arguments.name: '%s' is not a session name ([A-Za-z0-9][A-Za-z0-9._-]*)",
					       name), 0;
		const char *profile = str_arg(args, "profile");
		const json_t *pj = json_object_get(args, "policy");
		if (profile && pj)
			return send_tool_error(s, c->id, "arguments: profile and policy both given (expected one of them)"), 0;
		_cleanup_policy_ moat_policy *child = NULL;
		moat_error err = {0};
		if (profile && moat_policy_load_profile(profile, &child, &err) < 0)
			return send_tool_error(s, c->id, "arguments.profile: %s", err.msg), 0;
		if (pj) {
			_cleanup_free_ char *text = json_dumps(pj, JSON_COMPACT);
			if (!text || moat_policy_parse(text, strlen(text), "arguments.policy", s->state, NULL, &child, &err) < 0)
				return send_tool_error(s, c->id, "%s", text ? err.msg : "out of memory"), 0;
		}
		if ((r = call_dir(s, c)) < 0)
			return send_tool_error(s, c->id, "cannot make the call's folder: %s", strerror(-r)), 0;
		/* The policy file stays while the session does. */
		snprintf(pol, sizeof(pol), "%s/session%u.yaml", s->state, s->seq);
		if (write_call_policy(s, child, json_object_get(args, "limits"), true, pol, msg, sizeof(msg)) < 0)
			return send_tool_error(s, c->id, "%s", msg), 0;
		snprintf(c->path, sizeof(c->path), "%s", pol);
		snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
		argv[n++] = "session";
		argv[n++] = "create";
		argv[n++] = "--policy";
		argv[n++] = pol;
		argv[n++] = "--json";
		if (name) {
			argv[n++] = "--name";
			argv[n++] = (char *)name;
		}
	} else {
		/* The session tools: only sessions this server made. */
		const mcp_session *se = session_find(s, str_arg(args, "session"));
		if (!se)
			return send_tool_error(s, c->id, "arguments.session: no session '%.64s' made by this server",
					       str_arg(args, "session")), 0;
		snprintf(c->session, sizeof(c->session), "%s", se->id);
		argv[n++] = "session";
		if (strcmp(tool, "session_stop") == 0) {
			argv[n++] = "rm";
			argv[n++] = c->session;
		} else {
			argv[n++] = "exec";
			argv[n++] = c->session;
			argv[n++] = "--time";
			if (strcmp(tool, "session_exec") == 0) {
				const json_t *t = json_object_get(args, "timeout");
				snprintf(timebuf, sizeof(timebuf), "%llds",
					 t ? (long long)json_integer_value(t) : (long long)MCP_EXEC_DEFAULT_S);
				argv[n++] = timebuf;
				if (str_arg(args, "cwd")) {
					argv[n++] = "--cwd";
					argv[n++] = (char *)str_arg(args, "cwd");
				}
			} else
				argv[n++] = MCP_FILE_TIMEOUT;
			const json_t *sin = NULL;
			if (strcmp(tool, "session_exec") == 0)
				sin = json_object_get(args, "stdin");
			else if (strcmp(tool, "session_write_file") == 0)
				sin = json_object_get(args, "content");
			if (sin) {
				if ((r = call_dir(s, c)) < 0)
					return send_tool_error(s, c->id, "cannot make the call's folder: %s", strerror(-r)), 0;
				snprintf(in, sizeof(in), "%s/stdin", c->dir);
				if ((r = write_file(in, json_string_value(sin), json_string_length(sin), 0600)) < 0)
					return send_tool_error(s, c->id, "cannot write the input: %s", strerror(-r)), 0;
				stdin_path = in;
				c->bytes = json_string_length(sin);
				/* An exec's stdin is /dev/null unless asked for. */
				argv[n++] = "-i";
			}
			const char *path = str_arg(args, "path");
			snprintf(c->path, sizeof(c->path), "%s", path ? path : "/tmp");
			argv[n++] = "--";
			if (strcmp(tool, "session_exec") == 0) {
				argv[n++] = "sh";
				argv[n++] = "-c";
				argv[n++] = (char *)str_arg(args, "command");
			} else if (strcmp(tool, "session_read_file") == 0) {
				argv[n++] = "cat";
				argv[n++] = "--";
				argv[n++] = c->path;
			} else if (strcmp(tool, "session_write_file") == 0) {
				argv[n++] = "sh";
				argv[n++] = "-c";
				argv[n++] = "cat > \"$1\"";
				argv[n++] = "sh";
				argv[n++] = c->path;
			} else {
				argv[n++] = "find";
				argv[n++] = c->path;
				argv[n++] = "-mindepth";
				argv[n++] = "1";
				argv[n++] = "-maxdepth";
				argv[n++] = "1";
				argv[n++] = "-printf";
				argv[n++] = "%y %s %f\\n";
			}
		}
	}
	argv[n] = NULL;
	if ((r = spawn_call(s, c, argv, stdin_path)) < 0)
		return send_tool_error(s, c->id, "cannot start moat: %s", strerror(-r)), 0;
	return 1;
}

static json_t *text_or_empty(const outbuf *b)
{
	/* Output that is not UTF-8 is shown with its bad bytes replaced. */
	json_t *t = b->p ? json_stringn(b->p, b->len) : json_string("");
	if (t)
		return t;
	_cleanup_free_ char *copy = malloc(b->len + 1);
	if (!copy)
		return json_string("");
	for (size_t i = 0; i < b->len; i++)
		copy[i] = ((unsigned char)b->p[i] < 0x80) ? b->p[i] : '?';
	return json_stringn(copy, b->len);
}

/* The last line moat itself wrote to stderr ("moat: ..."), for a tool error. */
static const char *moat_said(const outbuf *b, char *buf, size_t size)
{
	const char *p = NULL;
	for (const char *q = b->p; q && (q = strstr(q, "moat: ")); q++)
		if (q == b->p || q[-1] == '\n')
			p = q;
	if (!p)
		return NULL;
	size_t n = strcspn(p + 6, "\n");
	snprintf(buf, size, "%.*s", (int)n, p + 6);
	return buf;
}

static json_t *run_structured(const char *status, int exit_code, const mcp_call *c, json_t *extra)
{
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:I}", "status", status, "exit_code",
			      exit_code >= 0 ? json_integer(exit_code) : json_null(), "stdout", text_or_empty(&c->out),
			      "stderr", text_or_empty(&c->err), "wall_ms", (json_int_t)(now_ms() - c->start_ms));
	if (o && extra)
		json_object_update(o, extra);
	json_decref(extra);
	if (o && (c->out.total > c->out.len || c->err.total > c->err.len))
		json_object_set_new(o, "output_truncated", json_true());
	return o;
}

static int finish_call(mcp_server *s, mcp_call *c, int wstatus)
{
	int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	char said[1024];
	if (c->cancelled)
		return 0;
	switch (c->kind) {
	case CALL_RUN_CODE: {
		char res[PATH_MAX + 16];
		snprintf(res, sizeof(res), "%s/result.json", c->dir);
		json_error_t jerr;
		json_t *rj = json_load_file(res, 0, &jerr);
		if (!rj) {
			json_t *o = run_structured("setup_error", -1, c, NULL);
			return send_msg(s, moat_jsonrpc_result(c->id, tool_result(o, moat_said(&c->err, said, sizeof(said)), true)));
		}
		const char *status = json_string_value(json_object_get(rj, "status"));
		json_t *ec = json_object_get(rj, "exit_code");
		/* enforced: what enforced each limit (a cgroup, or an rlimit
		 * where the host gives no cgroup), as moat run's result says. */
		json_t *extra = json_pack("{s:O?,s:O?,s:O?,s:O?}", "limit", json_object_get(rj, "limit"), "signal",
					  json_object_get(rj, "signal"), "memory_peak_bytes",
					  json_object_get(rj, "memory_peak_bytes"), "enforced", json_object_get(rj, "enforced"));
		json_t *o = run_structured(status ? status : "setup_error", json_is_integer(ec) ? (int)json_integer_value(ec) : -1,
					   c, extra);
		bool err = !status || strcmp(status, "setup_error") == 0;
		json_decref(rj);
		return send_msg(s, moat_jsonrpc_result(c->id, tool_result(o, err ? moat_said(&c->err, said, sizeof(said)) : NULL, err)));
	}
	case CALL_SESSION_EXEC: {
		const char *m = moat_said(&c->err, said, sizeof(said));
		bool timed_out = code != 0 && m && strstr(m, "passed; the command was killed");
		if (code == MOAT_EXIT_ERROR && m && !timed_out)
			return send_tool_error(s, c->id, "%s", m);
		json_t *extra = NULL;
		if (c->n_held) {
			/* what waited for a person while it ran */
			json_t *v = json_array();
			for (size_t k = 0; v && k < c->n_held; k++)
				json_array_append_new(v, json_pack("{s:s,s:s}", "id", c->held[k], "what", c->held_what[k]));
			extra = json_pack("{s:o}", "approvals", v);
		}
		json_t *o = run_structured(timed_out ? "timeout" : code >= 128 ? "signaled" : "exited",
					   timed_out || code >= 128 ? -1 : code, c, extra);
		return send_msg(s, moat_jsonrpc_result(c->id, tool_result(o, NULL, false)));
	}
	case CALL_SESSION_CREATE: {
		json_t *j = code == 0 && c->out.p ? json_loads(c->out.p, 0, NULL) : NULL;
		const char *id = json_string_value(json_object_get(j, "id"));
		if (!id || strlen(id) >= MOAT_KEEPER_ID_LEN) {
			json_decref(j);
			unlink(c->path);
			const char *m = moat_said(&c->err, said, sizeof(said));
			return send_tool_error(s, c->id, "session_create: %s", m ? m : "moat session create failed");
		}
		mcp_session *se = &s->sessions[s->n_sessions++];
		snprintf(se->id, sizeof(se->id), "%s", id);
		snprintf(se->name, sizeof(se->name), "%s", c->name);
		snprintf(se->policy, sizeof(se->policy), "%s", c->path);
		json_decref(j);
		json_t *o = json_pack("{s:s,s:s?}", "session", se->id, "name", se->name[0] ? se->name : NULL);
		return send_msg(s, moat_jsonrpc_result(c->id, tool_result(o, NULL, false)));
	}
	case CALL_SESSION_STOP:
		if (code != 0) {
			const char *m = moat_said(&c->err, said, sizeof(said));
			return send_tool_error(s, c->id, "session_stop: %s", m ? m : "moat session rm failed");
		}
		session_forget(s, c->session);
		return send_msg(s, moat_jsonrpc_result(c->id, tool_result(NULL, "stopped and removed", false)));
	default:
		break;
	}
	/* The file tools. */
	if (code != 0) {
		const char *m = moat_said(&c->err, said, sizeof(said));
		if (m)
			return send_tool_error(s, c->id, "%s", m);
		return send_tool_error(s, c->id, "%s: %.*s", c->path, (int)strcspn(c->err.p ? c->err.p : "", "\n"),
				       c->err.p ? c->err.p : "failed");
	}
	if (c->kind == CALL_SESSION_READ) {
		if (c->out.total > c->out.len)
			return send_tool_error(s, c->id, "%s: larger than %u bytes", c->path, MCP_MAX_OUTPUT);
		json_t *t = c->out.p ? json_stringn(c->out.p, c->out.len) : json_string("");
		if (!t)
			return send_tool_error(s, c->id, "%s: not UTF-8 text", c->path);
		json_t *r = json_pack("{s:[{s:s,s:o}],s:b}", "content", "type", "text", "text", t, "isError", false);
		return send_msg(s, moat_jsonrpc_result(c->id, r));
	}
	if (c->kind == CALL_SESSION_WRITE) {
		char text[MOAT_MCP_MAX_PATH + 64];
		snprintf(text, sizeof(text), "wrote %llu bytes to %s", (unsigned long long)c->bytes, c->path);
		return send_msg(s, moat_jsonrpc_result(c->id, tool_result(NULL, text, false)));
	}
	return send_msg(s, moat_jsonrpc_result(c->id, tool_result(NULL, c->out.p ? c->out.p : "", false)));
}

/* ---- requests ---- */

static const struct {
	const char *name;
	call_kind kind;
} tool_kinds[] = {
	{"run_code", CALL_RUN_CODE},
	{"session_create", CALL_SESSION_CREATE},
	{"session_exec", CALL_SESSION_EXEC},
	{"session_read_file", CALL_SESSION_READ},
	{"session_write_file", CALL_SESSION_WRITE},
	{"session_list_files", CALL_SESSION_LIST},
	{"session_stop", CALL_SESSION_STOP},
};

/* Answers a tools/call, or starts it: returns 1 when it runs on. */
static int tools_call(mcp_server *s, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	if (!name)
		return send_error(s, id, MOAT_JSONRPC_INVALID_PARAMS, "params.name: a tool name is required"), 0;
	const json_t *schema = moat_mcp_tool_schema(name);
	if (!schema)
		return send_error(s, id, MOAT_JSONRPC_INVALID_PARAMS, "params.name: no tool '%.64s'", name), 0;
	_cleanup_(json_decrefp) json_t *empty = NULL;
	if (!args)
		args = empty = json_object();
	/* The arguments meet the schema before anything runs; a violation is
	 * a tool error the model can read and correct (MCP 2025-11-25). */
	char msg[512];
	if (moat_mcp_schema_check(schema, args, "arguments", msg, sizeof(msg)) < 0)
		return send_tool_error(s, id, "%s", msg), 0;
	call_kind kind = CALL_RUN_CODE;
	for (size_t i = 0; i < ELEMENTSOF(tool_kinds); i++)
		if (strcmp(tool_kinds[i].name, name) == 0)
			kind = tool_kinds[i].kind;
	mcp_call *c = call_new(s, kind, id, params);
	if (!c)
		return send_error(s, id, MOAT_JSONRPC_INTERNAL_ERROR, "%d tool calls run already: retry later",
				  MCP_MAX_CALLS), 0;
	int r = start_tool(s, c, name, args);
	if (r <= 0)
		call_free(c);
	return r;
}

static mcp_call *call_by_id(mcp_server *s, const json_t *id)
{
	for (size_t i = 0; i < MCP_MAX_CALLS; i++)
		if (s->calls[i].used && moat_jsonrpc_id_equal(s->calls[i].id, id))
			return &s->calls[i];
	return NULL;
}

static void call_cancel(mcp_call *c, uint64_t now)
{
	if (c->cancelled)
		return;
	c->cancelled = true;
	/* moat run and moat session exec end their sandbox's command on
	 * SIGTERM; SIGKILL follows if they do not end. */
	kill(c->pid, SIGTERM);
	c->kill_at_ms = now + MCP_KILL_GRACE_MS;
}

/* Tells the client about the approvals c's session holds that it has not
 * been told of: an elicitation when it can show one (its answer decides
 * nothing), a progress notification when the call asked for progress,
 * and the tool result's "approvals" in the end. The keeper lists what its
 * session holds; a call of the session that runs now is what waits. */
static void check_held(mcp_server *s, mcp_call *c)
{
	char sock[PATH_MAX];
	moat_error err = {0};
	moat_keeper *k = NULL;
	if (moat_keeper_socket_path(c->session, sock, sizeof(sock), &err) < 0 || moat_keeper_connect(sock, &k, &err) < 0)
		return;
	json_t *req = json_pack("{s:s}", "op", "ls"), *ans = NULL;
	int r = req ? moat_keeper_approvals(k, req, &ans, &err) : -ENOMEM;
	json_decref(req);
	moat_keeper_close(k);
	if (r < 0)
		return;
	size_t i;
	json_t *it;
	json_array_foreach(json_object_get(ans, "approvals"), i, it) {
		const char *id = json_string_value(json_object_get(it, "id"));
		const char *what = json_string_value(json_object_get(it, "what"));
		if (!id || strcmp(json_string_value(json_object_get(it, "state")) ?: "", "pending") != 0)
			continue;
		bool known = false;
		for (size_t k2 = 0; k2 < c->n_held && !known; k2++)
			known = strcmp(c->held[k2], id) == 0;
		if (known || c->n_held >= MCP_MAX_HELD)
			continue;
		snprintf(c->held[c->n_held], sizeof(c->held[0]), "%s", id);
		snprintf(c->held_what[c->n_held], sizeof(c->held_what[0]), "%s", what ? what : "");
		c->n_held++;
		char msg[512];
		snprintf(msg, sizeof(msg),
			 "moat: the session's command waits for a person's approval: %s (approval %s). Decide on the "
			 "host with: moat approve %s, or moat deny %s",
			 what ? what : "?", id, id, id);
		logline("%s", msg + 6);
		/* A warning, unless the client set a level above it. */
		if (s->log_level <= moat_mcp_log_level("warning"))
			send_msg(s, moat_jsonrpc_notification("notifications/message",
							      json_pack("{s:s,s:s,s:s}", "level", "warning", "logger",
									"moat", "data", msg)));
		if (c->progress_token)
			send_msg(s, moat_jsonrpc_notification("notifications/progress",
							      json_pack("{s:O,s:I,s:s}", "progressToken", c->progress_token,
									"progress", (json_int_t)((now_ms() - c->start_ms) / 1000),
									"message", msg)));
		if (s->elicit) {
			char eid[48];
			snprintf(eid, sizeof(eid), "moat-elicit-%llu", (unsigned long long)++s->next_elicit);
			send_msg(s, json_pack("{s:s,s:s,s:s,s:{s:s,s:{s:s,s:{s:{s:s,s:s}}}}}", "jsonrpc", "2.0", "id", eid,
					      "method", "elicitation/create", "params", "message", msg, "requestedSchema",
					      "type", "object", "properties", "acknowledged", "type", "boolean",
					      "description", "Seen (this does not approve it)"));
		}
	}
	json_decref(ans);
}

static int on_request(mcp_server *s, moat_jsonrpc_msg *m)
{
	const char *method = m->method;
	if (strcmp(method, "initialize") == 0) {
		s->elicit = json_object_get(json_object_get(m->params, "capabilities"), "elicitation") != NULL;
		const char *want = json_string_value(json_object_get(m->params, "protocolVersion"));
		json_t *r = json_pack("{s:s,s:{s:{s:b},s:{}},s:{s:s,s:s,s:s},s:s}", "protocolVersion",
				      moat_mcp_negotiate_version(want), "capabilities", "tools", "listChanged", false,
				      "logging",
				      "serverInfo", "name", "moat", "title", "moat sandbox", "version", MOAT_VERSION,
				      "instructions",
				      "run_code runs a snippet in a fresh sandbox; session_* tools keep a sandbox for "
				      "several commands. Every run is bounded by the server's policy.");
		return send_msg(s, moat_jsonrpc_result(m->id, r));
	}
	if (strcmp(method, "ping") == 0)
		return send_msg(s, moat_jsonrpc_result(m->id, json_object()));
	if (strcmp(method, "tools/list") == 0)
		return send_msg(s, moat_jsonrpc_result(m->id, json_pack("{s:o}", "tools", moat_mcp_tools())));
	if (strcmp(method, "tools/call") == 0)
		return tools_call(s, m->id, m->params);
	if (strcmp(method, "logging/setLevel") == 0) {
		/* moat's own log lines go to stderr; what it tells the
		 * client (a held approval, a warning) is below this level
		 * not sent. */
		int level = moat_mcp_log_level(json_string_value(json_object_get(m->params, "level")));
		if (level < 0)
			return send_error(s, m->id, MOAT_JSONRPC_INVALID_PARAMS,
					  "params.level: must be one of debug, info, notice, warning, error, critical, "
					  "alert, emergency");
		s->log_level = level;
		return send_msg(s, moat_jsonrpc_result(m->id, json_object()));
	}
	return send_error(s, m->id, MOAT_JSONRPC_METHOD_NOT_FOUND, "method '%.64s' not found", method);
}

static int on_line(void *userdata, const char *line, size_t len)
{
	mcp_server *s = userdata;
	if (!line) {
		logline("dropped a message of %zu bytes: larger than %u", len, MOAT_JSONRPC_MAX_MESSAGE);
		return send_error(s, NULL, MOAT_JSONRPC_INVALID_REQUEST, "message larger than %u bytes", MOAT_JSONRPC_MAX_MESSAGE);
	}
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why = NULL;
	int code = moat_jsonrpc_decode(line, len, &m, &id, &why);
	if (code < 0) {
		logline("refused a message of %zu bytes: %s", len, why);
		int r = send_error(s, id, code, "%s", why);
		json_decref(id);
		return r;
	}
	json_decref(id);
	int r = 0;
	if (m.kind == MOAT_JSONRPC_NOTIFICATION) {
		if (strcmp(m.method, "notifications/cancelled") == 0) {
			mcp_call *c = call_by_id(s, json_object_get(m.params, "requestId"));
			if (c) {
				logline("cancelling a %s call", tool_kinds[c->kind].name);
				call_cancel(c, now_ms());
			}
		}
		/* Others (initialized, progress, roots changed) need nothing. */
	} else if (m.kind == MOAT_JSONRPC_RESPONSE) {
		/* moat's only requests are elicitations, whose answers decide
		 * nothing (only a person on the host decides: docs/approvals.md) */
		if (!json_is_string(m.id) || strncmp(json_string_value(m.id), "moat-elicit-", 12) != 0)
			logline("dropped a response to a request moat did not send");
	} else {
		int b = moat_jsonrpc_ids_begin(&s->ids, m.id);
		if (b == -EEXIST)
			r = send_error(s, m.id, MOAT_JSONRPC_INVALID_REQUEST, "request id already used in this session");
		else if (b < 0)
			r = send_error(s, m.id, MOAT_JSONRPC_INTERNAL_ERROR, "too many requests in flight");
		else {
			r = on_request(s, &m);
			/* Answered now unless a call runs on. */
			if (r != 1)
				moat_jsonrpc_ids_end(&s->ids, m.id);
			else
				r = 0;
		}
	}
	moat_jsonrpc_msg_clear(&m);
	return r;
}

/* ---- the loop ---- */

static int reap(mcp_server *s, mcp_call *c)
{
	int st = 0;
	pid_t p = waitpid(c->pid, &st, WNOHANG);
	if (p == 0)
		return 0;
	drain(&c->out_fd, &c->out);
	drain(&c->err_fd, &c->err);
	int r = finish_call(s, c, st);
	moat_jsonrpc_ids_end(&s->ids, c->id);
	call_free(c);
	return r < 0 ? r : 1;
}

static size_t live_calls(const mcp_server *s)
{
	size_t n = 0;
	for (size_t i = 0; i < MCP_MAX_CALLS; i++)
		n += s->calls[i].used;
	return n;
}

static void stop_sessions(mcp_server *s)
{
	for (size_t i = 0; i < s->n_sessions; i++) {
		char *argv[] = {"moat", "session", "rm", s->sessions[i].id, NULL};
		pid_t pid;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		if (posix_spawn(&pid, s->self, &fa, NULL, argv, environ) == 0)
			waitpid(pid, NULL, 0);
		posix_spawn_file_actions_destroy(&fa);
	}
	s->n_sessions = 0;
}

static int serve_loop(mcp_server *s, int sigfd)
{
	moat_jsonrpc_framer fr;
	moat_jsonrpc_framer_init(&fr, MOAT_JSONRPC_MAX_MESSAGE);
	_cleanup_free_ char *buf = malloc(65536);
	bool in_open = true;
	int rc = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (!in_open && live_calls(s) == 0)
			break;
		struct pollfd pf[2 + 3 * MCP_MAX_CALLS];
		mcp_call *owner[2 + 3 * MCP_MAX_CALLS];
		size_t n = 0;
		pf[n] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		owner[n++] = NULL;
		if (in_open) {
			pf[n] = (struct pollfd){.fd = 0, .events = POLLIN};
			owner[n++] = NULL;
		}
		uint64_t now = now_ms(), next = UINT64_MAX;
		for (size_t i = 0; i < MCP_MAX_CALLS; i++) {
			mcp_call *c = &s->calls[i];
			if (!c->used)
				continue;
			int fds[3] = {c->pidfd, c->out_fd, c->err_fd};
			for (int k = 0; k < 3; k++)
				if (fds[k] >= 0) {
					pf[n] = (struct pollfd){.fd = fds[k], .events = POLLIN};
					owner[n++] = c;
				}
			if (c->progress_token && !c->cancelled && c->next_progress_ms < next)
				next = c->next_progress_ms;
			if (c->kill_at_ms && c->kill_at_ms < next)
				next = c->kill_at_ms;
			if (c->session[0] && c->kind != CALL_SESSION_STOP && !c->cancelled && c->next_ask_ms < next)
				next = c->next_ask_ms;
		}
		int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)(next - now);
		int pr = poll(pf, n, timeout);
		if (pr < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		now = now_ms();
		for (size_t i = 0; pr > 0 && i < n; i++) {
			if (!pf[i].revents)
				continue;
			mcp_call *c = owner[i];
			if (pf[i].fd == sigfd && !c) {
				struct signalfd_siginfo si;
				if (read(sigfd, &si, sizeof(si)) == sizeof(si))
					logline("signal %u: ending", si.ssi_signo);
				in_open = false;
				for (size_t k = 0; k < MCP_MAX_CALLS; k++)
					if (s->calls[k].used)
						call_cancel(&s->calls[k], now);
			} else if (!c) {
				ssize_t got = read(0, buf, 65536);
				if (got < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				if (got <= 0) {
					/* The client closed: nobody reads answers any more. */
					in_open = false;
					for (size_t k = 0; k < MCP_MAX_CALLS; k++)
						if (s->calls[k].used)
							call_cancel(&s->calls[k], now);
					continue;
				}
				int r = moat_jsonrpc_framer_feed(&fr, buf, (size_t)got, on_line, s);
				if (r < 0) {
					logline("cannot answer: %s", strerror(-r));
					in_open = false;
					rc = r;
				}
			} else if (c->used && pf[i].fd == c->out_fd) {
				drain(&c->out_fd, &c->out);
			} else if (c->used && pf[i].fd == c->err_fd) {
				drain(&c->err_fd, &c->err);
			} else if (c->used && pf[i].fd == c->pidfd) {
				if (reap(s, c) < 0)
					in_open = false;
			}
		}
		for (size_t i = 0; i < MCP_MAX_CALLS; i++) {
			mcp_call *c = &s->calls[i];
			if (!c->used)
				continue;
			if (c->kill_at_ms && now >= c->kill_at_ms) {
				kill(c->pid, SIGKILL);
				c->kill_at_ms = 0;
			}
			if (c->session[0] && c->kind != CALL_SESSION_STOP && !c->cancelled && now >= c->next_ask_ms) {
				check_held(s, c);
				c->next_ask_ms = now_ms() + MCP_ASK_MS;
			}
			if (c->progress_token && !c->cancelled && now >= c->next_progress_ms) {
				uint64_t secs = (now - c->start_ms) / 1000;
				char m[64];
				snprintf(m, sizeof(m), "running for %llus", (unsigned long long)secs);
				send_msg(s, moat_jsonrpc_notification(
						    "notifications/progress",
						    json_pack("{s:O,s:I,s:s}", "progressToken", c->progress_token,
							      "progress", (json_int_t)secs, "message", m)));
				c->next_progress_ms = now + MCP_PROGRESS_MS;
			}
		}
	}
	moat_jsonrpc_framer_free(&fr);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: moat mcp serve [--profile NAME | --policy FILE] [--http ADDRESS:PORT [--token-file FILE]]\n"
		   "       moat mcp wrap [--profile NAME | --policy FILE] [--tools FILE] [--audit FILE]\n"
		   "                     [--name NAME] -- COMMAND [ARG...]\n"
		   "\n"
		   "serve: the sandbox as MCP tools on stdin/stdout (run_code, session_create,\n"
		   "       session_exec, session_read_file, session_write_file,\n"
		   "       session_list_files, session_stop). --policy (or --profile, default\n"
		   "       code) bounds what any call may ask for. --http serves the Streamable\n"
		   "       HTTP transport at /mcp instead, with a bearer token (--token-file, or\n"
		   "       one made up and printed).\n"
		   "wrap:  runs COMMAND, a stdio MCP server, in a sandbox (agent profile by\n"
		   "       default), relaying and checking its messages, enforcing the tool\n"
		   "       policy and logging every tools/call. See docs/mcp.md.\n");
}

static int cmd_serve(int argc, char **argv)
{
	const char *profile = NULL, *path = NULL, *http = NULL, *token_file = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return usage(stdout), 0;
		if (strcmp(argv[i], "--http") == 0 && i + 1 < argc) {
			http = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc) {
			token_file = argv[++i];
			continue;
		}
		if ((strcmp(argv[i], "--policy") == 0 || strcmp(argv[i], "--profile") == 0) && i + 1 < argc) {
			if (argv[i][2] == 'p' && argv[i][3] == 'o')
				path = argv[++i];
			else
				profile = argv[++i];
			continue;
		}
		return moat_cli_fail("mcp serve: unexpected '%s' (see 'moat mcp --help')", argv[i]);
	}
	if (profile && path)
		return moat_cli_fail("mcp serve: --profile and --policy both given (expected one of them)");
	if (token_file && !http)
		return moat_cli_fail("mcp serve: --token-file is for --http");
	if (http) {
		/* The sessions' processes are checked the same way; the
		 * policy is checked here first so that a bad one fails now. */
		_cleanup_policy_ moat_policy *check = NULL;
		moat_error cerr = {0};
		if (moat_policy_load_base(profile ? profile : path ? NULL : "code", path, &check, &cerr) < 0)
			return moat_cli_fail("mcp serve: %s", cerr.msg);
		char *args[3] = {NULL};
		if (path || profile) {
			args[0] = path ? "--policy" : "--profile";
			args[1] = (char *)(path ? path : profile);
		}
		return moat__cli_mcp_http(http, token_file, args);
	}
	static mcp_server srv;
	mcp_server *s = &srv;
	for (size_t i = 0; i < MCP_MAX_CALLS; i++)
		s->calls[i] = (mcp_call){.pidfd = -1, .out_fd = -1, .err_fd = -1};
	moat_error err = {0};
	if (moat_policy_load_base(profile ? profile : path ? NULL : "code", path, &s->policy, &err) < 0)
		return moat_cli_fail("mcp serve: %s", err.msg);
	ssize_t n = readlink("/proc/self/exe", s->self, sizeof(s->self) - 1);
	if (n <= 0)
		return moat_cli_fail("mcp serve: cannot find moat's own executable: %s", strerror(errno));
	s->self[n] = '\0';
	const char *tmp = getenv("TMPDIR");
	snprintf(s->state, sizeof(s->state), "%s/moat-mcp-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(s->state))
		return moat_cli_fail("mcp serve: cannot make a state folder: %s", strerror(errno));
	/* Passable, not listable (see call_dir). */
	chmod(s->state, 0711);
	/* The answers go to the fd 1 moat was given; what else would write
	 * there (a stray printf) goes to stderr instead. */
	s->out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (s->out_fd < 0 || dup2(2, 1) < 0)
		return moat_cli_fail("mcp serve: cannot set up stdout: %s", strerror(errno));
	moat_jsonrpc_ids_init(&s->ids);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	_cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	int r = sigfd < 0 ? -errno : serve_loop(s, sigfd);
	stop_sessions(s);
	rm_tree(s->state);
	moat_jsonrpc_ids_free(&s->ids);
	moat_policy_free(s->policy);
	if (r < 0 && r != -EPIPE)
		return moat_cli_fail("mcp serve: %s", strerror(-r));
	return 0;
}

int moat_cmd_mcp(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? MOAT_EXIT_ERROR : 0;
	}
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "wrap") == 0)
		return moat__cli_mcp_wrap(argc - 1, argv + 1);
	return moat_cli_fail("mcp: unknown subcommand '%s' (see 'moat mcp --help')", argv[1]);
}
