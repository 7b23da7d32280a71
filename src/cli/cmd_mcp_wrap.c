/* moat mcp wrap: a third-party stdio MCP server run inside a sandbox, with
 * the JSON-RPC between it and the client relayed and checked (docs/mcp.md).
 *
 * The server is `moat run --direct-stdout` (the agent profile unless
 * --profile/--policy says otherwise) of COMMAND, its stdin and stdout pipes
 * of this process: its stdout reaches the relay without passing through
 * moat run, so the relay counts it, caps it (limits.output between two
 * messages of the client) and redacts the policy's secrets from what it
 * passes on itself. Its stderr is moat run's, captured there. Every
 * message from either side is parsed before it is passed on, re-encoded
 * from what was parsed: a message that does not parse, or passes the size
 * cap, is refused and logged, never passed through. tools/call requests
 * meet the tool policy (mcpwrap.h): denied calls are answered here with a
 * tool error and never reach the server; approve-gated calls are held
 * until a person decides (below);
 * tools/list answers lose the denied tools. Every tools/call is an event
 * in the audit log (--audit). */
#include <errno.h>
#include <inttypes.h>
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

#include "approvals.h"
#include "audit.h"
#include "cli.h"
#include "jsonrpc.h"
#include "keeper-proto.h"
#include "keeper.h"
#include "mcpwrap.h"
#include "policy.h"
#include "redact.h"
#include "secrets.h"
#include "util.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>

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
	/* an approve-gated call a person (or a lease) let through */
	char approval[MOAT_APPROVAL_ID_LEN];
	char approved[MOAT_APPROVAL_ID_LEN + 8];
} pending;

/* An approve-gated call waiting for a person (docs/approvals.md): held
 * here, never sent to the server until allowed. */
#define WRAP_MAX_HELD 64
/* Connections to the control socket at once (only its owner or root). */
#define WRAP_MAX_CONNS 8

typedef struct held {
	json_t *msg; /* the client's request, sent on when allowed; NULL: free */
	json_t *id;
	uint64_t ticket;
	char approval[MOAT_APPROVAL_ID_LEN];
	char tool[MOAT_TOOL_NAME_MAX + 1];
	json_t *args;
	uint64_t start_ms;
} held;

typedef struct ctl_conn {
	int fd; /* -1: free */
	uid_t uid;
	bool hello;
} ctl_conn;

typedef struct wrap {
	moat_tool_policy *tools;
	moat_audit *audit;
	const char *server;
	int to_server;   /* the server's stdin, -1 once closed */
	int from_server; /* its stdout */
	int to_client;
	pending pend[WRAP_MAX_PENDING];
	/* approvals: the queue, its control socket (a keeper's folder, so
	 * that `moat approvals ls` finds it) and the eventfd its decisions
	 * wake */
	moat_approvals *ap;
	moat_keeper_rundir dir;
	int listen_fd, wake_fd;
	ctl_conn conns[WRAP_MAX_CONNS];
	held held[WRAP_MAX_HELD];
	uint64_t next_ticket;
	/* the client declared the elicitation capability */
	bool elicit;
	uint64_t next_elicit;
	/* The policy's secret values, redacted from every message of the
	 * server before it goes on (or NULL: none). */
	moat_redactor *red;
	/* The server's stdout: in all, since the client's last message, and
	 * the cap on the latter (limits.output; UINT64_MAX: none). */
	uint64_t out_total, out_since_client, out_cap;
	bool out_limit;
} wrap;

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
	fprintf(stderr, "moat mcp wrap: %s\n", buf);
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
	return moat__write_all(fd, line, n);
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

static void audit_call_approval(wrap *w, const char *tool, json_t *args, moat_tool_decision d, uint64_t ms,
				size_t bytes, bool is_error, const char *error, const char *approval, const char *approved)
{
	json_t *o = json_pack("{s:s,s:s,s:O?,s:s,s:I,s:I,s:b,s:s?}", "server", w->server, "tool", tool, "arguments",
			      args, "decision", moat_tool_decision_to_string(d), "duration_ms", (json_int_t)ms,
			      "result_bytes", (json_int_t)bytes, "is_error", is_error, "error", error);
	/* an approve-gated call: the approval and what a person decided
	 * (allow, deny, timed_out, withdrawn, or the lease that let it by) */
	if (o && approval && approval[0])
		json_object_set_new(o, "approval", json_string(approval));
	if (o && approved)
		json_object_set_new(o, "approved", json_string(approved));
	audit(w, "mcp.tool_call", o);
}

static void audit_call(wrap *w, const char *tool, json_t *args, moat_tool_decision d, uint64_t ms, size_t bytes,
		       bool is_error, const char *error)
{
	audit_call_approval(w, tool, args, d, ms, bytes, is_error, error, NULL, NULL);
}

static json_t *tool_error(const json_t *id, const char *text)
{
	return moat_jsonrpc_result((json_t *)id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
							    text, "isError", true));
}

/* ---- approve-gated calls (docs/approvals.md) ----
 *
 * A call the tool policy gates is held in this relay's own approval queue
 * (approvals.h, the keepers' code), never sent to the server until a
 * person allows it. The queue is reachable only through a control socket
 * in a keeper's runtime folder (0700, this user's), which speaks the
 * keeper protocol's hello and approvals messages to peers of this uid or
 * root (SO_PEERCRED): `moat approvals ls`, `moat approve`, `moat deny`
 * find it like a session's keeper. The server runs in the sandbox, whose
 * root has none of the host's runtime folders and inherits no descriptor
 * of ours but its stdin and stdout pipes. */

static held *held_find(wrap *w, const json_t *id)
{
	for (size_t i = 0; i < WRAP_MAX_HELD; i++)
		if (w->held[i].msg && moat_jsonrpc_id_equal(w->held[i].id, id))
			return &w->held[i];
	return NULL;
}

static void held_drop(held *h)
{
	json_decref(h->msg);
	json_decref(h->id);
	json_decref(h->args);
	*h = (held){0};
}

/* The MCP client was told (elicitation/create, when it declared the
 * capability) what waits and how a person decides. Its answer decides
 * nothing: the client speaks for the agent, and only the owner or root,
 * through the control socket, may decide (docs/approvals.md). */
static void elicit(wrap *w, const held *h, const char *what)
{
	char msg[1024], eid[48];
	snprintf(msg, sizeof(msg),
		 "moat: the call of tool '%s' on server '%s' waits for a person's approval (%s). Decide on the host "
		 "with: moat approve %s, or moat deny %s",
		 h->tool, w->server, what, h->approval, h->approval);
	/* A call that asked for progress hears that it waits, and why. */
	json_t *token = json_object_get(json_object_get(json_object_get(h->msg, "params"), "_meta"), "progressToken");
	if (token) {
		json_t *n = json_pack("{s:s,s:s,s:{s:O,s:i,s:s}}", "jsonrpc", "2.0", "method", "notifications/progress",
				      "params", "progressToken", token, "progress", 0, "message", msg);
		if (n && send_to(w->to_client, n) < 0)
			logline("cannot tell the client that %s waits", h->approval);
		json_decref(n);
	}
	if (!w->elicit)
		return;
	snprintf(eid, sizeof(eid), "moat-elicit-%" PRIu64, ++w->next_elicit);
	json_t *req = json_pack("{s:s,s:s,s:s,s:{s:s,s:{s:s,s:{s:{s:s,s:s}}}}}", "jsonrpc", "2.0", "id", eid, "method",
				"elicitation/create", "params", "message", msg, "requestedSchema", "type", "object",
				"properties", "acknowledged", "type", "boolean", "description",
				"Seen (this does not approve the call)");
	if (!req)
		return;
	if (send_to(w->to_client, req) < 0)
		logline("cannot send the elicitation for %s", h->approval);
	json_decref(req);
}

/* Sends an allowed call on to the server, its audit to come with its
 * answer. */
static int held_forward(wrap *w, held *h, const char *approved)
{
	pending *p = pending_add(w, h->id);
	int r = 0;
	if (!p) {
		r = client_send(w, moat_jsonrpc_error(h->id, MOAT_JSONRPC_INVALID_REQUEST,
						      "request id in flight already, or too many in flight", NULL));
		audit_call_approval(w, h->tool, h->args, MOAT_TOOL_APPROVE, now_ms() - h->start_ms, 0, true,
				    "too many requests in flight", h->approval, approved);
		held_drop(h);
		return r;
	}
	p->is_call = true;
	snprintf(p->tool, sizeof(p->tool), "%s", h->tool);
	p->args = TAKE_PTR(h->args);
	p->start_ms = h->start_ms;
	snprintf(p->approval, sizeof(p->approval), "%s", h->approval);
	snprintf(p->approved, sizeof(p->approved), "%s", approved);
	if (send_to(w->to_server, h->msg) < 0) {
		audit_call_approval(w, p->tool, p->args, MOAT_TOOL_APPROVE, now_ms() - p->start_ms, 0, true,
				    "the wrapped server is gone", p->approval, approved);
		pending_drop(p);
		r = client_send(w, moat_jsonrpc_error(h->id, MOAT_JSONRPC_INTERNAL_ERROR, "the wrapped server is gone", NULL));
	}
	held_drop(h);
	return r;
}

/* Holds the approve-gated call m (its audit summary args, taken). */
static int hold(wrap *w, const moat_jsonrpc_msg *m, const char *tool, json_t *args)
{
	char text[MOAT_APPROVAL_NOTE_MAX + 256];
	held *h = NULL;
	for (size_t i = 0; i < WRAP_MAX_HELD && !h; i++)
		if (!w->held[i].msg)
			h = &w->held[i];
	if (!w->ap || !h || held_find(w, m->id) || pending_find(w, m->id)) {
		snprintf(text, sizeof(text), "moat: tool '%s' needs a person's approval: %s", tool,
			 !w->ap ? "this relay has no approval queue" : h ? "request id in flight already"
									    : "too many calls wait already");
		audit_call(w, tool, args, MOAT_TOOL_APPROVE, 0, 0, true, text + 6);
		json_decref(args);
		return client_send(w, tool_error(m->id, text));
	}
	_cleanup_free_ char *aj = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
	moat_ask ask;
	moat_error err = {0};
	moat_approvals_outcome out = {0};
	uint64_t ticket = ++w->next_ticket;
	if (moat__approval_ask_tool(&ask, w->server, tool, aj, &err) < 0 ||
	    moat_approvals_ask(w->ap, &ask, ticket, &out, &err) < 0) {
		snprintf(text, sizeof(text), "moat: tool '%s' needs a person's approval, and cannot wait for it: %s",
			 tool, err.msg);
		audit_call(w, tool, args, MOAT_TOOL_APPROVE, 0, 0, true, text + 6);
		json_decref(args);
		return client_send(w, tool_error(m->id, text));
	}
	*h = (held){.msg = json_incref(m->msg), .id = json_incref(m->id), .ticket = ticket, .args = args,
		    .start_ms = now_ms()};
	snprintf(h->tool, sizeof(h->tool), "%s", tool);
	if (out.state == MOAT_APPROVAL_ALLOWED) {
		char by[MOAT_APPROVAL_ID_LEN + 8];
		snprintf(by, sizeof(by), "lease %s", out.lease);
		return held_forward(w, h, by);
	}
	snprintf(h->approval, sizeof(h->approval), "%s", out.id);
	char what[1024];
	moat__approval_ask_format(&ask, what, sizeof(what));
	logline("tool '%s' waits for a person's approval: moat approve %s (or moat deny %s)", tool, out.id, out.id);
	elicit(w, h, what);
	return 0;
}

/* Collects the decisions made: allowed calls go on, the others get a tool
 * error saying why. */
static void held_poll(wrap *w)
{
	for (size_t i = 0; i < WRAP_MAX_HELD; i++) {
		held *h = &w->held[i];
		if (!h->msg)
			continue;
		moat_approvals_outcome out = {0};
		moat_approvals_poll(w->ap, h->ticket, &out);
		if (out.state == MOAT_APPROVAL_PENDING)
			continue;
		if (out.state == MOAT_APPROVAL_ALLOWED) {
			char by[MOAT_APPROVAL_ID_LEN + 8];
			snprintf(by, sizeof(by), out.lease[0] ? "lease %s" : "once", out.lease);
			held_forward(w, h, by);
			continue;
		}
		char text[MOAT_APPROVAL_NOTE_MAX + 256];
		const char *approved = "deny";
		if (out.state == MOAT_APPROVAL_TIMED_OUT) {
			approved = "timed_out";
			snprintf(text, sizeof(text),
				 "moat: approval timed out: no one decided on the call of tool '%s' within %" PRIu64
				 " ms (approval %s)",
				 h->tool, out.timeout_ms, h->approval);
		} else if (out.ended) {
			approved = "ended";
			snprintf(text, sizeof(text), "moat: the call of tool '%s' was not decided: %s (approval %s)", h->tool,
				 out.reason[0] ? out.reason : "the relay is ending", h->approval);
		} else
			snprintf(text, sizeof(text), "moat: denied by a reviewer: %s (approval %s)",
				 out.reason[0] ? out.reason : "no reason given", h->approval);
		logline("%s", text + 6);
		audit_call_approval(w, h->tool, h->args, MOAT_TOOL_APPROVE, now_ms() - h->start_ms, 0, true, text + 6,
				    h->approval, approved);
		client_send(w, tool_error(h->id, text));
		held_drop(h);
	}
}

static void wake_cb(void *ud)
{
	uint64_t one = 1;
	ssize_t r = write(*(int *)ud, &one, sizeof(one));
	(void)r;
}

static void ctl_close(ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	*c = (ctl_conn){.fd = -1};
}

static void ctl_error(ctl_conn *c, uint64_t tag, int code, const char *msg)
{
	moat_keeper_msg a;
	moat_keeper_msg_init(&a, MOAT_KEEPER_ERROR);
	a.tag = tag;
	a.error_errno = code > 0 && code < 4096 ? code : EIO;
	a.message = (char *)msg;
	moat_error err = {0};
	if (moat__keeper_send(c->fd, &a, NULL, 0, &err) < 0)
		ctl_close(c);
}

/* One message on a control connection: hello and approvals, as a keeper
 * answers them; anything else is not for this relay. */
static void ctl_read(wrap *w, ctl_conn *c)
{
	moat_keeper_msg m;
	/* decoding fills in what the message holds, nothing else */
	moat_keeper_msg_init(&m, _MOAT_KEEPER_MSG_INVALID);
	moat_error err = {0};
	int fds[8];
	size_t n_fds = 0;
	int r = moat__keeper_recv(c->fd, &m, fds, 8, &n_fds, &err);
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	if (r < 0) {
		if (r == -EPIPE || r == -ECONNRESET)
			ctl_close(c);
		else if (r != -EAGAIN)
			/* a message that does not decode: said why, the
			 * connection kept */
			ctl_error(c, 0, err.code, err.msg);
		moat_keeper_msg_done(&m);
		return;
	}
	moat_keeper_msg a;
	if (!c->hello && m.type != MOAT_KEEPER_HELLO)
		ctl_error(c, m.tag, EPROTO, "hello comes first");
	else if (m.type == MOAT_KEEPER_HELLO) {
		unsigned v = moat__keeper_pick_version(m.versions, m.n_versions);
		if (!v || c->hello) {
			ctl_error(c, 0, EPROTO, "hello: no version in common, or not the first message");
			ctl_close(c);
		} else {
			moat_keeper_msg_init(&a, MOAT_KEEPER_HELLO);
			a.version = v;
			snprintf(a.sandbox, sizeof(a.sandbox), "%s", w->dir.id);
			a.pid = getpid();
			c->hello = true;
			if (moat__keeper_send(c->fd, &a, NULL, 0, &err) < 0)
				ctl_close(c);
		}
	} else if (m.type == MOAT_KEEPER_APPROVALS) {
		json_t *body = NULL;
		if (moat_approvals_request(w->ap, c->uid, m.body, &body, &err) < 0)
			ctl_error(c, m.tag, err.code, err.msg);
		else {
			moat_keeper_msg_init(&a, MOAT_KEEPER_APPROVALS);
			a.tag = m.tag;
			a.body = body;
			if (moat__keeper_send(c->fd, &a, NULL, 0, &err) < 0)
				ctl_close(c);
			moat_keeper_msg_done(&a);
		}
	} else {
		char msg[128];
		snprintf(msg, sizeof(msg), "unknown message type '%s': this is an MCP relay's approval queue, no sandbox",
			 moat_keeper_msg_type_to_string(m.type));
		ctl_error(c, m.tag, EINVAL, msg);
	}
	moat_keeper_msg_done(&m);
}

static void ctl_accept(wrap *w)
{
	int fd = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* The folder is ours alone; the peer is checked again, by the
	 * kernel's word. */
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr) ||
	    (cr.uid != geteuid() && cr.uid != 0)) {
		if (len == sizeof(cr))
			audit(w, "keeper.refused", json_pack("{s:i,s:i}", "uid", (int)cr.uid, "pid", (int)cr.pid));
		close(fd);
		return;
	}
	for (size_t i = 0; i < WRAP_MAX_CONNS; i++)
		if (w->conns[i].fd < 0) {
			w->conns[i] = (ctl_conn){.fd = fd, .uid = cr.uid};
			return;
		}
	close(fd);
}

/* The queue and its control socket. */
static int ctl_start(wrap *w, const moat_policy *pol, moat_error *err)
{
	moat_approvals_opts ao = {.timeout_ms = pol->approvals_timeout_ms, .notify = pol->approvals_notify,
				  .audit = w->audit};
	int r = moat_approvals_new(&ao, &w->ap, err);
	if (r < 0)
		return r;
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake_fd < 0)
		return moat_error_errno(err, errno, "eventfd");
	moat_approvals_set_wake(w->ap, wake_cb, &w->wake_fd);
	if ((r = moat__keeper_rundir_make(&w->dir, err)) < 0)
		return r;
	moat_approvals_set_session(w->ap, w->dir.id);
	/* Marks the folder as a relay's (moat approvals names it by this). */
	_cleanup_close_ int mf = openat(w->dir.dir_fd, "mcp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (mf < 0 || moat__write_all(mf, w->server, strlen(w->server)) < 0)
		return moat_error_errno(err, errno, "%s/mcp: write it", w->dir.path);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->dir.socket);
	w->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (w->listen_fd < 0)
		return moat_error_errno(err, errno, "control socket: make it");
	if (bind(w->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_errno(err, errno, "control socket %s: bind", w->dir.socket);
	if (fchmodat(w->dir.dir_fd, "ctl", 0600, 0) < 0 || listen(w->listen_fd, 8) < 0)
		return moat_error_errno(err, errno, "control socket %s: listen", w->dir.socket);
	return 0;
}

static void ctl_stop(wrap *w)
{
	if (w->ap)
		moat_approvals_end(w->ap, "the relay ended before anyone decided");
	for (size_t i = 0; i < WRAP_MAX_CONNS; i++)
		ctl_close(&w->conns[i]);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	w->listen_fd = -1;
	if (w->dir.dir_fd >= 0)
		(void)unlinkat(w->dir.dir_fd, "mcp", 0);
	moat__keeper_rundir_remove(&w->dir);
}

static int on_client(void *userdata, const char *line, size_t len)
{
	wrap *w = userdata;
	/* What the server sends answers this, or follows from it. */
	w->out_since_client = 0;
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
		if (d == MOAT_TOOL_APPROVE) {
			r = hold(w, &m, tool, args);
			goto done;
		}
		if (d != MOAT_TOOL_ALLOW) {
			char text[512];
			snprintf(text, sizeof(text), "moat: tool '%s' is denied by the tool policy", tool);
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
	} else if (m.kind == MOAT_JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0) {
		/* Held calls are shown to a client that can show them. */
		w->elicit = json_object_get(json_object_get(m.params, "capabilities"), "elicitation") != NULL;
	} else if (m.kind == MOAT_JSONRPC_RESPONSE && json_is_string(m.id) &&
		   strncmp(json_string_value(m.id), "moat-elicit-", 12) == 0) {
		/* The answer to our elicitation: it decides nothing (only a
		 * person through the control socket does), and is not the
		 * server's to see. */
		goto done;
	} else if (m.kind == MOAT_JSONRPC_NOTIFICATION && strcmp(m.method, "notifications/cancelled") == 0) {
		held *h = held_find(w, json_object_get(m.params, "requestId"));
		if (h) {
			moat_approvals_withdraw(w->ap, h->ticket, "the client cancelled the call");
			audit_call_approval(w, h->tool, h->args, MOAT_TOOL_APPROVE, now_ms() - h->start_ms, 0, true,
					    "the client cancelled the call", h->approval, "withdrawn");
			held_drop(h);
			goto done;
		}
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
	/* Every string, keys too, decoded: a value escaped in the JSON
	 * (\u0041...) is found as well as a plain one. */
	if (w->red && moat_redactor_count(w->red) && moat_redact_json(w->red, m.msg) > 0)
		logline("redacted a secret's value from a message of the server");
	if (m.kind == MOAT_JSONRPC_RESPONSE) {
		pending *p = pending_find(w, m.id);
		if (p && p->is_call) {
			json_t *res = json_object_get(m.msg, "result");
			json_t *err = json_object_get(m.msg, "error");
			audit_call_approval(w, p->tool, p->args, p->approval[0] ? MOAT_TOOL_APPROVE : MOAT_TOOL_ALLOW,
					    now_ms() - p->start_ms, len, err || json_is_true(json_object_get(res, "isError")),
					    err ? json_string_value(json_object_get(err, "message")) : NULL, p->approval,
					    p->approved[0] ? p->approved : NULL);
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

/* Registers value (and the encoded forms it may travel in: base64,
 * percent-encoding) under name, with the relay's redactor and the audit
 * log's. */
static int redact_add(wrap *w, const char *name, const char *value, moat_error *err)
{
	char *forms[MOAT_SECRET_FORMS];
	int nf = moat_secret_forms(value, forms);
	if (nf < 0)
		return moat_error_set(err, ENOMEM, "secret forms");
	int r = 0;
	for (int k = -1; k < nf && r >= 0; k++) {
		const char *v = k < 0 ? value : forms[k];
		r = moat_redactor_add(w->red, name, v, err);
		if (r >= 0 && w->audit)
			r = moat_audit_add_secret(w->audit, name, v, err);
	}
	for (int k = 0; k < nf; k++) {
		explicit_bzero(forms[k], strlen(forms[k]));
		free(forms[k]);
	}
	return r;
}

/* The values of the policy's secrets, as moat run reads them (env:VAR;
 * file:PATH, one trailing newline dropped), without taking them out of
 * this process's environment, which moat run reads next. The server can
 * learn a value (an upstream that echoes what the gateway injected) and
 * print it: the relay, which now reads the server's stdout first, keeps
 * it from the client and from the log. */
static int secrets_redactor(wrap *w, const moat_policy *pol, moat_error *err)
{
	if (!(w->red = moat_redactor_new()))
		return moat_error_set(err, ENOMEM, "redactor");
	for (size_t k = 0; k < pol->n_secrets; k++) {
		const moat_secret *s = &pol->secrets[k];
		if (!s->from)
			continue; /* a honeytoken: no value */
		if (strncmp(s->from, "env:", 4) == 0) {
			const char *v = getenv(s->from + 4);
			if (v && v[0] && redact_add(w, s->name, v, err) < 0)
				return -1;
			continue;
		}
		if (strncmp(s->from, "file:", 5) != 0)
			continue;
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int r = read_small_file(s->from + 5, MOAT_REDACT_MAX_VALUE + 1, &buf, &len);
		if (r < 0)
			/* moat run would refuse the run just as well. */
			return moat_error_set(err, -r, "secret %s: %s", s->name, s->from + 5);
		if (len && buf[len - 1] == '\n')
			buf[--len] = '\0';
		r = len && strlen(buf) == len ? redact_add(w, s->name, buf, err) : 0;
		explicit_bzero(buf, len);
		if (r < 0)
			return -1;
	}
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
	if (audit_path && moat_audit_open(audit_path, NULL, &w.audit, &err) < 0)
		return moat_cli_fail("mcp wrap: --audit %s: %s", audit_path, err.msg);
	if (secrets_redactor(&w, pol, &err) < 0)
		return moat_cli_fail("mcp wrap: %s", err.msg);
	w.out_cap = pol->limits.output_bytes ? pol->limits.output_bytes : UINT64_MAX;
	w.listen_fd = w.wake_fd = -1;
	w.dir.dir_fd = w.dir.lock_fd = -1;
	for (size_t k = 0; k < WRAP_MAX_CONNS; k++)
		w.conns[k].fd = -1;
	/* Approve-gated tools wait in a queue of this relay's own. */
	if (w.tools->approve && w.tools->approve[0] && ctl_start(&w, pol, &err) < 0) {
		ctl_stop(&w);
		return moat_cli_fail("mcp wrap: approvals: %s", err.msg);
	}
	char self[PATH_MAX];
	ssize_t sn = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sn <= 0)
		return moat_cli_fail("mcp wrap: cannot find moat's own executable: %s", strerror(errno));
	self[sn] = '\0';

	size_t nc = 0;
	while (cmd[nc])
		nc++;
	_cleanup_free_ char **rargv = calloc(nc + 7, sizeof(char *));
	if (!rargv)
		return moat_cli_fail("mcp wrap: out of memory");
	size_t n = 0;
	rargv[n++] = "moat";
	rargv[n++] = "run";
	/* The server's stdout is the pipe the relay reads (sandbox.h);
	 * inside a sandbox the outer one relays a nested run's output, and
	 * moat run refuses the option there. */
	const char *parent = getenv(MOAT_PARENT_POLICY_ENV);
	if (!parent || !parent[0])
		rargv[n++] = "--direct-stdout";
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
		struct pollfd pf[6 + WRAP_MAX_CONNS] = {
			{.fd = client_open ? 0 : -1, .events = POLLIN},
			{.fd = w.from_server, .events = POLLIN},
			{.fd = sigfd, .events = POLLIN},
			{.fd = w.from_server < 0 ? pidfd : -1, .events = POLLIN},
			{.fd = w.listen_fd, .events = POLLIN},
			{.fd = w.wake_fd, .events = POLLIN},
		};
		for (size_t k = 0; k < WRAP_MAX_CONNS; k++)
			pf[6 + k] = (struct pollfd){.fd = w.conns[k].fd, .events = POLLIN};
		int timeout = -1;
		if (term_at) {
			uint64_t now = now_ms();
			timeout = now >= term_at ? 0 : (int)(term_at - now);
		}
		/* Held calls time out, leases run out: the queue's clock. */
		if (w.ap && (timeout < 0 || timeout > 250))
			timeout = 250;
		if (poll(pf, 6 + WRAP_MAX_CONNS, timeout) < 0 && errno != EINTR)
			break;
		if (w.ap) {
			if (pf[4].revents)
				ctl_accept(&w);
			for (size_t k = 0; k < WRAP_MAX_CONNS; k++) {
				if (!pf[6 + k].revents || w.conns[k].fd != pf[6 + k].fd)
					continue;
				if (pf[6 + k].revents & POLLIN)
					ctl_read(&w, &w.conns[k]);
				else
					ctl_close(&w.conns[k]);
			}
			uint64_t v;
			if (pf[5].revents && read(w.wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				logline("approvals: %s", strerror(errno));
			moat_approvals_tick(w.ap);
			held_poll(&w);
		}
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
			if (got > 0) {
				w.out_total += (uint64_t)got;
				w.out_since_client += (uint64_t)got;
			}
			if (got > 0 && w.out_since_client > w.out_cap) {
				/* A server that floods the client unasked: ended,
				 * as moat run ends a run past its output limit;
				 * nothing past the cap goes on. */
				logline("the server wrote more than limits.output (%" PRIu64
					" bytes) since the client's last message: ending it",
					w.out_cap);
				audit(&w, "mcp.server.output_limit",
				      json_pack("{s:s,s:I}", "server", w.server, "limit", (json_int_t)w.out_cap));
				w.out_limit = true;
				close(w.from_server);
				w.from_server = -1;
				kill(pid, SIGTERM);
			} else if (got <= 0) {
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
	/* Calls still held are answered (denied: the relay is ending). */
	if (w.ap) {
		ctl_stop(&w);
		held_poll(&w);
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
	audit(&w, "mcp.server.end",
	      json_pack("{s:s,s:i,s:I,s:b}", "server", w.server, "exit_status", code, "output_bytes",
			(json_int_t)w.out_total, "output_limit", w.out_limit));
	moat_jsonrpc_framer_free(&fc);
	moat_jsonrpc_framer_free(&fs);
	if (w.to_server >= 0)
		close(w.to_server);
	if (w.wake_fd >= 0)
		close(w.wake_fd);
	moat_approvals_free(w.ap);
	moat_audit_close(w.audit);
	moat_tool_policy_free(w.tools);
	moat_redactor_free(w.red);
	return code;
}
