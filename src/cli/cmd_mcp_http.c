/* moat mcp serve --http ADDR:PORT: the MCP Streamable HTTP transport in
 * front of moat mcp serve (docs/mcp.md).
 *
 * One endpoint, /mcp. Every request needs the bearer token. An initialize
 * without a session starts an MCP session: a `moat mcp serve` process of its
 * own (this binary executed afresh, on stdio), named by the Mcp-Session-Id
 * header of the answer; later POSTs with that header are relayed to it, and
 * its answers go back as the HTTP response of the request they answer (a
 * JSON body, or an event stream when the request asked for progress).
 * DELETE ends the session. One process per session keeps sessions' data
 * and sandboxes apart, and all the MCP logic stays in one place. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "util.h"

extern char **environ;

#define HTTP_MAX_SESSIONS 16
#define HTTP_MAX_PENDING 256
#define HTTP_TOKEN_MIN 16
#define HTTP_TOKEN_MAX 256

typedef struct http_session {
	bool used;
	char id[33];
	pid_t pid;
	int to_child, from_child;
	struct event *ev;
	moat_jsonrpc_framer fr;
	uint64_t last_used; /* monotonic ns of its last request */
	/* It was asked for a sandbox session (session_create): it holds
	 * state a client would lose, so it is never ended to make room. */
	bool holds_state;
} http_session;

typedef struct http_pending {
	struct evhttp_request *req; /* NULL: free, or its connection closed */
	bool used;
	http_session *s;
	json_t *id;
	json_t *progress_token;
	bool sse;         /* the reply is an event stream, started */
	bool new_session; /* the answer carries Mcp-Session-Id */
	struct evhttp_connection *conn;
} http_pending;

typedef struct http_front {
	struct event_base *base;
	char self[PATH_MAX];
	char token[HTTP_TOKEN_MAX + 1];
	char *const *serve_args; /* --policy/--profile for the sessions */
	http_session sessions[HTTP_MAX_SESSIONS];
	http_pending pend[HTTP_MAX_PENDING];
} http_front;

static http_front F;

static void logline(const char *what, const char *detail)
{
	fprintf(stderr, "moat mcp: http: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static void reply_json(struct evhttp_request *req, int code, const char *reason, json_t *body)
{
	struct evbuffer *b = evbuffer_new();
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(body);
	if (text) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
		evbuffer_add(b, text, strlen(text));
		free(text);
	}
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void reply_error(struct evhttp_request *req, int http, const char *reason, int code, const char *msg)
{
	reply_json(req, http, reason, moat_jsonrpc_error(NULL, code, msg, NULL));
}

/* Constant time: the token must not leak through how long a wrong one takes. */
static bool token_ok(const char *got)
{
	size_t n = strlen(F.token);
	if (!got || strncmp(got, "Bearer ", 7) != 0)
		return false;
	got += 7;
	size_t m = strlen(got);
	unsigned char d = m != n;
	/* Every byte of the token is compared, whatever the length given;
	 * a shorter one is compared against zeros, never read past. */
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(F.token[i] ^ (i < m ? got[i] : 0));
	return d == 0;
}

/* DNS rebinding: a browser page may POST to 127.0.0.1 with its own Origin;
 * only a local origin (or none, as non-browser clients send) is served. */
static bool origin_ok(const char *o)
{
	if (!o)
		return true;
	static const char *const ok[] = {"http://127.0.0.1", "http://localhost", "http://[::1]"};
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		size_t n = strlen(ok[i]);
		if (strncmp(o, ok[i], n) == 0 && (o[n] == '\0' || o[n] == ':'))
			return true;
	}
	return false;
}

static http_session *session_find(const char *id)
{
	for (size_t i = 0; id && i < HTTP_MAX_SESSIONS; i++)
		if (F.sessions[i].used && strcmp(F.sessions[i].id, id) == 0)
			return &F.sessions[i];
	return NULL;
}

static void pending_free(http_pending *p)
{
	json_decref(p->id);
	json_decref(p->progress_token);
	*p = (http_pending){0};
}

static void on_conn_close(struct evhttp_connection *conn, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < HTTP_MAX_PENDING; i++) {
		http_pending *p = &F.pend[i];
		if (!p->used || p->conn != conn)
			continue;
		/* The client gave up on the request: the session is told, as
		 * a cancellation, so that the run ends. */
		if (p->s && p->id) {
			json_t *n = moat_jsonrpc_notification("notifications/cancelled",
							      json_pack("{s:O,s:s}", "requestId", p->id, "reason",
									"the HTTP connection closed"));
			size_t len;
			char *line = n ? moat_jsonrpc_encode_line(n, &len) : NULL;
			if (line && write(p->s->to_child, line, len) < 0)
				logline("cannot tell a session of a closed connection", strerror(errno));
			free(line);
			json_decref(n);
		}
		pending_free(p);
	}
}

static void session_end(http_session *s)
{
	if (!s->used)
		return;
	/* Requests still waiting get an error. */
	for (size_t i = 0; i < HTTP_MAX_PENDING; i++) {
		http_pending *p = &F.pend[i];
		if (!p->used || p->s != s)
			continue;
		if (p->req && p->sse)
			evhttp_send_reply_end(p->req);
		else if (p->req)
			reply_error(p->req, 500, "Internal Server Error", MOAT_JSONRPC_INTERNAL_ERROR, "the session ended");
		pending_free(p);
	}
	if (s->ev)
		event_free(s->ev);
	if (s->to_child >= 0)
		close(s->to_child);
	if (s->from_child >= 0)
		close(s->from_child);
	/* Its sandboxes' sessions are removed by the process on its way out. */
	waitpid(s->pid, NULL, 0);
	moat_jsonrpc_framer_free(&s->fr);
	*s = (http_session){0};
}

static void sse_send(struct evhttp_request *req, const char *json)
{
	struct evbuffer *b = evbuffer_new();
	evbuffer_add_printf(b, "event: message\ndata: %s\n\n", json);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
}

static int on_child_line(void *userdata, const char *line, size_t len)
{
	http_session *s = userdata;
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why;
	if (!line || moat_jsonrpc_decode(line, len, &m, &id, &why) < 0) {
		json_decref(id);
		logline("dropped a malformed message of a session", NULL);
		return 0;
	}
	json_decref(id);
	http_pending *p = NULL;
	for (size_t i = 0; i < HTTP_MAX_PENDING && !p; i++) {
		http_pending *q = &F.pend[i];
		if (!q->used || q->s != s)
			continue;
		if (m.kind == MOAT_JSONRPC_RESPONSE && moat_jsonrpc_id_equal(q->id, m.id))
			p = q;
		else if (m.kind == MOAT_JSONRPC_NOTIFICATION && q->sse && q->progress_token &&
			 json_equal(q->progress_token, json_object_get(m.params, "progressToken")))
			p = q;
	}
	if (p && p->req) {
		_cleanup_free_ char *text = json_dumps(m.msg, JSON_COMPACT | JSON_ENSURE_ASCII);
		if (m.kind == MOAT_JSONRPC_NOTIFICATION)
			sse_send(p->req, text ? text : "{}");
		else if (p->sse) {
			sse_send(p->req, text ? text : "{}");
			evhttp_send_reply_end(p->req);
		} else {
			if (p->new_session)
				evhttp_add_header(evhttp_request_get_output_headers(p->req), "Mcp-Session-Id", s->id);
			reply_json(p->req, 200, "OK", json_incref(m.msg));
		}
	}
	if (p && m.kind == MOAT_JSONRPC_RESPONSE)
		pending_free(p);
	moat_jsonrpc_msg_clear(&m);
	return 0;
}

static void on_child(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	http_session *s = arg;
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		logline("a session's process ended", s->id);
		session_end(s);
		return;
	}
	moat_jsonrpc_framer_feed(&s->fr, buf, (size_t)n, on_child_line, s);
}

static bool session_busy(const http_session *s)
{
	for (size_t i = 0; i < HTTP_MAX_PENDING; i++)
		if (F.pend[i].used && F.pend[i].s == s)
			return true;
	return false;
}

/* All slots taken: the session idle the longest that holds no sandbox
 * session and has no request in flight is ended to make room. Clients
 * that never DELETE their session (most do not, on exit) would otherwise
 * lock the server out after 16; one so ended holds nothing but its
 * negotiated version, and its client gets 404 and initializes anew, as the
 * transport specifies. */
static http_session *session_evict(void)
{
	http_session *old = NULL;
	for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++) {
		http_session *s = &F.sessions[i];
		if (s->used && !s->holds_state && !session_busy(s) && (!old || s->last_used < old->last_used))
			old = s;
	}
	if (!old)
		return NULL;
	logline("ended the session idle the longest to make room", old->id);
	session_end(old);
	return old;
}

static http_session *session_start(void)
{
	http_session *s = NULL;
	for (size_t i = 0; i < HTTP_MAX_SESSIONS && !s; i++)
		if (!F.sessions[i].used)
			s = &F.sessions[i];
	if (!s && !(s = session_evict()))
		return NULL;
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return NULL;
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return NULL;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return NULL;
	}
	char *argv[8] = {"moat", "mcp", "serve"};
	size_t n = 3;
	for (size_t i = 0; F.serve_args[i] && n < 7; i++)
		argv[n++] = F.serve_args[i];
	argv[n] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	pid_t pid;
	int r = posix_spawn(&pid, F.self, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (r != 0) {
		close(in[1]);
		close(out[0]);
		return NULL;
	}
	*s = (http_session){.used = true, .pid = pid, .to_child = in[1], .from_child = out[0]};
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
	moat_jsonrpc_framer_init(&s->fr, MOAT_JSONRPC_MAX_MESSAGE);
	s->ev = event_new(F.base, s->from_child, EV_READ | EV_PERSIST, on_child, s);
	if (!s->ev || event_add(s->ev, NULL) < 0) {
		session_end(s);
		return NULL;
	}
	return s;
}

static bool accepts(struct evhttp_request *req, const char *type)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
	return a && (strstr(a, type) || strstr(a, "*/*"));
}

static void on_mcp(struct evhttp_request *req, void *arg)
{
	(void)arg;
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	if (!token_ok(evhttp_find_header(h, "Authorization"))) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
		return reply_error(req, 401, "Unauthorized", MOAT_JSONRPC_INVALID_REQUEST, "a bearer token is required");
	}
	if (!origin_ok(evhttp_find_header(h, "Origin")))
		return reply_error(req, 403, "Forbidden", MOAT_JSONRPC_INVALID_REQUEST, "Origin not allowed");
	const char *sid = evhttp_find_header(h, "Mcp-Session-Id");
	const char *ver = evhttp_find_header(h, "MCP-Protocol-Version");
	if (ver && strcmp(moat_mcp_negotiate_version(ver), ver) != 0)
		return reply_error(req, 400, "Bad Request", MOAT_JSONRPC_INVALID_REQUEST, "unsupported MCP-Protocol-Version");
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	if (cmd == EVHTTP_REQ_DELETE) {
		http_session *s = session_find(sid);
		if (!s)
			return reply_error(req, 404, "Not Found", MOAT_JSONRPC_INVALID_REQUEST, "no such session");
		session_end(s);
		return reply_json(req, 200, "OK", NULL);
	}
	if (cmd != EVHTTP_REQ_POST) {
		/* No stream of the server's own requests: the GET stream is optional. */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST, DELETE");
		return reply_json(req, 405, "Method Not Allowed", NULL);
	}
	const char *ct = evhttp_find_header(h, "Content-Type");
	if (!ct || strncmp(ct, "application/json", 16) != 0)
		return reply_error(req, 415, "Unsupported Media Type", MOAT_JSONRPC_INVALID_REQUEST,
				   "Content-Type must be application/json");
	if (!accepts(req, "application/json") || !accepts(req, "text/event-stream"))
		return reply_error(req, 406, "Not Acceptable", MOAT_JSONRPC_INVALID_REQUEST,
				   "Accept must list application/json and text/event-stream");
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(body);
	const char *buf = (const char *)evbuffer_pullup(body, -1);
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why = NULL;
	int code = moat_jsonrpc_decode(buf ? buf : "", len, &m, &id, &why);
	if (code < 0) {
		logline("refused a message", why);
		reply_json(req, 400, "Bad Request", moat_jsonrpc_error(id, code, why, NULL));
		json_decref(id);
		return;
	}
	json_decref(id);
	bool init = m.kind == MOAT_JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0;
	http_session *s = NULL;
	if (init && !sid) {
		s = session_start();
		if (!s) {
			moat_jsonrpc_msg_clear(&m);
			return reply_error(req, 503, "Service Unavailable", MOAT_JSONRPC_INTERNAL_ERROR,
					   "too many sessions (each busy or holding sandboxes), or one could not start");
		}
	} else if (!sid) {
		moat_jsonrpc_msg_clear(&m);
		return reply_error(req, 400, "Bad Request", MOAT_JSONRPC_INVALID_REQUEST, "Mcp-Session-Id header required");
	} else if (!(s = session_find(sid))) {
		moat_jsonrpc_msg_clear(&m);
		return reply_error(req, 404, "Not Found", MOAT_JSONRPC_INVALID_REQUEST, "no such session");
	}
	s->last_used = moat__now_ns();
	if (m.kind == MOAT_JSONRPC_REQUEST && strcmp(m.method, "tools/call") == 0 &&
	    strcmp(json_string_value(json_object_get(m.params, "name")) ?: "", "session_create") == 0)
		s->holds_state = true;
	http_pending *p = NULL;
	if (m.kind == MOAT_JSONRPC_REQUEST) {
		for (size_t i = 0; i < HTTP_MAX_PENDING && !p; i++)
			if (!F.pend[i].used)
				p = &F.pend[i];
		if (!p) {
			moat_jsonrpc_msg_clear(&m);
			return reply_error(req, 503, "Service Unavailable", MOAT_JSONRPC_INTERNAL_ERROR,
					   "too many requests in flight");
		}
		json_t *tok = json_object_get(json_object_get(m.params, "_meta"), "progressToken");
		*p = (http_pending){.used = true, .req = req, .s = s, .id = json_incref(m.id), .new_session = init,
				    .conn = evhttp_request_get_connection(req)};
		if (tok) {
			/* Progress comes as events before the answer. */
			p->progress_token = json_incref(tok);
			p->sse = true;
			evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/event-stream");
			evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-cache");
			if (init)
				evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", s->id);
			evhttp_send_reply_start(req, 200, "OK");
		}
		evhttp_connection_set_closecb(p->conn, on_conn_close, NULL);
	}
	size_t n;
	_cleanup_free_ char *line = moat_jsonrpc_encode_line(m.msg, &n);
	moat_jsonrpc_msg_clear(&m);
	if (!line || write(s->to_child, line, n) != (ssize_t)n) {
		if (p) {
			if (p->sse)
				evhttp_send_reply_end(req);
			else
				reply_error(req, 500, "Internal Server Error", MOAT_JSONRPC_INTERNAL_ERROR, "the session is gone");
			pending_free(p);
		} else
			reply_error(req, 500, "Internal Server Error", MOAT_JSONRPC_INTERNAL_ERROR, "the session is gone");
		session_end(s);
		return;
	}
	if (!p)
		reply_json(req, 202, "Accepted", NULL);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	(void)arg;
	reply_json(req, 404, "Not Found", NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopexit(arg, NULL);
}

int moat__cli_mcp_http(const char *listen, const char *token_file, char *const *serve_args)
{
	char host[256];
	const char *colon = strrchr(listen, ':');
	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
		return moat_cli_fail("mcp serve: --http %s: expected ADDRESS:PORT (e.g. 127.0.0.1:8765)", listen);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535 || end == colon + 1)
		return moat_cli_fail("mcp serve: --http %s: the port must be 0 to 65535", listen);
	if (token_file) {
		_cleanup_fclose_ FILE *f = fopen(token_file, "re");
		if (!f || !fgets(F.token, sizeof(F.token), f))
			return moat_cli_fail("mcp serve: --token-file %s: %s", token_file, f ? "empty" : strerror(errno));
		F.token[strcspn(F.token, "\r\n")] = '\0';
		if (strlen(F.token) < HTTP_TOKEN_MIN)
			return moat_cli_fail("mcp serve: --token-file %s: the token must be at least %d characters",
					     token_file, HTTP_TOKEN_MIN);
	} else {
		unsigned char rnd[24];
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return moat_cli_fail("mcp serve: getrandom: %s", strerror(errno));
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(F.token + 2 * i, 3, "%02x", rnd[i]);
	}
	ssize_t sn = readlink("/proc/self/exe", F.self, sizeof(F.self) - 1);
	if (sn <= 0)
		return moat_cli_fail("mcp serve: cannot find moat's own executable: %s", strerror(errno));
	F.serve_args = serve_args;
	signal(SIGPIPE, SIG_IGN);
	F.base = event_base_new();
	struct evhttp *http = F.base ? evhttp_new(F.base) : NULL;
	if (!http)
		return moat_cli_fail("mcp serve: cannot set up the HTTP server");
	evhttp_set_max_body_size(http, MOAT_JSONRPC_MAX_MESSAGE);
	evhttp_set_max_headers_size(http, 16384);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_POST | EVHTTP_REQ_GET | EVHTTP_REQ_DELETE);
	evhttp_set_cb(http, "/mcp", on_mcp, NULL);
	evhttp_set_gencb(http, on_other, NULL);
	struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, host, (uint16_t)port);
	if (!bs)
		return moat_cli_fail("mcp serve: --http %s: cannot listen there: %s", listen, strerror(errno));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
	int bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	if (token_file)
		fprintf(stderr, "moat mcp: listening on http://%s:%d/mcp\n", listen[0] == '[' ? listen : host, bound);
	else
		fprintf(stderr, "moat mcp: listening on http://%s:%d/mcp (bearer token: %s)\n",
			listen[0] == '[' ? listen : host, bound, F.token);
	struct event *sigs[3];
	int signum[3] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		sigs[i] = evsignal_new(F.base, signum[i], on_signal, F.base);
		event_add(sigs[i], NULL);
	}
	event_base_dispatch(F.base);
	for (size_t i = 0; i < HTTP_MAX_SESSIONS; i++)
		session_end(&F.sessions[i]);
	for (int i = 0; i < 3; i++)
		event_free(sigs[i]);
	evhttp_free(http);
	event_base_free(F.base);
	return 0;
}
