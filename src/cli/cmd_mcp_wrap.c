/* moat mcp wrap: a third-party stdio MCP server run inside a sandbox, with
 * the JSON-RPC between it and the client relayed and checked (docs/mcp.md).
 *
 * The server is `moat run` (the agent profile unless --profile/--policy
 * says otherwise) of COMMAND, its stdin and stdout pipes of this process;
 * its stderr is ours. Every message from either side is parsed before it
 * is passed on, re-encoded from what was parsed: a message that does not
 * parse, or passes the size cap, is refused and logged, never passed
 * through. tools/call requests meet the tool policy (mcpwrap.h): denied
 * and approve-gated calls are answered here with a tool error and never
 * reach the server; tools/list answers lose the denied tools. Every
 * tools/call is an event in the audit log (--audit). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "cli.h"
#include "jsonrpc.h"
#include "mcpwrap.h"
#include "policy.h"
#include "util.h"

extern char **environ;

/* Requests of the client awaiting the server's answer that the relay must
 * see answered (tools/list, tools/call). */
#define WRAP_MAX_PENDING 256
/* After the client has gone, the server gets this long to end by itself. */
#define WRAP_END_GRACE_MS 5000

typedef struct pending {
	json_t *id; /* NULL: free slot */
	bool is_call;
	char tool[MOAT_TOOL_NAME_MAX + 1];
	json_t *args; /* the audit summary */
	uint64_t start_ms;
} pending;

typedef struct wrap {
	moat_tool_policy *tools;
	moat_audit *audit;
	const char *server;
	int to_server;   /* the server's stdin, -1 once closed */
	int from_server; /* its stdout */
	int to_client;
	pending pend[WRAP_MAX_PENDING];
} wrap;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

_printf_(1, 2) static void logline(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "moat mcp wrap: %s\n", buf);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Sends msg (borrowed) as one line to fd. */
static int send_to(int fd, const json_t *msg)
{
	if (fd < 0 || !msg)
		return -EPIPE;
	size_t n;
	_cleanup_free_ char *line = moat_jsonrpc_encode_line(msg, &n);
	if (!line)
		return -ENOMEM;
	return write_all(fd, line, n);
}

static int client_send(wrap *w, json_t *msg)
{
	int r = send_to(w->to_client, msg);
	json_decref(msg);
	return r;
}

static void audit(wrap *w, const char *type, json_t *fields)
{
	if (!w->audit) {
		json_decref(fields);
		return;
	}
	moat_error err = {0};
	if (moat_audit_event(w->audit, type, fields, 0, &err) < 0)
		logline("audit log: %s", err.msg);
}

static void refused(wrap *w, const char *from, const char *why, size_t bytes)
{
	logline("refused a message of %zu bytes from the %s: %s", bytes, from, why);
	audit(w, "mcp.refused", json_pack("{s:s,s:s,s:s,s:I}", "server", w->server, "from", from, "why", why, "bytes",
					 (json_int_t)bytes));
}

static pending *pending_find(wrap *w, const json_t *id)
{
	for (size_t i = 0; i < WRAP_MAX_PENDING; i++)
		if (w->pend[i].id && moat_jsonrpc_id_equal(w->pend[i].id, id))
			return &w->pend[i];
	return NULL;
}

static pending *pending_add(wrap *w, json_t *id)
{
	if (pending_find(w, id))
		return NULL;
	for (size_t i = 0; i < WRAP_MAX_PENDING; i++)
		if (!w->pend[i].id) {
			w->pend[i] = (pending){.id = json_incref(id), .start_ms = now_ms()};
			return &w->pend[i];
		}
	return NULL;
}

static void pending_drop(pending *p)
{
	json_decref(p->id);
	json_decref(p->args);
	*p = (pending){0};
}

static void audit_call(wrap *w, const char *tool, json_t *args, moat_tool_decision d, uint64_t ms, size_t bytes,
		       bool is_error, const char *error)
{
	audit(w, "mcp.tool_call",
	      json_pack("{s:s,s:s,s:O?,s:s,s:I,s:I,s:b,s:s?}", "server", w->server, "tool", tool, "arguments", args,
			"decision", moat_tool_decision_to_string(d), "duration_ms", (json_int_t)ms, "result_bytes",
			(json_int_t)bytes, "is_error", is_error, "error", error));
}

static json_t *tool_error(const json_t *id, const char *text)
{
	return moat_jsonrpc_result((json_t *)id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
							    text, "isError", true));
}

static int on_client(void *userdata, const char *line, size_t len)
{
	wrap *w = userdata;
	if (!line) {
		refused(w, "client", "larger than the message cap", len);
		return client_send(w, moat_jsonrpc_error(NULL, MOAT_JSONRPC_INVALID_REQUEST, "message too large", NULL));
	}
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why = NULL;
	int code = moat_jsonrpc_decode(line, len, &m, &id, &why);
	if (code < 0) {
		refused(w, "client", why, len);
		int r = client_send(w, moat_jsonrpc_error(id, code, why, NULL));
		json_decref(id);
		return r;
	}
	json_decref(id);
	int r = 0;
	if (m.kind == MOAT_JSONRPC_REQUEST && strcmp(m.method, "tools/call") == 0) {
		const char *tool = json_string_value(json_object_get(m.params, "name"));
		json_t *args = moat_mcp_audit_args(json_object_get(m.params, "arguments"));
		if (!tool || strlen(tool) > MOAT_TOOL_NAME_MAX) {
			r = client_send(w, moat_jsonrpc_error(m.id, MOAT_JSONRPC_INVALID_PARAMS,
							      "params.name: a tool name (1 to 128 characters) is required", NULL));
			json_decref(args);
			goto done;
		}
		moat_tool_decision d = moat_tool_policy_decide(w->tools, tool);
		if (d != MOAT_TOOL_ALLOW) {
			char text[512];
			if (d == MOAT_TOOL_DENY)
				snprintf(text, sizeof(text), "moat: tool '%s' is denied by the tool policy", tool);
			else
				snprintf(text, sizeof(text),
					 "moat: tool '%s' needs a person's approval, which is not available: the call is "
					 "refused",
					 tool);
			logline("%s", text + 6);
			audit_call(w, tool, args, d, 0, 0, true, text + 6);
			json_decref(args);
			r = client_send(w, tool_error(m.id, text));
			goto done;
		}
		pending *p = pending_add(w, m.id);
		if (!p) {
			json_decref(args);
			r = client_send(w, moat_jsonrpc_error(m.id, MOAT_JSONRPC_INVALID_REQUEST,
							      "request id in flight already, or too many in flight", NULL));
			goto done;
		}
		p->is_call = true;
		snprintf(p->tool, sizeof(p->tool), "%s", tool);
		p->args = args;
	} else if (m.kind == MOAT_JSONRPC_REQUEST && strcmp(m.method, "tools/list") == 0) {
		if (!pending_add(w, m.id)) {
			r = client_send(w, moat_jsonrpc_error(m.id, MOAT_JSONRPC_INVALID_REQUEST,
							      "request id in flight already, or too many in flight", NULL));
			goto done;
		}
	}
	if (send_to(w->to_server, m.msg) < 0 && m.kind == MOAT_JSONRPC_REQUEST) {
		pending *p = pending_find(w, m.id);
		if (p)
			pending_drop(p);
		r = client_send(w, moat_jsonrpc_error(m.id, MOAT_JSONRPC_INTERNAL_ERROR, "the wrapped server is gone", NULL));
	}
done:
	moat_jsonrpc_msg_clear(&m);
	return r;
}

static int on_server(void *userdata, const char *line, size_t len)
{
	wrap *w = userdata;
	if (!line) {
		refused(w, "server", "larger than the message cap", len);
		return 0;
	}
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why = NULL;
	int code = moat_jsonrpc_decode(line, len, &m, &id, &why);
	if (code < 0) {
		refused(w, "server", why, len);
		/* The client's request it answered (if its id can be read)
		 * gets an error instead of nothing. */
		if (!id)
			id = moat_jsonrpc_salvage_id(line, len);
		pending *p = id ? pending_find(w, id) : NULL;
		int r = 0;
		if (p) {
			if (p->is_call)
				audit_call(w, p->tool, p->args, MOAT_TOOL_ALLOW, now_ms() - p->start_ms, len, true, why);
			pending_drop(p);
			r = client_send(w, moat_jsonrpc_error(id, MOAT_JSONRPC_INTERNAL_ERROR,
							      "the wrapped server sent a malformed answer", NULL));
		}
		json_decref(id);
		return r;
	}
	json_decref(id);
	if (m.kind == MOAT_JSONRPC_RESPONSE) {
		pending *p = pending_find(w, m.id);
		if (p && p->is_call) {
			json_t *res = json_object_get(m.msg, "result");
			json_t *err = json_object_get(m.msg, "error");
			audit_call(w, p->tool, p->args, MOAT_TOOL_ALLOW, now_ms() - p->start_ms, len,
				   err || json_is_true(json_object_get(res, "isError")),
				   err ? json_string_value(json_object_get(err, "message")) : NULL);
		} else if (p) {
			size_t n = moat_tool_policy_filter_list(w->tools, json_object_get(m.msg, "result"));
			if (n)
				logline("tools/list: %zu denied tools hidden", n);
		}
		if (p)
			pending_drop(p);
	}
	int r = send_to(w->to_client, m.msg);
	moat_jsonrpc_msg_clear(&m);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: moat mcp wrap [--profile NAME | --policy FILE] [--tools FILE] [--audit FILE]\n"
		   "                     [--name NAME] -- COMMAND [ARG...]\n"
		   "\n"
		   "Runs COMMAND, a stdio MCP server, in a sandbox (the agent profile unless told\n"
		   "otherwise) and relays its JSON-RPC with the client on stdin/stdout, enforcing\n"
		   "the tool policy (--tools: tools.default/deny/approve/allow) and writing every\n"
		   "tools/call to the audit log. See docs/mcp.md.\n");
}

static int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	_cleanup_free_ char *buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	size_t n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		return -EIO;
	if (n > max)
		return -EFBIG;
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = n;
	return 0;
}

int moat__cli_mcp_wrap(int argc, char **argv)
{
	const char *profile = NULL, *policy = NULL, *tools_path = NULL, *audit_path = NULL, *name = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return usage(stdout), 0;
		const char **slot = strcmp(argv[i], "--profile") == 0  ? &profile
				    : strcmp(argv[i], "--policy") == 0 ? &policy
				    : strcmp(argv[i], "--tools") == 0  ? &tools_path
				    : strcmp(argv[i], "--audit") == 0  ? &audit_path
				    : strcmp(argv[i], "--name") == 0   ? &name
								       : NULL;
		if (!slot)
			return moat_cli_fail("mcp wrap: unexpected '%s' (see 'moat mcp wrap --help')", argv[i]);
		if (i + 1 >= argc)
			return moat_cli_fail("mcp wrap: %s needs a value", argv[i]);
		*slot = argv[++i];
	}
	if (i >= argc)
		return moat_cli_fail("mcp wrap: no server command (moat mcp wrap [OPTIONS] -- COMMAND [ARG...])");
	if (profile && policy)
		return moat_cli_fail("mcp wrap: --profile and --policy both given (expected one of them)");
	char **cmd = argv + i;
	static wrap w;
	w.to_server = w.from_server = -1;
	w.server = name ? name : cmd[0];
	moat_error err = {0};
	if (tools_path) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int r = read_small_file(tools_path, MOAT_TOOL_POLICY_MAX_BYTES, &buf, &len);
		if (r < 0)
			return moat_cli_fail("mcp wrap: --tools %s: %s", tools_path,
					     r == -EFBIG ? "larger than 64 KiB" : strerror(-r));
		if (moat_tool_policy_parse(buf, len, tools_path, &w.tools, &err) < 0)
			return moat_cli_fail("mcp wrap: %s", err.msg);
	} else if (!(w.tools = moat_tool_policy_allow_all()))
		return moat_cli_fail("mcp wrap: out of memory");
	/* The policy is loaded here too, to check it before anything starts
	 * and to know the secrets the audit log must not hold. */
	_cleanup_policy_ moat_policy *pol = NULL;
	if (moat_policy_load_base(policy ? NULL : profile ? profile : "agent", policy, &pol, &err) < 0)
		return moat_cli_fail("mcp wrap: %s", err.msg);
	if (audit_path) {
		if (moat_audit_open(audit_path, NULL, &w.audit, &err) < 0)
			return moat_cli_fail("mcp wrap: --audit %s: %s", audit_path, err.msg);
		for (size_t k = 0; k < pol->n_secrets; k++) {
			const char *from = pol->secrets[k].from;
			const char *v = from && strncmp(from, "env:", 4) == 0 ? getenv(from + 4) : NULL;
			if (v && v[0] && moat_audit_add_secret(w.audit, pol->secrets[k].name, v, &err) < 0)
				return moat_cli_fail("mcp wrap: %s", err.msg);
		}
	}
	char self[PATH_MAX];
	ssize_t sn = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sn <= 0)
		return moat_cli_fail("mcp wrap: cannot find moat's own executable: %s", strerror(errno));
	self[sn] = '\0';

	size_t nc = 0;
	while (cmd[nc])
		nc++;
	_cleanup_free_ char **rargv = calloc(nc + 6, sizeof(char *));
	if (!rargv)
		return moat_cli_fail("mcp wrap: out of memory");
	size_t n = 0;
	rargv[n++] = "moat";
	rargv[n++] = "run";
	rargv[n++] = policy ? "--policy" : "--profile";
	rargv[n++] = (char *)(policy ? policy : profile ? profile : "agent");
	rargv[n++] = "--";
	for (size_t k = 0; k < nc; k++)
		rargv[n++] = cmd[k];
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return moat_cli_fail("mcp wrap: pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	pid_t pid;
	int r = posix_spawn(&pid, self, &fa, NULL, rargv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (r != 0)
		return moat_cli_fail("mcp wrap: cannot start moat run: %s", strerror(r));
	w.to_server = in[1];
	w.from_server = out[0];
	w.to_client = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (w.to_client < 0 || dup2(2, 1) < 0)
		return moat_cli_fail("mcp wrap: cannot set up stdout: %s", strerror(errno));
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	_cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (pidfd < 0 || sigfd < 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return moat_cli_fail("mcp wrap: %s", strerror(errno));
	}
	audit(&w, "mcp.server.start", json_pack("{s:s,s:s,s:I}", "server", w.server, "policy",
					       policy ? policy : profile ? profile : "agent", "pid", (json_int_t)pid));

	moat_jsonrpc_framer fc, fs;
	moat_jsonrpc_framer_init(&fc, MOAT_JSONRPC_MAX_MESSAGE);
	moat_jsonrpc_framer_init(&fs, MOAT_JSONRPC_MAX_MESSAGE);
	_cleanup_free_ char *buf = malloc(65536);
	bool client_open = true;
	uint64_t term_at = 0;
	int status = 0;
	while (buf) {
		struct pollfd pf[4] = {
			{.fd = client_open ? 0 : -1, .events = POLLIN},
			{.fd = w.from_server, .events = POLLIN},
			{.fd = sigfd, .events = POLLIN},
			{.fd = w.from_server < 0 ? pidfd : -1, .events = POLLIN},
		};
		int timeout = -1;
		if (term_at) {
			uint64_t now = now_ms();
			timeout = now >= term_at ? 0 : (int)(term_at - now);
		}
		if (poll(pf, 4, timeout) < 0 && errno != EINTR)
			break;
		if (term_at && now_ms() >= term_at) {
			kill(pid, SIGTERM);
			term_at = 0;
		}
		if (pf[2].revents) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof(si)) == sizeof(si))
				kill(pid, SIGTERM);
		}
		if (pf[0].revents) {
			ssize_t got = read(0, buf, 65536);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				/* The client is gone: so is the server's input. */
				client_open = false;
				if (w.to_server >= 0)
					close(w.to_server);
				w.to_server = -1;
				term_at = now_ms() + WRAP_END_GRACE_MS;
			} else if (moat_jsonrpc_framer_feed(&fc, buf, (size_t)got, on_client, &w) == -ENOMEM)
				logline("out of memory");
		}
		if (pf[1].revents) {
			ssize_t got = read(w.from_server, buf, 65536);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(w.from_server);
				w.from_server = -1;
			} else if (moat_jsonrpc_framer_feed(&fs, buf, (size_t)got, on_server, &w) == -ENOMEM)
				logline("out of memory");
		}
		if (pf[3].revents) {
			waitpid(pid, &status, 0);
			break;
		}
	}
	/* Requests the server never answered get an error, not silence. */
	for (size_t k = 0; k < WRAP_MAX_PENDING; k++) {
		pending *p = &w.pend[k];
		if (!p->id)
			continue;
		if (p->is_call)
			audit_call(&w, p->tool, p->args, MOAT_TOOL_ALLOW, now_ms() - p->start_ms, 0, true,
				   "the server ended before answering");
		client_send(&w, moat_jsonrpc_error(p->id, MOAT_JSONRPC_INTERNAL_ERROR, "the wrapped server ended", NULL));
		pending_drop(p);
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	audit(&w, "mcp.server.end", json_pack("{s:s,s:i}", "server", w.server, "exit_status", code));
	moat_jsonrpc_framer_free(&fc);
	moat_jsonrpc_framer_free(&fs);
	if (w.to_server >= 0)
		close(w.to_server);
	moat_audit_close(w.audit);
	moat_tool_policy_free(w.tools);
	return code;
}
