/* The egress gateway engine: libevent bufferevents, one state machine per
 * client connection, asynchronous resolution with evdns. Decisions come from
 * the pure modules (hostname.h, netrules.h, netaddr.h, proxyproto.h); this
 * file only moves bytes between them and the sockets.
 *
 * A connection goes through these states:
 *
 *   SNIFF ─┬─ 0x05 ─ SOCKS_GREETING ─ SOCKS_REQUEST ─┐
 *          └─ else ─ HTTP_HEAD ──────────────────────┤
 *                                                    ▼
 *       RESOLVING ─ CONNECTING ─┬─ (HTTP)   RELAY_HTTP
 *                               └─ (tunnel) TLS_PEEK ─ RELAY
 *
 * A tunnel to a host whose TLS is terminated (tls.h) is answered at once,
 * without an upstream, and goes
 *
 *       TLS_PEEK ─ TLS_HEAD ─ RESOLVING ─ CONNECTING ─ TLS_UPSTREAM ─ RELAY_HTTP
 *
 * where TLS_HEAD reads the request inside the client's TLS and decides it
 * with its method and path, and TLS_UPSTREAM is the handshake with the
 * upstream, verified with the host's trust store and the real name.
 *
 * and ends in CLOSING, where pending output is flushed before both sockets
 * are closed. A refusal is always an answer the client can read (an HTTP
 * status with a one-line reason, or a SOCKS5 reply code), never a
 * connection that seems to succeed. */
#include "gateway.h"

#include "approvals.h"
#include "units.h"
#include "dnsstub.h"
#include "hostname.h"
#include "netaddr.h"
#include "netrules.h"
#include "proxyproto.h"
#include "hostglob.h"
#include "httpresp.h"
#include "secrets.h"
#include "secretstore.h"
#include "tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

/* OpenSSL 3.0's err.h uses INT_MAX, and <limits.h> here is libmoat's
 * (the include path), not the C library's. */
#ifndef INT_MAX
#define INT_MAX __INT_MAX__
#endif
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

/* From linux/netfilter_ipv4.h, whose other definitions are not needed. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif

/* A request head larger than this is refused (bubblewrap's habit: every
 * size a peer controls has a cap). */
#define GW_MAX_HEAD (64u * 1024)
/* How much of a tunnel's first bytes are held back to find the ClientHello;
 * a post-quantum ClientHello is about 1.8 KiB, one TLS record at most 16 KiB. */
#define GW_MAX_PEEK (32u * 1024)
/* Relay back-pressure: stop reading one side while the other side's output
 * holds more than this. */
#define GW_HIGH_WATER (256u * 1024)
#define GW_MAX_ADDRS 8
#define GW_REASON_MAX 320
#define GW_DEFAULT_CONNECT_MS 10000
#define GW_DEFAULT_IDLE_MS 300000
/* After a refusal or at the end, pending output gets this long to drain. */
#define GW_LINGER_MS 5000
/* Keep-alive inside terminated TLS: requests on one client connection
 * before it is closed after a response. */
#define GW_KEEPALIVE_MAX_REQUESTS 1000
/* The pool of upstream connections a terminated request left open: in all,
 * per host and port, and how long one waits unused. Servers close idle
 * connections after 5 s (Node, Apache) to minutes; one the server closed
 * is dropped as soon as its end of file is read. */
#define GW_POOL_MAX 16
#define GW_POOL_PER_DEST 4
#define GW_POOL_IDLE_MS 30000
/* TLS sessions kept for resumption, one per host and port. */
#define GW_MAX_SESSIONS 32

typedef enum gw_state {
	ST_SNIFF,
	ST_HTTP_HEAD,
	ST_SOCKS_GREETING,
	ST_SOCKS_REQUEST,
	ST_RESOLVING,
	ST_CONNECTING,
	ST_TLS_PEEK,
	ST_RELAY,
	ST_RELAY_HTTP,
	ST_TLS_HEAD,     /* terminated: reading the request inside the client's TLS */
	ST_TLS_UPSTREAM, /* terminated: the handshake with the upstream */
	ST_HELD,         /* waiting for a person's decision (approvals.h) */
	ST_CLOSING,
} gw_state;

typedef enum gw_proto {
	PROTO_HTTP,
	PROTO_CONNECT,
	PROTO_SOCKS5,
	/* A connection the sandbox's network namespace redirected to the
	 * gateway (netnat.h) that opened with a TLS ClientHello, or on a raw
	 * port: judged as a CONNECT to where it was going. Plain HTTP
	 * redirected there is PROTO_HTTP with gw_conn.transparent set. */
	PROTO_TRANSPARENT,
} gw_proto;

typedef struct gw_conn gw_conn;

/* An upstream connection waiting in the pool: TLS to host:port, verified
 * with the gateway's one client context and the host's name as SNI, so
 * host and port are the whole key. The address it went to passed the SSRF
 * guard when it was made, and is checked again with the rules in force
 * when it is taken. */
typedef struct gw_pooled {
	struct gw_pooled *next;
	moat_gateway *gw;
	struct bufferevent *bev;
	struct event *idle;
	char host[MOAT_HOST_MAX + 1];
	uint16_t port;
	moat_addr addr;
	char address[MOAT_ADDR_STRLEN];
} gw_pooled;

typedef struct gw_session {
	char host[MOAT_HOST_MAX + 1];
	uint16_t port;
	SSL_SESSION *sess;
	uint64_t used_ns;
} gw_session;

typedef struct gw_static_host {
	char name[MOAT_HOST_MAX + 1];
	moat_addr addr;
} gw_static_host;

struct moat_gateway {
	struct event_base *base;
	struct evdns_base *dns; /* created at the first lookup */
	char *resolver;
	moat_netrules_slot rules;
	gw_static_host *hosts;
	size_t n_hosts;
	moat_budget *budget;
	uint16_t *raw_ports;
	size_t n_raw_ports;
	struct timeval connect_timeout, idle_timeout, head_timeout;
	moat_gateway_event_fn on_event;
	void *userdata;
	uint32_t max_clients;
	/* The listeners are disabled after an accept error (out of
	 * descriptors) and re-armed by this timer. */
	struct event *rearm;
	/* The event rate cap: a token bucket (in thousandths of an event),
	 * how many events it held back, and the timer that reports them. */
	uint32_t events_per_sec;
	uint64_t ev_tokens, ev_last_ns;
	uint64_t ev_suppressed;
	struct event *flood;

	/* TLS termination: the authority (not owned), the hosts it is for,
	 * and the two contexts. */
	moat_tls_ca *tls_ca;
	char **terminate_hosts;
	SSL_CTX *tls_server, *tls_client;
	moat_secrets *secrets; /* not owned */
	/* Upstream connections and TLS sessions left by terminated requests,
	 * for the next ones to the same host and port. */
	gw_pooled *pool;
	size_t n_pooled;
	gw_session sessions[GW_MAX_SESSIONS];

	/* Transparent egress: the names the DNS stub handed out, and its
	 * socket. */
	moat_dnsmap *dnsmap;
	struct event *dns_ev;
	int dns_stub_fd;

	struct evconnlistener *listeners[MOAT_GATEWAY_MAX_LISTENERS];
	size_t n_listeners;
	gw_conn *conns; /* every open connection, for moat_gateway_free */
	moat_gateway_stats stats;

	/* Approval holds: the queue (not owned), the eventfd its deciders
	 * wake the gateway's thread with, and the next ticket. */
	moat_approvals *approvals;
	int wake_fd;
	struct event *wake_ev;
	uint64_t next_ticket;
};

struct gw_conn {
	moat_gateway *gw;
	gw_conn *prev, *next;
	gw_state state;
	gw_proto proto;
	/* Redirected (transparent egress): where it goes was fixed when it
	 * was accepted, from its original destination; what the client then
	 * says must agree. */
	bool transparent;
	struct bufferevent *client;
	struct bufferevent *upstream;
	struct evdns_getaddrinfo_request *dns_req;
	struct event *linger;
	struct event *deadline; /* the absolute deadline for the request */
	moat_http_parser *http;

	/* What was asked. */
	moat_host host;
	bool host_set;
	char raw_host[96]; /* for the log when the host did not normalise */
	uint16_t port;
	char *method, *path;
	char *method_override; /* X-HTTP-Method-Override and kin, judged too */
	char *sni;
	/* The rules in force when the decision was made, and what it said. */
	moat_netrules *rules;
	int rule;
	bool raw_tunnel_ok; /* the port is neither 80 nor 443 and a rule named it */
	bool terminate;     /* a tunnel whose TLS the gateway terminates */
	bool tls_inner;     /* the client's TLS is terminated: answers go inside it */
	/* Secrets: the request's headers as they go upstream (a replaced
	 * value per header, or NULL), headers dropped and added, the names
	 * for the log, whether a placeholder was misused, and the values
	 * whose echo in the response becomes the placeholder again. */
	char **hdr_new;
	size_t n_hdr_new;
	char **inj_drop, **inj_lines;
	char secret_names[160];
	bool misuse;
	size_t *echo; /* indexes of injected secrets */
	size_t n_echo;
	bool upstream_eof;
	/* Placeholders the request's body must not carry (secrets not bound
	 * to this host, or any in plain HTTP), and the body's last bytes, so
	 * that one cut across two reads is seen. */
	size_t *watch;
	size_t n_watch;
	char body_tail[2 * MOAT_PLACEHOLDER_MAX];
	size_t body_tail_len;
	/* A chunked body is watched in what it carries, not as framed:
	 * the framing may cut a placeholder in two. */
	int bw_state; /* 0 size line, 1 rest of the size line, 2 data, 3 data's CRLF, 4 trailer */
	uint64_t bw_left;

	/* Where it goes: every candidate has passed the SSRF guard. */
	moat_addr addrs[GW_MAX_ADDRS];
	size_t n_addrs, addr_idx;
	char address[MOAT_ADDR_STRLEN];
	moat_addr up_addr; /* the one connected to */

	/* The body still due: a length, or a chunked body followed to its
	 * end. */
	uint64_t body_left;
	bool chunked;
	moat_chunked chunks;
	/* The client half-closed after its request: its response still comes,
	 * and a tunnel passes the half-close on once the bytes before it have
	 * gone out. */
	bool client_eof;
	bool shut_upstream_pending;

	/* Keep-alive inside terminated TLS: each request is read, decided,
	 * sent and logged on its own, and the next one is read only once the
	 * response to this one has ended (resp follows it; resp_fed of the
	 * upstream's input went through it, resp_end when it ended there).
	 * req_done: the request's body has gone whole; idle: between two
	 * requests, nothing to log. */
	bool keep_alive;
	bool idle;
	bool req_done;
	bool client_close; /* the request asked for the connection's end */
	bool reused;       /* the upstream came from the pool */
	unsigned requests;
	moat_http_resp *resp;
	size_t resp_fed;
	bool resp_end;
	bool resp_untracked; /* not followable: relayed until the server closes */

	char dest[MOAT_BUDGET_DEST_MAX]; /* budget key "host:port" */
	bool budget_open;
	uint64_t bytes_up, bytes_down;
	uint64_t start_ns;
	bool logged;
	bool allowed;
	char reason[GW_REASON_MAX];

	/* Held for approval: the ticket, whether the request is inside
	 * terminated TLS, and what decided it. */
	uint64_t ticket;
	bool held_tls;
	char approval[MOAT_APPROVAL_ID_LEN];
	char lease[MOAT_APPROVAL_ID_LEN];
};

static void conn_close(gw_conn *c);
static void conn_resolve(gw_conn *c);
static bool conn_go(gw_conn *c);
static bool conn_hold(gw_conn *c, bool tls);
static void tls_go(gw_conn *c);
static void secrets_clear(gw_conn *c);
static bool body_watch(gw_conn *c, struct evbuffer *in, size_t n);
static void name_secret(gw_conn *c, const char *name);
static bool secrets_check(gw_conn *c, const moat_http_request *req, bool tls);
static bool tls_terminated(const moat_gateway *gw, const moat_host *h);
static void tls_peek_start(gw_conn *c);
static void tls_accept(gw_conn *c);
static void tls_head(gw_conn *c);
static bool tls_upstream_start(gw_conn *c);
static void tls_upstream_ready(gw_conn *c);
static void socks_reply(gw_conn *c, uint8_t code);
static void conn_connect_next(gw_conn *c);
static void client_read_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);
static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void write_cb(struct bufferevent *bev, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);

static const char *proto_name(gw_proto p)
{
	switch (p) {
	case PROTO_HTTP:
		return "http";
	case PROTO_CONNECT:
		return "connect";
	case PROTO_SOCKS5:
		return "socks5";
	case PROTO_TRANSPARENT:
		return "transparent";
	}
	return "unknown";
}

static void ms_to_timeval(uint64_t ms, struct timeval *tv)
{
	tv->tv_sec = (time_t)(ms / 1000);
	tv->tv_usec = (suseconds_t)((ms % 1000) * 1000);
}

static void set_reason(gw_conn *c, const char *fmt, ...) _printf_(2, 3);
static void set_reason(gw_conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	/* A reason goes into a response header and a log line: it must stay
	 * one line whatever a peer put into the text it quotes. */
	for (char *p = c->reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* Keeps a printable copy of a host that could not be normalised, so the log
 * says what was tried without carrying control bytes into it. */
static void set_raw_host(gw_conn *c, const char *s, size_t len)
{
	size_t j = 0;
	for (size_t i = 0; i < len && j + 5 < sizeof(c->raw_host); i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch > 0x20 && ch < 0x7f && ch != '\\' && ch != '"')
			c->raw_host[j++] = (char)ch;
		else
			j += (size_t)snprintf(c->raw_host + j, sizeof(c->raw_host) - j, "\\x%02x", ch);
	}
	c->raw_host[j] = '\0';
}

static void set_host(gw_conn *c, const moat_host *h, uint16_t port)
{
	c->host = *h;
	c->host_set = true;
	c->port = port;
	snprintf(c->dest, sizeof(c->dest), "%s:%u", h->name, (unsigned)port);
}

/* ---- the audit event ---------------------------------------------------- */

static void flood_report(moat_gateway *gw)
{
	if (!gw->ev_suppressed)
		return;
	moat_net_event ev = {
		.type = "net.flood",
		.suppressed = gw->ev_suppressed,
		.protocol = "",
		.host = "",
		.address = "",
		.decision = "deny",
		.rule = -1,
		.reason = "moat: more gateway events than the log takes; the rest were counted, not written",
	};
	gw->ev_suppressed = 0;
	if (gw->on_event)
		gw->on_event(gw->userdata, &ev);
}

static void flood_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flood_report(arg);
}

/* Hands one event to the caller, unless the rate cap is spent: a sandbox
 * that opens thousands of refused connections must not write the host's
 * disk full through the log and the audit trail. The cap is a token bucket
 * (events_per_sec, with ten seconds' worth as a burst, so a hundred
 * parallel requests are all logged); what it holds back is counted and
 * reported in one net.flood event a second after the first one held. */
static void gw_emit(moat_gateway *gw, const moat_net_event *ev)
{
	if (!gw->on_event)
		return;
	/* An alert is never traded for a count: a sandbox that floods the
	 * log first must not hide its misuse of a secret in the flood. */
	if (ev->alert) {
		gw->on_event(gw->userdata, ev);
		return;
	}
	uint64_t now = moat__now_ns();
	uint64_t cap = (uint64_t)gw->events_per_sec * 10 * 1000;
	uint64_t elapsed = now - gw->ev_last_ns;
	if (elapsed > 100000000000ull)
		elapsed = 100000000000ull;
	gw->ev_last_ns = now;
	gw->ev_tokens += elapsed * gw->events_per_sec / 1000000; /* thousandths of an event */
	if (gw->ev_tokens > cap)
		gw->ev_tokens = cap;
	if (gw->ev_tokens < 1000) {
		if (!gw->ev_suppressed++ && gw->flood) {
			struct timeval tv = {.tv_sec = 1};
			evtimer_add(gw->flood, &tv);
		}
		gw->stats.events_suppressed++;
		return;
	}
	gw->ev_tokens -= 1000;
	gw->on_event(gw->userdata, ev);
}

static void conn_log(gw_conn *c)
{
	if (c->logged || c->idle)
		return;
	/* A connection that closed before it asked for anything is no
	 * request, and not worth a log line. */
	if (!c->host_set && !c->raw_host[0] && !c->reason[0])
		return;
	c->logged = true;
	if (c->allowed)
		__atomic_fetch_add(&c->gw->stats.allowed, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&c->gw->stats.denied, 1, __ATOMIC_RELAXED);
	if (!c->gw->on_event)
		return;
	/* A path is cut for the log: the decision saw all of it, and an 8 KiB
	 * path in every refusal line is a way to flood the host's disk. */
	char path[MOAT_GATEWAY_EVENT_PATH_MAX + 4];
	if (c->path && strlen(c->path) > MOAT_GATEWAY_EVENT_PATH_MAX)
		snprintf(path, sizeof(path), "%.*s...", MOAT_GATEWAY_EVENT_PATH_MAX, c->path);
	moat_net_event ev = {
		.type = "net.request",
		.protocol = proto_name(c->proto),
		.host = c->host_set ? c->host.name : c->raw_host,
		.port = c->port,
		.address = c->address,
		.method = c->method,
		.path = c->path && strlen(c->path) > MOAT_GATEWAY_EVENT_PATH_MAX ? path : c->path,
		.sni = c->sni,
		.bytes_up = c->bytes_up,
		.bytes_down = c->bytes_down,
		.duration_ms = (moat__now_ns() - c->start_ns) / 1000000,
		.decision = c->allowed ? "allow" : "deny",
		.rule = c->rule,
		.reason = c->reason,
		.secret = c->secret_names[0] ? c->secret_names : NULL,
		.approval = c->approval[0] ? c->approval : NULL,
		.lease = c->lease[0] ? c->lease : NULL,
	};
	/* A placeholder in a host name the gateway could not even read is
	 * misuse too. */
	if (!c->misuse && c->gw->secrets)
		for (size_t i = 0; i < moat_secrets_count(c->gw->secrets) && !c->misuse; i++) {
			const char *ph = moat_secrets_placeholder(c->gw->secrets, i);
			if (strcasestr(c->raw_host, ph) || (c->host_set && strcasestr(c->host.name, ph))) {
				c->misuse = true;
				snprintf(c->secret_names, sizeof(c->secret_names), "%s", moat_secrets_entry(c->gw->secrets, i)->name);
				ev.secret = c->secret_names;
			}
		}
	if (c->misuse) {
		ev.type = "secret.misuse";
		ev.alert = true;
	}
	gw_emit(c->gw, &ev);
}

/* ---- closing ------------------------------------------------------------- */

static void conn_free(gw_conn *c)
{
	if (!c)
		return;
	moat_gateway *gw = c->gw;
	conn_log(c);
	if (c->state == ST_HELD && gw->approvals)
		moat_approvals_withdraw(gw->approvals, c->ticket, "the client closed its connection");
	if (c->dns_req) {
		/* The lookup's callback then runs with EVUTIL_EAI_CANCEL and
		 * returns without touching c. */
		struct evdns_getaddrinfo_request *r = TAKE_PTR(c->dns_req);
		evdns_getaddrinfo_cancel(r);
	}
	if (c->client)
		bufferevent_free(c->client);
	if (c->upstream)
		bufferevent_free(c->upstream);
	if (c->linger)
		event_free(c->linger);
	if (c->deadline)
		event_free(c->deadline);
	free(c->resp);
	moat_http_parser_free(c->http);
	if (c->budget_open)
		moat_budget_conn_close(gw->budget, c->dest);
	moat_netrules_unref(c->rules);
	free(c->method);
	free(c->method_override);
	free(c->path);
	free(c->sni);
	secrets_clear(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	gw->stats.active--;
	free(c);
}

static void linger_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_free(arg);
}

static bool output_pending(struct bufferevent *bev)
{
	if (!bev)
		return false;
	/* A TLS filter's bytes may be encrypted already and waiting in the
	 * socket's buffer below it. */
	struct bufferevent *under = bufferevent_get_underlying(bev);
	return evbuffer_get_length(bufferevent_get_output(bev)) > 0 ||
	       (under && evbuffer_get_length(bufferevent_get_output(under)) > 0);
}

/* Ends the connection: logs it, stops reading, lets pending output drain
 * (bounded by GW_LINGER_MS), then frees everything. */
static void conn_close(gw_conn *c)
{
	if (c->state == ST_CLOSING)
		return;
	if (c->state == ST_HELD && c->gw->approvals)
		moat_approvals_withdraw(c->gw->approvals, c->ticket, "the client closed its connection");
	conn_log(c);
	c->state = ST_CLOSING;
	if (c->dns_req) {
		struct evdns_getaddrinfo_request *r = TAKE_PTR(c->dns_req);
		evdns_getaddrinfo_cancel(r);
	}
	if (c->client)
		bufferevent_disable(c->client, EV_READ);
	if (c->upstream)
		bufferevent_disable(c->upstream, EV_READ);
	if (!output_pending(c->client) && !output_pending(c->upstream)) {
		conn_free(c);
		return;
	}
	/* The write callbacks free the connection once both outputs are
	 * empty; the timer bounds how long a peer that stopped reading can
	 * hold it. */
	if (c->client)
		bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
	if (c->upstream)
		bufferevent_setwatermark(c->upstream, EV_WRITE, 0, 0);
	c->linger = evtimer_new(c->gw->base, linger_cb, c);
	if (!c->linger) {
		conn_free(c);
		return;
	}
	struct timeval tv;
	ms_to_timeval(GW_LINGER_MS, &tv);
	evtimer_add(c->linger, &tv);
}

/* ---- refusals ------------------------------------------------------------- */

static const char *http_phrase(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 411:
		return "Length Required";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 504:
		return "Gateway Timeout";
	}
	return "Error";
}

static void socks_reply(gw_conn *c, uint8_t code)
{
	uint8_t rep[10];
	moat_socks5_reply(code, rep);
	bufferevent_write(c->client, rep, sizeof(rep));
}

/* Refuses the request with c->reason (already set): an HTTP status with the
 * reason in a header and in the body, or a SOCKS5 reply code, depending on
 * how the client spoke. */
static void conn_refuse(gw_conn *c, int http_status, uint8_t socks_code)
{
	c->allowed = false;
	if (c->state == ST_RELAY || c->state == ST_RELAY_HTTP || c->state == ST_TLS_PEEK) {
		/* The client was already told the tunnel is open, or the
		 * response has begun: the only refusal left is to cut the
		 * connection (and log why). */
	} else if (c->proto == PROTO_SOCKS5 && !c->tls_inner) {
		socks_reply(c, socks_code);
	} else if (c->proto == PROTO_TRANSPARENT && !c->tls_inner) {
		/* A redirected TLS client cannot read an HTTP answer: the
		 * refusal is the cut (and the log says why). */
	} else {
		evbuffer_add_printf(bufferevent_get_output(c->client),
				    "HTTP/1.1 %d %s\r\n"
				    "Content-Type: text/plain; charset=utf-8\r\n"
				    "Content-Length: %zu\r\n"
				    "Connection: close\r\n"
				    "X-Moat-Reason: %s\r\n"
				    "\r\n"
				    "%s\n",
				    http_status, http_phrase(http_status), strlen(c->reason) + 1, c->reason,
				    c->reason);
	}
	conn_close(c);
}

/* ---- the decision ---------------------------------------------------------- */

/* Asks the rules about c->host/c->port (and the method and path when
 * visible), then the budgets. On refusal the client has its answer and the
 * connection is closing; returns false. */
static bool conn_decide(gw_conn *c)
{
	moat_gateway *gw = c->gw;

	/* A placeholder in a tunnel's host name (a DNS name the gateway would
	 * resolve), or anywhere in a plain HTTP request, is misuse: values go
	 * only into terminated TLS. */
	if (gw->secrets && !secrets_check(c, c->proto == PROTO_HTTP && c->http ? moat_http_parser_request(c->http) : NULL, false)) {
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	c->rules = moat_netrules_slot_get(&gw->rules);
	if (!c->rules) {
		set_reason(c, "moat: this sandbox has no network rules; all egress is denied");
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	moat_net_request req = {
		.host = &c->host,
		.port = c->port,
		.method = c->method,
		.path = c->path,
	};
	moat_net_decision dec;
	moat_netrules_decide(c->rules, &req, &dec);
	/* A tunnel to a host whose TLS is terminated opens when some request
	 * inside could be allowed; each is decided once it is read. */
	c->terminate = c->proto != PROTO_HTTP && !c->method && gw->tls_ca && tls_terminated(gw, &c->host);
	if (c->terminate && moat_netrules_host_reachable(c->rules, &c->host, c->port)) {
		dec.action = MOAT_NET_ALLOW;
		snprintf(dec.reason, sizeof(dec.reason), "%s:%u is terminated; each request is decided", c->host.name,
			 (unsigned)c->port);
	}
	if (dec.action == MOAT_NET_ALLOW && c->method_override) {
		/* Many frameworks act on a method override header as if it
		 * were the method: the request must be allowed as that method
		 * too, or it could do what the rules only allow by another. */
		moat_net_decision d2;
		req.method = c->method_override;
		moat_netrules_decide(c->rules, &req, &d2);
		if (d2.action != MOAT_NET_ALLOW) {
			dec = d2;
			snprintf(dec.reason, sizeof(dec.reason), "the method override %.32s is not allowed: %s",
				 c->method_override, d2.reason);
			dec.action = MOAT_NET_DENY;
		}
	}
	c->rule = dec.rule;
	switch (dec.action) {
	case MOAT_NET_ALLOW:
		break;
	case MOAT_NET_APPROVE:
		/* Approvals belong to a session's keeper; a gateway without one
		 * cannot hold a request for a person, so it refuses, saying so. */
		if (c->method_override) {
			/* A person would approve one method while the server
			 * acted on another. */
			set_reason(c, "moat: %s %s on %s needs a person's approval, which a request with a method override "
				      "(%.32s) cannot have: send it as the method it means",
				   c->method, c->path ? c->path : "", c->host.name, c->method_override);
			conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
			return false;
		}
		if (gw->approvals)
			return conn_hold(c, false);
		set_reason(c,
			   "moat: %s needs a person's approval, and this sandbox has no approval queue "
			   "(only a session's can hold it: moat session create)",
			   c->host.name);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	default:
		set_reason(c, "moat: %s", dec.reason);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	set_reason(c, "%s", dec.reason);
	return conn_go(c);
}

/* The rules let c through (or a person did): budgets, then on its way. */
static bool conn_go(gw_conn *c)
{
	moat_gateway *gw = c->gw;

	/* A tunnel may carry something other than TLS only on a port the
	 * policy opened for it: 443 always carries TLS, and plain HTTP on 80
	 * goes through the proxy proper, where methods and paths are visible. */
	c->raw_tunnel_ok = false;
	for (size_t i = 0; i < gw->n_raw_ports; i++)
		c->raw_tunnel_ok = c->raw_tunnel_ok || gw->raw_ports[i] == c->port;
	if (c->port == 80 || c->port == 443)
		c->raw_tunnel_ok = false;

	char why[MOAT_BUDGET_REASON_MAX];
	if (!moat_budget_conn_open(gw->budget, c->dest, why, sizeof(why))) {
		set_reason(c, "moat: %s", why);
		conn_refuse(c, 429, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	c->budget_open = true;
	if (c->terminate) {
		/* Nothing goes upstream before a request inside is allowed:
		 * the client is told the tunnel is open, and its ClientHello
		 * is checked as any tunnel's. */
		if (c->proto == PROTO_CONNECT)
			bufferevent_write(c->client, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
		else if (c->proto == PROTO_SOCKS5)
			socks_reply(c, MOAT_SOCKS5_REP_SUCCEEDED);
		/* A redirected client believes it is connected already: it
		 * is told nothing, and its ClientHello waits in the buffer. */
		tls_peek_start(c);
		return true;
	}
	if (!moat_budget_request(gw->budget, c->dest, moat__now_ns(), why, sizeof(why)) ||
	    (c->bytes_up && !moat_budget_bytes(gw->budget, c->dest, c->bytes_up, 0, why, sizeof(why)))) {
		set_reason(c, "moat: %s", why);
		conn_refuse(c, 429, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	conn_resolve(c);
	return true;
}

/* ---- resolution and the SSRF guard ----------------------------------------- */

/* Takes the candidate addresses, refusing all of them when any one is in a
 * range the policy does not open: a name that answers with a private
 * address next to a public one is a rebinding attempt, not a choice. */
static void conn_addrs_ready(gw_conn *c)
{
	if (c->n_addrs == 0) {
		set_reason(c, "moat: %s does not resolve to any address", c->host.name);
		conn_refuse(c, 502, MOAT_SOCKS5_REP_HOST_UNREACHABLE);
		return;
	}
	for (size_t i = 0; i < c->n_addrs; i++) {
		struct sockaddr_storage ss;
		socklen_t sl;
		moat_addr_to_sockaddr(&c->addrs[i], c->port, &ss, &sl);
		const char *why = NULL;
		if (!moat_netrules_addr_allowed(c->rules, (struct sockaddr *)&ss, &why)) {
			char a[MOAT_ADDR_STRLEN];
			moat_addr_format(&c->addrs[i], a, sizeof(a));
			snprintf(c->address, sizeof(c->address), "%s", a);
			if (c->host.is_literal) {
				set_reason(c, "moat: %s is %s; add it to network.allow_private to reach it", a,
					   why ? why : "a special-purpose address");
			} else {
				/* The client learns the class of the answer, never the
				 * answer: a refusal that quoted it would let a sandbox
				 * read any name's DNS records through the gateway. The
				 * address is in the event (c->address) for the host. */
				const char *ignored;
				moat_addr_class cls = moat_addr_classify_addr(&c->addrs[i], &ignored);
				set_reason(c,
					   "moat: %s resolves to a special-purpose address (%s); add its range to network.allow_private to reach it",
					   c->host.name, moat_addr_class_to_string(cls));
			}
			conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
			return;
		}
	}
	c->addr_idx = 0;
	conn_connect_next(c);
}

static void dns_cb(int result, struct evutil_addrinfo *res, void *arg)
{
	if (result == EVUTIL_EAI_CANCEL) {
		/* c is gone (conn_free cancels); do not touch it. */
		if (res)
			evutil_freeaddrinfo(res);
		return;
	}
	gw_conn *c = arg;
	c->dns_req = NULL;
	if (result != 0) {
		set_reason(c, "moat: %s does not resolve (%s)", c->host.name, evutil_gai_strerror(result));
		conn_refuse(c, 502, MOAT_SOCKS5_REP_HOST_UNREACHABLE);
		if (res)
			evutil_freeaddrinfo(res);
		return;
	}
	for (struct evutil_addrinfo *ai = res; ai && c->n_addrs < GW_MAX_ADDRS; ai = ai->ai_next) {
		moat_addr a;
		if (moat_addr_from_sockaddr(ai->ai_addr, &a) < 0)
			continue;
		bool dup = false;
		for (size_t i = 0; i < c->n_addrs; i++)
			dup = dup || moat_addr_equal(&c->addrs[i], &a);
		if (!dup)
			c->addrs[c->n_addrs++] = a;
	}
	if (res)
		evutil_freeaddrinfo(res);
	conn_addrs_ready(c);
}

static int gw_dns_base(moat_gateway *gw)
{
	if (gw->dns)
		return 0;
	/* The name the rules judged is the name resolved: no search domains
	 * that could turn "internal" into "internal.corp.example". */
	if (gw->resolver) {
		gw->dns = evdns_base_new(gw->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (!gw->dns)
			return -ENOMEM;
		if (evdns_base_nameserver_ip_add(gw->dns, gw->resolver) != 0)
			return -EINVAL;
	} else {
		gw->dns = evdns_base_new(gw->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (!gw->dns)
			return -ENOMEM;
	}
	evdns_base_search_clear(gw->dns);
	evdns_base_set_option(gw->dns, "timeout:", "5");
	evdns_base_set_option(gw->dns, "attempts:", "2");
	return 0;
}

/* Finds the addresses of c->host: the literal itself, network.hosts, or one
 * DNS lookup. Whatever the answer, it is checked once and then connected
 * to; the gateway never looks the name up a second time. */
static void conn_resolve(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	c->state = ST_RESOLVING;
	c->n_addrs = 0;
	if (c->host.is_literal) {
		c->addrs[c->n_addrs++] = c->host.addr;
		conn_addrs_ready(c);
		return;
	}
	for (size_t i = 0; i < gw->n_hosts && c->n_addrs < GW_MAX_ADDRS; i++)
		if (strcmp(gw->hosts[i].name, c->host.name) == 0)
			c->addrs[c->n_addrs++] = gw->hosts[i].addr;
	if (c->n_addrs > 0) {
		conn_addrs_ready(c);
		return;
	}
	int r = gw_dns_base(gw);
	if (r < 0) {
		set_reason(c, "moat: the gateway's resolver %s cannot be used", gw->resolver ? gw->resolver : "");
		conn_refuse(c, 502, MOAT_SOCKS5_REP_FAILURE);
		return;
	}
	struct evutil_addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
	};
	gw->stats.dns_queries++;
	/* The callback may run before evdns_getaddrinfo returns (an answer
	 * from the hosts file); it then frees nothing it did not own, and the
	 * returned request is NULL. */
	struct evdns_getaddrinfo_request *req = evdns_getaddrinfo(gw->dns, c->host.name, NULL, &hints, dns_cb, c);
	if (req && c->state == ST_RESOLVING)
		c->dns_req = req;
}

/* ---- upstream ------------------------------------------------------------- */

static void conn_connect_next(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	if (c->upstream) {
		bufferevent_free(c->upstream);
		c->upstream = NULL;
	}
	if (c->addr_idx >= c->n_addrs) {
		set_reason(c, "moat: cannot connect to %s port %u", c->host.name, (unsigned)c->port);
		conn_refuse(c, 502, MOAT_SOCKS5_REP_REFUSED);
		return;
	}
	const moat_addr *a = &c->addrs[c->addr_idx++];
	c->up_addr = *a;
	moat_addr_format(a, c->address, sizeof(c->address));
	struct sockaddr_storage ss;
	socklen_t sl;
	moat_addr_to_sockaddr(a, c->port, &ss, &sl);

	/* The socket is made here rather than by libevent so that it is
	 * close-on-exec from birth. */
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0) {
		conn_connect_next(c);
		return;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->upstream = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->upstream) {
		close(fd);
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, MOAT_SOCKS5_REP_FAILURE);
		return;
	}
	bufferevent_setcb(c->upstream, upstream_read_cb, write_cb, upstream_event_cb, c);
	/* A pending connect counts as a pending write for the timeout. */
	bufferevent_set_timeouts(c->upstream, NULL, &gw->connect_timeout);
	c->state = ST_CONNECTING;
	if (bufferevent_socket_connect(c->upstream, (struct sockaddr *)&ss, (int)sl) < 0)
		conn_connect_next(c);
}

/* A request head being built: flat memory the gateway owns, because it
 * may hold a secret's value. Growing it wipes the old block; the finished
 * head goes to the upstream's output as a reference (evbuffer_add_reference)
 * whose release wipes it too, so no copy of the value is left in freed
 * memory once the bytes have been encrypted and sent. */
typedef struct gw_head {
	char *p;
	size_t len, cap;
	bool oom;
} gw_head;

static void head_add(gw_head *h, const char *fmt, ...) _printf_(2, 3);
static void head_add(gw_head *h, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !h->oom; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(h->p ? h->p + h->len : NULL, h->p ? h->cap - h->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			h->oom = true;
			return;
		}
		if (h->p && (size_t)n < h->cap - h->len) {
			h->len += (size_t)n;
			return;
		}
		size_t cap = h->cap ? h->cap : 1024;
		while (cap - h->len <= (size_t)n)
			cap *= 2;
		char *np = malloc(cap);
		if (!np) {
			h->oom = true;
			return;
		}
		if (h->p) {
			memcpy(np, h->p, h->len);
			explicit_bzero(h->p, h->cap);
			free(h->p);
		}
		h->p = np;
		h->cap = cap;
	}
}

static void head_wipe_cb(const void *data, size_t len, void *extra)
{
	(void)data;
	explicit_bzero(extra, len);
	free(extra);
}

static void head_discard(gw_head *h)
{
	if (h->p) {
		explicit_bzero(h->p, h->cap);
		free(h->p);
	}
	h->p = NULL;
}

/* The request head as the upstream server gets it, written to the
 * upstream: origin-form target, the client's headers without the
 * hop-by-hop ones (RFC 9110 section 7.6.1) and without
 * Proxy-Authorization, which is for this proxy and must never leak to a
 * server. A plain HTTP request asks for "Connection: close", since each
 * gets a fresh upstream connection; one inside terminated TLS leaves the
 * connection open for the pool. */
static int http_send_upstream_head(gw_conn *c, const moat_http_request *r)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
		"te", "trailer", "transfer-encoding", "upgrade", "http2-settings",
		/* Not hop-by-hop, but a path the rules never saw: IIS, Symfony
		 * and some Spring set-ups route by these instead of the request
		 * line. Only a reverse proxy in front of the server has any
		 * business sending them. */
		"x-original-url", "x-rewrite-url",
	};
	const char *conn_hdr = moat_http_request_header(r, "Connection");

	gw_head h = {0};
	head_add(&h, "%s %s HTTP/1.1\r\n", r->method, r->path);
	bool have_host = false;
	for (size_t i = 0; i < r->n_headers; i++) {
		const char *name = r->headers[i].name;
		bool drop = false;
		for (size_t j = 0; j < ELEMENTSOF(hop) && !drop; j++)
			drop = strcasecmp(name, hop[j]) == 0;
		/* Headers the client named in Connection are hop-by-hop too. */
		if (!drop && conn_hdr) {
			size_t nl = strlen(name);
			for (const char *p = conn_hdr; *p && !drop;) {
				p += strspn(p, " \t,");
				size_t tl = strcspn(p, " \t,");
				drop = tl == nl && strncasecmp(p, name, nl) == 0;
				p += tl;
			}
		}
		for (char **d = c->inj_drop; d && *d && !drop; d++)
			drop = strcasecmp(name, *d) == 0;
		if (drop)
			continue;
		if (strcasecmp(name, "host") == 0) {
			have_host = true;
		}
		const char *value = i < c->n_hdr_new && c->hdr_new[i] ? c->hdr_new[i] : r->headers[i].value;
		head_add(&h, "%s: %s\r\n", name, value);
	}
	for (char **l = c->inj_lines; l && *l; l++)
		head_add(&h, "%s\r\n", *l);
	/* A chunked body is forwarded chunked, exactly as framed: the
	 * gateway follows the framing to its end (moat_chunked_feed). */
	if (r->body == MOAT_HTTP_BODY_CHUNKED)
		head_add(&h, "Transfer-Encoding: chunked\r\n");
	if (!have_host) {
		bool v6 = c->host.is_literal && c->host.addr.family == AF_INET6;
		if (c->port == 80)
			head_add(&h, "Host: %s%s%s\r\n", v6 ? "[" : "", c->host.name, v6 ? "]" : "");
		else
			head_add(&h, "Host: %s%s%s:%u\r\n", v6 ? "[" : "", c->host.name, v6 ? "]" : "",
				 (unsigned)c->port);
	}
	head_add(&h, "%s\r\n", c->keep_alive ? "" : "Connection: close\r\n");
	if (h.oom) {
		head_discard(&h);
		return -ENOMEM;
	}
	/* What a cut-short vsnprintf left past the end is wiped now; the
	 * reference's release wipes the rest. */
	explicit_bzero(h.p + h.len, h.cap - h.len);
	if (evbuffer_add_reference(bufferevent_get_output(c->upstream), h.p, h.len, head_wipe_cb, h.p) < 0) {
		head_discard(&h);
		return -ENOMEM;
	}
	return 0;
}

/* Moves what from's input holds (at most limit bytes) to to's output,
 * counting it against the budgets, and pauses from while to is backed up.
 * Returns false when the connection was closed. */
static bool relay_unecho(gw_conn *c, struct bufferevent *from, struct bufferevent *to, uint64_t limit);

static bool relay(gw_conn *c, struct bufferevent *from, struct bufferevent *to, bool up, uint64_t limit)
{
	if (!up && c->n_echo)
		return relay_unecho(c, from, to, limit);
	struct evbuffer *in = bufferevent_get_input(from);
	size_t n = evbuffer_get_length(in);
	if (n > limit)
		n = (size_t)limit;
	if (n == 0)
		return true;
	if (up && c->n_watch && c->state == ST_RELAY_HTTP && !body_watch(c, in, n))
		return false;
	char why[MOAT_BUDGET_REASON_MAX];
	if (!moat_budget_bytes(c->gw->budget, c->dest, up ? n : 0, up ? 0 : n, why, sizeof(why))) {
		set_reason(c, "moat: %s", why);
		conn_refuse(c, 429, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	evbuffer_remove_buffer(in, bufferevent_get_output(to), n);
	if (up) {
		c->bytes_up += n;
		__atomic_fetch_add(&c->gw->stats.bytes_up, n, __ATOMIC_RELAXED);
	} else {
		c->bytes_down += n;
		__atomic_fetch_add(&c->gw->stats.bytes_down, n, __ATOMIC_RELAXED);
	}
	if (evbuffer_get_length(bufferevent_get_output(to)) >= GW_HIGH_WATER) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, GW_HIGH_WATER / 2, 0);
	}
	return true;
}

/* The request's body has gone whole. What follows it is a second request:
 * on a plain connection it is dropped (the rules never saw it); inside
 * terminated TLS it is the next request, read and decided on its own once
 * the response to this one has ended, so it waits, unread. */
static void body_done(gw_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	if (c->keep_alive) {
		c->req_done = true;
		bufferevent_disable(c->client, EV_READ);
		return;
	}
	evbuffer_drain(in, evbuffer_get_length(in));
}

/* Forwards the request body, never more than it announced. */
static bool relay_body(gw_conn *c)
{
	uint64_t before = c->bytes_up;
	if (c->chunked) {
		/* Only what the framing says belongs to the body goes on; the
		 * parser sees each byte once, as it leaves. */
		struct evbuffer *in = bufferevent_get_input(c->client);
		int r = MOAT_PARSE_MORE;
		while (r == MOAT_PARSE_MORE && evbuffer_get_length(in) > 0) {
			struct evbuffer_iovec v[8];
			int nv = evbuffer_peek(in, -1, NULL, v, ELEMENTSOF(v));
			size_t body = 0;
			moat_error err = {0};
			for (int i = 0; i < nv && i < (int)ELEMENTSOF(v) && r == MOAT_PARSE_MORE; i++) {
				size_t used = 0;
				r = moat_chunked_feed(&c->chunks, v[i].iov_base, v[i].iov_len, &used, &err);
				body += used;
			}
			if (r < 0) {
				set_reason(c, "moat: %s", err.msg);
				conn_refuse(c, 400, 0);
				return false;
			}
			if (body && !relay(c, c->client, c->upstream, true, body))
				return false;
		}
		if (r == MOAT_PARSE_DONE) {
			c->chunked = false;
			c->body_left = 0;
			body_done(c);
		}
		return true;
	}
	if (c->body_left > 0) {
		if (!relay(c, c->client, c->upstream, true, c->body_left))
			return false;
		c->body_left -= c->bytes_up - before;
	}
	if (c->body_left == 0)
		body_done(c);
	return true;
}

static void response_done(gw_conn *c);

/* Moves the upstream's answer to the client. Inside terminated TLS the
 * response is followed (httpresp.h) so that only its own bytes go, and
 * its end is known: the connection may then carry the next request. A
 * response that cannot be followed is relayed until the server closes,
 * and ends both connections. False when the connection was closed. */
static bool relay_down(gw_conn *c)
{
	if (!c->resp || c->resp_untracked)
		return relay(c, c->upstream, c->client, false, UINT64_MAX);
	struct evbuffer *in = bufferevent_get_input(c->upstream);
	size_t n = evbuffer_get_length(in);
	while (!c->resp_end && !c->resp_untracked && c->resp_fed < n) {
		struct evbuffer_ptr pos;
		struct evbuffer_iovec v[8];
		if (evbuffer_ptr_set(in, &pos, c->resp_fed, EVBUFFER_PTR_SET) < 0)
			break;
		int nv = evbuffer_peek(in, (ev_ssize_t)(n - c->resp_fed), &pos, v, ELEMENTSOF(v));
		for (int i = 0; i < nv && i < (int)ELEMENTSOF(v); i++) {
			size_t used = 0;
			moat_error err = {0};
			int r = moat_http_resp_feed(c->resp, v[i].iov_base, v[i].iov_len, &used, &err);
			c->resp_fed += used;
			if (r == MOAT_PARSE_DONE) {
				c->resp_end = true;
				break;
			}
			if (r < 0) {
				c->resp_untracked = true;
				break;
			}
		}
	}
	size_t before = c->resp_fed;
	uint64_t down = c->bytes_down;
	if (!relay(c, c->upstream, c->client, false, c->resp_untracked ? UINT64_MAX : before))
		return false;
	uint64_t moved = c->bytes_down - down;
	c->resp_fed = moved >= before ? 0 : before - (size_t)moved;
	if (c->resp_end && c->resp_fed == 0) {
		response_done(c);
		return false;
	}
	return true;
}

static void relay_start(gw_conn *c, gw_state state)
{
	c->state = state;
	bufferevent_set_timeouts(c->client, &c->gw->idle_timeout, &c->gw->idle_timeout);
	bufferevent_set_timeouts(c->upstream, &c->gw->idle_timeout, &c->gw->idle_timeout);
	bufferevent_enable(c->upstream, EV_READ | EV_WRITE);
	bufferevent_enable(c->client, c->client_eof ? EV_WRITE : EV_READ | EV_WRITE);
	if (state == ST_RELAY_HTTP) {
		if (!relay_body(c))
			return;
	} else if (!relay(c, c->client, c->upstream, true, UINT64_MAX)) {
		return;
	}
	(void)relay_down(c);
}

/* Checks the first bytes of a tunnel: a TLS ClientHello whose server name is
 * the host that was allowed. Returns when more bytes are needed. */
static void tunnel_peek(gw_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return;
	if (len > GW_MAX_PEEK)
		len = GW_MAX_PEEK;
	const uint8_t *data = evbuffer_pullup(in, (ssize_t)len);
	if (!data) {
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, MOAT_SOCKS5_REP_FAILURE);
		return;
	}
	moat_tls_hello hello;
	moat_error err = {0};
	int r = moat_tls_hello_parse(data, len, &hello, &err);
	if (r == MOAT_PARSE_MORE) {
		if (len >= GW_MAX_PEEK) {
			set_reason(c, "moat: the TLS ClientHello to %s is larger than %u bytes", c->host.name, GW_MAX_PEEK);
			conn_refuse(c, 400, MOAT_SOCKS5_REP_FAILURE);
		}
		return;
	}
	if (r < 0) {
		set_reason(c, "moat: the tunnel to %s port %u does not start with a TLS ClientHello (%s); only TLS tunnels are allowed there",
			   c->host.name, (unsigned)c->port, err.msg);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return;
	}
	if (hello.has_ech) {
		/* With ECH the real server name travels encrypted; the outer
		 * one proves nothing about where the tunnel leads. */
		set_reason(c, "moat: the TLS ClientHello to %s uses Encrypted Client Hello, which hides the server name", c->host.name);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return;
	}
	if (hello.has_sni) {
		c->sni = strdup(hello.sni);
		moat_host sni;
		moat_error herr = {0};
		/* The SNI goes to the upstream as sent, so it must be spelt as
		 * it is judged: "up%2etest" is not up.test to a TLS server. */
		if (moat_host_wire_check(hello.sni, strlen(hello.sni), &herr) < 0) {
			set_reason(c, "moat: the TLS server name: %s", herr.msg);
			if (c->sni)
				set_raw_host(c, c->sni, strlen(c->sni));
			conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
			return;
		}
		if (moat_host_normalize(hello.sni, strlen(hello.sni), &sni, &herr) < 0 ||
		    strcmp(sni.name, c->host.name) != 0) {
			set_reason(c, "moat: the TLS server name %s does not match the tunnel's host %s (domain fronting is refused)",
				   c->sni ? c->sni : "?", c->host.name);
			if (c->sni)
				set_raw_host(c, c->sni, strlen(c->sni));
			conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
			return;
		}
	} else if (!c->host.is_literal) {
		set_reason(c, "moat: the TLS ClientHello to %s names no server; the gateway cannot tell where it leads", c->host.name);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return;
	}
	if (c->terminate) {
		tls_accept(c);
		return;
	}
	relay_start(c, ST_RELAY);
}

static void upstream_connected(gw_conn *c)
{
	const moat_http_request *r;
	if (c->terminate) {
		if (c->state == ST_TLS_UPSTREAM)
			tls_upstream_ready(c);
		else
			tls_upstream_start(c);
		return;
	}
	switch (c->proto) {
	case PROTO_HTTP:
		r = moat_http_parser_request(c->http);
		if (http_send_upstream_head(c, r) < 0) {
			set_reason(c, "moat: out of memory");
			conn_refuse(c, 502, MOAT_SOCKS5_REP_FAILURE);
			return;
		}
		c->body_left = r->body == MOAT_HTTP_BODY_LENGTH ? r->content_length : 0;
		c->chunked = r->body == MOAT_HTTP_BODY_CHUNKED;
		moat_chunked_init(&c->chunks);
		relay_start(c, ST_RELAY_HTTP);
		return;
	case PROTO_CONNECT:
		bufferevent_write(c->client, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
		break;
	case PROTO_SOCKS5:
		socks_reply(c, MOAT_SOCKS5_REP_SUCCEEDED);
		break;
	case PROTO_TRANSPARENT:
		/* The client believes it is connected already; its
		 * ClientHello waits in the input buffer. */
		break;
	}
	bufferevent_set_timeouts(c->upstream, NULL, NULL);
	/* Nothing from upstream reaches the client before the ClientHello
	 * has been checked. */
	bufferevent_disable(c->upstream, EV_READ);
	if (c->raw_tunnel_ok) {
		relay_start(c, ST_RELAY);
		return;
	}
	/* The ClientHello gets a deadline of its own, from the 200 on and
	 * twice as long: the client could not send it before, and a loaded
	 * client opening many tunnels at once may take a while to get to it. */
	if (c->deadline) {
		struct timeval twice = c->gw->head_timeout;
		twice.tv_sec *= 2;
		twice.tv_usec *= 2;
		if (twice.tv_usec >= 1000000) {
			twice.tv_sec += 1;
			twice.tv_usec -= 1000000;
		}
		evtimer_add(c->deadline, &twice);
	}
	c->state = ST_TLS_PEEK;
	tunnel_peek(c);
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
	gw_conn *c = arg;
	(void)bev;
	if (c->state == ST_RELAY || c->state == ST_RELAY_HTTP)
		(void)relay_down(c);
}

/* Either side's output drained below its low-water mark: while closing,
 * the connection ends once both are empty; while relaying, the other side
 * may be read again (relay() paused it). */
static void write_cb(struct bufferevent *bev, void *arg)
{
	gw_conn *c = arg;
	if (c->state == ST_CLOSING) {
		if (!output_pending(c->client) && !output_pending(c->upstream))
			conn_free(c);
		return;
	}
	struct bufferevent *other = bev == c->client ? c->upstream : c->client;
	if (bev == c->upstream && c->shut_upstream_pending &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		c->shut_upstream_pending = false;
		(void)shutdown(bufferevent_getfd(bev), SHUT_WR);
	}
	if ((c->state == ST_RELAY || c->state == ST_RELAY_HTTP) && other) {
		bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
		/* A client whose request is whole is not read: what it sends
		 * now is the next request, which waits for this response. */
		if (!(other == c->client && (c->client_eof || c->req_done)))
			bufferevent_enable(other, EV_READ);
	}
}

static void upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	gw_conn *c = arg;
	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		c->allowed = true;
		upstream_connected(c);
		return;
	}
	if (c->state == ST_TLS_UPSTREAM) {
		/* The upstream failed its verification, or the handshake: the
		 * client gets a 502 with the reason, never the request sent
		 * anywhere else or in the clear. */
		SSL *ssl = bufferevent_openssl_get_ssl(bev);
		long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
		unsigned long e = bufferevent_get_openssl_error(bev);
		char ebuf[160] = "";
		if (e)
			ERR_error_string_n(e, ebuf, sizeof(ebuf));
		if (v != X509_V_OK)
			set_reason(c, "moat: the upstream %s failed TLS verification: %s", c->host.name,
				   X509_verify_cert_error_string(v));
		else
			set_reason(c, "moat: the TLS handshake with the upstream %s failed%s%s", c->host.name,
				   ebuf[0] ? ": " : "", ebuf);
		ERR_clear_error();
		conn_refuse(c, 502, 0);
		return;
	}
	if (c->state == ST_CONNECTING) {
		if (what & BEV_EVENT_TIMEOUT)
			set_reason(c, "moat: connecting to %s port %u timed out", c->host.name, (unsigned)c->port);
		else
			set_reason(c, "moat: cannot connect to %s port %u: %s", c->host.name, (unsigned)c->port,
				   evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		if (c->addr_idx < c->n_addrs) {
			conn_connect_next(c);
			return;
		}
		conn_refuse(c, (what & BEV_EVENT_TIMEOUT) ? 504 : 502, MOAT_SOCKS5_REP_REFUSED);
		return;
	}
	if (c->state == ST_CLOSING) {
		/* The peer went away while its last bytes were due: nothing
		 * more can be delivered to it. */
		evbuffer_drain(bufferevent_get_output(bev), evbuffer_get_length(bufferevent_get_output(bev)));
		if (!output_pending(c->client))
			conn_free(c);
		return;
	}
	/* A pooled connection the server closed just as this request went
	 * out: nothing of it was answered, so a request without a body is
	 * sent again on a new connection (as browsers and HTTP clients do;
	 * one with a body may have been read in part, and is not). */
	const moat_http_request *rq = c->http ? moat_http_parser_request(c->http) : NULL;
	if (c->reused && c->state == ST_RELAY_HTTP && c->bytes_down == 0 && c->resp_fed == 0 && rq &&
	    rq->body == MOAT_HTTP_BODY_NONE && evbuffer_get_length(bufferevent_get_input(bev)) == 0) {
		bufferevent_free(c->upstream);
		c->upstream = NULL;
		c->reused = false;
		conn_resolve(c);
		return;
	}
	/* EOF or error after the relay began: deliver what is still buffered
	 * to the client, then close. */
	c->upstream_eof = true;
	if (c->state == ST_RELAY || c->state == ST_RELAY_HTTP)
		if (!relay_down(c))
			return;
	if (what & BEV_EVENT_TIMEOUT)
		set_reason(c, "moat: %s was idle for too long", c->host.name);
	conn_close(c);
}

/* ---- the client side -------------------------------------------------------- */

/* A redirected plain-HTTP request: the client spoke to what it took for
 * the server, so it sends origin form, and its Host header must name the
 * host the connection was opened to (the name it resolved through the stub,
 * or the address it connected to): a Host that names another site would
 * have the upstream serve what the rules did not judge. */
static bool transparent_http_target(gw_conn *c, const moat_http_request *req)
{
	if (req->form != MOAT_HTTP_ORIGIN_FORM) {
		set_reason(c, "moat: a redirected connection to %s must carry origin-form requests (GET /path)", c->host.name);
		conn_refuse(c, 400, 0);
		return false;
	}
	if (!moat_http_request_header(req, "Host") || strcmp(req->host.name, c->host.name) != 0 ||
	    req->port != c->port) {
		set_reason(c, "moat: the Host header does not name %s port %u, where the connection was opened",
			   c->host.name, (unsigned)c->port);
		conn_refuse(c, 403, 0);
		return false;
	}
	return true;
}

/* Feeds what the client sent to the request parser. Returns the request
 * once its head is whole, counted in the bytes up (it is what the sandbox
 * sent, and once the destination is known it counts against the byte
 * budgets); NULL while more is needed, or when the head was refused (the
 * connection is then answered, and the caller must leave it). */
static const moat_http_request *read_head(gw_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return NULL;
	const uint8_t *data = evbuffer_pullup(in, (ssize_t)len);
	size_t used = 0;
	moat_error err = {0};
	int r = data ? moat_http_parser_feed(c->http, data, len, &used, &err) : -ENOMEM;
	evbuffer_drain(in, used);
	if (r == MOAT_PARSE_MORE)
		return NULL;
	if (r < 0) {
		set_reason(c, "moat: %s", err.msg[0] ? err.msg : "malformed request");
		conn_refuse(c, r == -E2BIG ? 431 : r == -ENOTSUP ? 501 : 400, 0);
		return NULL;
	}
	const moat_http_request *req = moat_http_parser_request(c->http);
	c->bytes_up += req->head_len;
	__atomic_fetch_add(&c->gw->stats.bytes_up, req->head_len, __ATOMIC_RELAXED);
	return req;
}

static void http_head(gw_conn *c)
{
	const moat_http_request *req = read_head(c);
	if (!req)
		return;
	c->method = strdup(req->method);
	set_raw_host(c, req->host.name, strlen(req->host.name));
	if (req->form == MOAT_HTTP_AUTHORITY_FORM && strcmp(req->method, "CONNECT") == 0) {
		c->proto = PROTO_CONNECT;
		free(c->method);
		c->method = NULL; /* what the tunnel carries is not visible */
		set_host(c, &req->host, req->port);
		conn_decide(c);
		return;
	}
	if (c->transparent && !transparent_http_target(c, req))
		return;
	if (!c->transparent && req->form != MOAT_HTTP_ABSOLUTE_FORM) {
		set_reason(c, "moat: the gateway is a proxy: send requests in absolute form (http://host/path) or use CONNECT");
		conn_refuse(c, 400, 0);
		return;
	}
	if (!c->transparent && strncasecmp(req->target, "http://", 7) != 0) {
		set_reason(c, "moat: only http:// URLs are proxied as requests; use CONNECT for https");
		conn_refuse(c, 400, 0);
		return;
	}
	c->path = strdup(req->path);
	if (!c->transparent)
		set_host(c, &req->host, req->port);

	/* The Host header must name the same place as the URL, or the
	 * upstream server might route the request by the one the rules did
	 * not check. */
	const char *hh = c->transparent ? NULL : moat_http_request_header(req, "Host");
	if (hh) {
		moat_host h;
		uint16_t hp;
		moat_error herr = {0};
		if (moat_authority_parse(hh, strlen(hh), 80, &h, &hp, &herr) < 0 || strcmp(h.name, req->host.name) != 0 ||
		    hp != req->port) {
			set_reason(c, "moat: the Host header does not match the request URL's host %s", req->host.name);
			conn_refuse(c, 400, 0);
			return;
		}
	}
	/* Methods are case-sensitive to servers ("get" is not GET) but not
	 * to the rules: only the spelling the rules mean is forwarded. */
	for (const char *m = req->method; *m; m++)
		if (*m >= 'a' && *m <= 'z') {
			set_reason(c, "moat: the method %s is not in upper case; servers tell methods apart by case", req->method);
			conn_refuse(c, 400, 0);
			return;
		}
	static const char *const overrides[] = {"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"};
	for (size_t i = 0; i < req->n_headers; i++)
		for (size_t j = 0; j < ELEMENTSOF(overrides); j++) {
			if (strcasecmp(req->headers[i].name, overrides[j]) != 0)
				continue;
			const char *v = req->headers[i].value;
			if (c->method_override && strcasecmp(c->method_override, v) != 0) {
				set_reason(c, "moat: the request carries two different method overrides");
				conn_refuse(c, 400, 0);
				return;
			}
			if (!c->method_override && !(c->method_override = strdup(v))) {
				set_reason(c, "moat: out of memory");
				conn_refuse(c, 502, 0);
				return;
			}
		}
	/* An offer to upgrade to cleartext HTTP/2 (Java's HttpClient makes
	 * one on every http:// request) is dropped with the other hop-by-hop
	 * headers: the server never sees it, answers in HTTP/1.1, and the
	 * client carries on in HTTP/1.1, every request still judged. */
	const char *up = moat_http_request_header(req, "Upgrade");
	if (req->upgrade && !(up && strcasecmp(up, "h2c") == 0)) {
		set_reason(c, "moat: protocol upgrades are not proxied; use https:// or wss:// through CONNECT");
		conn_refuse(c, 501, 0);
		return;
	}
	conn_decide(c);
}

static void socks_greeting(gw_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t len = evbuffer_get_length(in);
	const uint8_t *data = evbuffer_pullup(in, (ssize_t)len);
	size_t used = 0;
	bool noauth = false;
	moat_error err = {0};
	int r = moat_socks5_greeting_parse(data, len, &used, &noauth, &err);
	if (r == MOAT_PARSE_MORE)
		return;
	if (r < 0) {
		set_reason(c, "moat: SOCKS5: %s", err.msg);
		conn_close(c);
		return;
	}
	evbuffer_drain(in, used);
	uint8_t rep[2];
	moat_socks5_greeting_reply(noauth, rep);
	bufferevent_write(c->client, rep, sizeof(rep));
	if (!noauth) {
		set_reason(c, "moat: SOCKS5: the client offered no method without authentication");
		conn_close(c);
		return;
	}
	c->state = ST_SOCKS_REQUEST;
	if (evbuffer_get_length(in) > 0)
		client_read_cb(c->client, c);
}

static void socks_request(gw_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client);
	size_t len = evbuffer_get_length(in);
	const uint8_t *data = evbuffer_pullup(in, (ssize_t)len);
	size_t used = 0;
	moat_socks5_request req;
	uint8_t reply = MOAT_SOCKS5_REP_FAILURE;
	moat_error err = {0};
	int r = moat_socks5_request_parse(data, len, &used, &req, &reply, &err);
	if (r == MOAT_PARSE_MORE)
		return;
	if (r < 0) {
		set_reason(c, "moat: SOCKS5: %s", err.msg);
		conn_refuse(c, 0, reply);
		return;
	}
	evbuffer_drain(in, used);
	moat_host h;
	if (req.is_domain) {
		set_raw_host(c, req.domain, strnlen(req.domain, sizeof(req.domain)));
		moat_error herr = {0};
		size_t dl = strnlen(req.domain, sizeof(req.domain));
		if (moat_host_wire_check(req.domain, dl, &herr) < 0 || moat_host_normalize(req.domain, dl, &h, &herr) < 0) {
			c->port = req.port;
			set_reason(c, "moat: %s", herr.msg);
			conn_refuse(c, 0, MOAT_SOCKS5_REP_NOT_ALLOWED);
			return;
		}
	} else {
		memset(&h, 0, sizeof(h));
		h.is_literal = true;
		h.addr = req.addr;
		moat_addr_format(&req.addr, h.name, sizeof(h.name));
	}
	set_host(c, &h, req.port);
	conn_decide(c);
}

/* ---- secrets ------------------------------------------------------------------ */

static void strv_free_wiped(char **v)
{
	for (char **p = v; p && *p; p++)
		explicit_bzero(*p, strlen(*p));
	moat__strv_free(v);
}

static void secrets_clear(gw_conn *c)
{
	for (size_t i = 0; i < c->n_hdr_new; i++)
		if (c->hdr_new[i]) {
			explicit_bzero(c->hdr_new[i], strlen(c->hdr_new[i]));
			free(c->hdr_new[i]);
		}
	free(c->hdr_new);
	c->hdr_new = NULL;
	c->n_hdr_new = 0;
	moat__strv_free(c->inj_drop);
	c->inj_drop = NULL;
	strv_free_wiped(c->inj_lines);
	c->inj_lines = NULL;
	free(c->echo);
	c->echo = NULL;
	c->n_echo = 0;
	free(c->watch);
	c->watch = NULL;
	c->n_watch = 0;
}

/* Whether buf holds the placeholder ph, as is or with its '_' written
 * %5F (a form-encoded body). */
static bool body_holds(const char *buf, size_t len, const char *ph)
{
	size_t pl = strlen(ph);
	if (memmem(buf, len, ph, pl))
		return true;
	char enc[3 * MOAT_PLACEHOLDER_MAX + 1];
	size_t o = 0;
	for (const char *p = ph; *p && o + 4 < sizeof(enc); p++) {
		if (*p == '_') {
			memcpy(enc + o, "%5F", 3);
			o += 3;
		} else {
			enc[o++] = *p;
		}
	}
	return memmem(buf, len, enc, o) != NULL;
}

/* Looks at the next n bytes of a request body before they go upstream: a
 * watched placeholder in them ends the request as misuse. The tail of what
 * went before is searched with them, so a placeholder cut across two reads
 * is found. False when the connection was ended. */
/* The payload bytes of a chunked body's next n framed bytes, into out
 * (room for n); returns how many. Lenient: the strict check of the framing
 * is moat_chunked_feed's, which runs on the same bytes. */
static size_t dechunk(gw_conn *c, const char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = in[i];
		switch (c->bw_state) {
		case 0:
			if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')) {
				unsigned d = ch <= '9' ? (unsigned)(ch - '0') : (unsigned)((ch | 0x20) - 'a' + 10);
				c->bw_left = c->bw_left < (UINT64_MAX >> 4) ? c->bw_left * 16 + d : UINT64_MAX;
				break;
			}
			c->bw_state = 1;
			/* fall through */
		case 1:
			if (ch == '\n')
				c->bw_state = c->bw_left ? 2 : 4;
			break;
		case 2: {
			size_t take = n - i < c->bw_left ? n - i : (size_t)c->bw_left;
			memcpy(out + o, in + i, take);
			o += take;
			c->bw_left -= take;
			i += take - 1;
			if (c->bw_left == 0)
				c->bw_state = 3;
			break;
		}
		case 3:
			if (ch == '\n')
				c->bw_state = 0;
			break;
		default:
			break;
		}
	}
	return o;
}

static bool body_watch(gw_conn *c, struct evbuffer *in, size_t n)
{
	const char *framed = (const char *)evbuffer_pullup(in, (ssize_t)n);
	if (!framed)
		return true;
	_cleanup_free_ char *payload = NULL;
	const char *data = framed;
	if (c->chunked) {
		if (!(payload = malloc(n ? n : 1))) {
			set_reason(c, "moat: out of memory");
			conn_refuse(c, 502, 0);
			return false;
		}
		n = dechunk(c, framed, n, payload);
		data = payload;
	}
	moat_secrets *ss = c->gw->secrets;
	size_t keep = sizeof(c->body_tail) / 2;
	for (size_t w = 0; w < c->n_watch; w++) {
		const char *ph = moat_secrets_placeholder(ss, c->watch[w]);
		/* The seam: the tail and the first bytes of this read. */
		char seam[sizeof(c->body_tail) + 3 * MOAT_PLACEHOLDER_MAX];
		size_t head = n < sizeof(seam) - c->body_tail_len ? n : sizeof(seam) - c->body_tail_len;
		memcpy(seam, c->body_tail, c->body_tail_len);
		memcpy(seam + c->body_tail_len, data, head);
		if (body_holds(data, n, ph) || body_holds(seam, c->body_tail_len + head, ph)) {
			const moat_secret *s = moat_secrets_entry(ss, c->watch[w]);
			c->misuse = true;
			name_secret(c, s->name);
			set_reason(c, "moat: the placeholder of the secret %s is in a request body to %s, which it is not bound to",
				   s->name, c->host.name);
			conn_refuse(c, 403, 0);
			return false;
		}
	}
	/* The new tail: the last bytes of the tail and this read. */
	if (n >= keep) {
		memcpy(c->body_tail, data + n - keep, keep);
		c->body_tail_len = keep;
	} else {
		size_t from_old = c->body_tail_len + n > keep ? keep - n : c->body_tail_len;
		memmove(c->body_tail, c->body_tail + c->body_tail_len - from_old, from_old);
		memcpy(c->body_tail + from_old, data, n);
		c->body_tail_len = from_old + n;
	}
	return true;
}

/* Whether text holds needle, also percent-encoded (a URL may carry the
 * placeholder as moat%5Fph%5F...). */
static bool holds(const char *text, const char *needle)
{
	if (!text)
		return false;
	if (strcasestr(text, needle))
		return true;
	if (!strchr(text, '%'))
		return false;
	char dec[8192];
	size_t o = 0;
	for (const char *p = text; *p && o + 1 < sizeof(dec); p++) {
		unsigned v;
		if (p[0] == '%' && p[1] && p[2] && sscanf(p + 1, "%2x", &v) == 1) {
			dec[o++] = (char)v;
			p += 2;
		} else {
			dec[o++] = *p;
		}
	}
	dec[o] = '\0';
	return strcasestr(dec, needle) != NULL;
}

static void name_secret(gw_conn *c, const char *name)
{
	size_t l = strlen(c->secret_names);
	if (strstr(c->secret_names, name))
		return;
	snprintf(c->secret_names + l, sizeof(c->secret_names) - l, "%s%s", l ? "," : "", name);
}

/* Every secret against one request (req NULL: a tunnel's host name only):
 * the values to inject are set up in c, and a placeholder where it must
 * not go, an expired or used-up secret refuse the request with the reason
 * in c (true: go on). Decided by secrets.h; this only finds placeholders
 * and rewrites headers. */
static bool secrets_check(gw_conn *c, const moat_http_request *req, bool tls)
{
	moat_secrets *ss = c->gw->secrets;
	size_t n = moat_secrets_count(ss);
	if (!n)
		return true;
	if (req && !c->hdr_new && req->n_headers) {
		c->hdr_new = calloc(req->n_headers, sizeof(char *));
		if (!c->hdr_new) {
			set_reason(c, "moat: out of memory");
			return false;
		}
		c->n_hdr_new = req->n_headers;
	}
	for (size_t i = 0; i < n; i++) {
		const moat_secret *s = moat_secrets_entry(ss, i);
		const char *ph = moat_secrets_placeholder(ss, i);
		moat_secret_request q = {
			.host = c->host_set ? c->host.name : c->raw_host,
			.method = c->method,
			.path = c->path,
			.tls = tls,
			.age_ms = moat_secrets_age_ms(ss),
			.uses = moat_secrets_uses(ss, i),
		};
		q.ph_elsewhere = holds(c->raw_host, ph) || (c->host_set && holds(c->host.name, ph)) ||
				 (req && holds(req->target, ph));
		for (size_t h = 0; req && h < req->n_headers && !q.ph_in_headers; h++)
			q.ph_in_headers = strstr(req->headers[h].value, ph) != NULL;
		/* A placeholder split across two headers (or written in another
		 * case, or encoded) is no use to the client, and still goes
		 * nowhere: it is judged as present. */
		for (size_t h = 0; req && h < req->n_headers && !q.ph_in_headers; h++)
			q.ph_elsewhere = q.ph_elsewhere || holds(req->headers[h].value, ph);
		char why[MOAT_NET_REASON_MAX];
		switch (moat_secret_decide(s, &q, why, sizeof(why))) {
		case MOAT_SECRET_SKIP:
			continue;
		case MOAT_SECRET_MISUSE:
			c->misuse = true;
			name_secret(c, s->name);
			set_reason(c, "moat: %s", why);
			return false;
		case MOAT_SECRET_REFUSE:
			name_secret(c, s->name);
			set_reason(c, "moat: %s", why);
			return false;
		case MOAT_SECRET_INJECT:
			break;
		default:
			return false;
		}
		const char *value = moat_secrets_value(ss, i, NULL);
		if (!value) {
			set_reason(c, "moat: the secret %s has no value yet", s->name);
			return false;
		}
		if (s->header) {
			char *v = moat_secret_format(s->format, value);
			_cleanup_free_ char *line = NULL;
			if (!v || asprintf(&line, "%s: %s", s->header, v) < 0 || moat__strv_push(&c->inj_drop, s->header) < 0 ||
			    moat__strv_push(&c->inj_lines, line) < 0) {
				if (v)
					explicit_bzero(v, strlen(v));
				free(v);
				if (line)
					explicit_bzero(line, strlen(line));
				set_reason(c, "moat: out of memory");
				return false;
			}
			explicit_bzero(v, strlen(v));
			free(v);
			explicit_bzero(line, strlen(line));
		}
		for (size_t h = 0; req && h < req->n_headers; h++) {
			const char *cur = c->hdr_new[h] ? c->hdr_new[h] : req->headers[h].value;
			char *out = NULL;
			if (moat_secret_replace(cur, ph, value, &out) < 0) {
				set_reason(c, "moat: out of memory");
				return false;
			}
			if (out) {
				if (c->hdr_new[h]) {
					explicit_bzero(c->hdr_new[h], strlen(c->hdr_new[h]));
					free(c->hdr_new[h]);
				}
				c->hdr_new[h] = out;
			}
		}
		size_t *ne = realloc(c->echo, (c->n_echo + 1) * sizeof(*ne));
		if (!ne) {
			set_reason(c, "moat: out of memory");
			return false;
		}
		c->echo = ne;
		c->echo[c->n_echo++] = i;
		moat_secrets_count_use(ss, i);
		name_secret(c, s->name);
	}
	/* The body is watched for the placeholders that may not go to this
	 * host: every one in plain HTTP, else those not bound to it. */
	if (req && (req->body == MOAT_HTTP_BODY_LENGTH || req->body == MOAT_HTTP_BODY_CHUNKED)) {
		free(c->watch);
		c->n_watch = 0;
		c->watch = calloc(n, sizeof(*c->watch));
		if (!c->watch) {
			set_reason(c, "moat: out of memory");
			return false;
		}
		for (size_t i = 0; i < n; i++) {
			const moat_secret *s = moat_secrets_entry(ss, i);
			bool bound = false;
			for (char **h = s->hosts; tls && h && *h && !bound; h++)
				bound = moat_host_glob_match(*h, c->host.name);
			if (!bound)
				c->watch[c->n_watch++] = i;
		}
	}
	return true;
}

/* A response to a request a value was injected into goes back with every
 * echo of that value masked: as the placeholder where it is as long, else
 * as as many '*' (the response's framing counts bytes). */
static bool relay_unecho(gw_conn *c, struct bufferevent *from, struct bufferevent *to, uint64_t limit)
{
	moat_secrets *ss = c->gw->secrets;
	struct evbuffer *in = bufferevent_get_input(from);
	size_t n = evbuffer_get_length(in);
	if (n > limit)
		n = (size_t)limit;
	if (n == 0)
		return true;
	/* The end of a followed response (limit is where it ends) ends what
	 * may be held back, as the server's end of file does. */
	bool final = c->upstream_eof || (c->resp && c->resp_end && !c->resp_untracked);
	char *values[64], *masks[64];
	size_t nv = 0;
	bool ok = true;
	for (size_t k = 0; k < c->n_echo && nv + 1 + MOAT_SECRET_FORMS <= ELEMENTSOF(values); k++) {
		size_t vl = 0, nf = 0;
		const char *v = moat_secrets_value(ss, c->echo[k], &vl);
		const char *ph = moat_secrets_placeholder(ss, c->echo[k]);
		char *const *forms = moat_secrets_forms(ss, c->echo[k], &nf);
		if (!v)
			continue;
		/* The value and its encoded forms; a form as long as the
		 * placeholder is not, so only the value itself becomes it. */
		for (size_t f = 0; f <= nf && ok; f++) {
			const char *fv = f == 0 ? v : forms[f - 1];
			size_t fl = strlen(fv);
			values[nv] = (char *)fv;
			masks[nv] = f == 0 && strlen(ph) == fl ? strdup(ph) : malloc(fl + 1);
			if (!masks[nv]) {
				ok = false;
				break;
			}
			if (!(f == 0 && strlen(ph) == fl)) {
				memset(masks[nv], '*', fl);
				masks[nv][fl] = '\0';
			}
			nv++;
		}
	}
	char *out = NULL;
	size_t out_len = 0;
	/* The response may hold the value: it is copied out of the input's
	 * chains into memory of our own, and what is taken is wiped in the
	 * chains before they are drained (a pullup would move it into a new
	 * chain and free the old ones as they were), and in the copy. */
	char *data = ok ? malloc(n) : NULL;
	if (data && evbuffer_copyout(in, data, n) != (ev_ssize_t)n) {
		free(data);
		data = NULL;
	}
	long used = data ? moat_secret_unecho(values, masks, nv, data, n, final, &out, &out_len) : -ENOMEM;
	for (size_t k = 0; k < nv; k++)
		free(masks[k]);
	if (data) {
		explicit_bzero(data, n);
		free(data);
	}
	if (used > 0) {
		int nio = evbuffer_peek(in, (ev_ssize_t)used, NULL, NULL, 0);
		struct evbuffer_iovec *v = nio > 0 ? calloc((size_t)nio, sizeof(*v)) : NULL;
		if (!v) {
			free(out);
			used = -ENOMEM;
		} else {
			nio = evbuffer_peek(in, (ev_ssize_t)used, NULL, v, nio);
			size_t left = (size_t)used;
			for (int i = 0; i < nio && left; i++) {
				size_t k = v[i].iov_len < left ? v[i].iov_len : left;
				explicit_bzero(v[i].iov_base, k);
				left -= k;
			}
			free(v);
		}
	}
	if (used < 0) {
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return false;
	}
	char why[MOAT_BUDGET_REASON_MAX];
	if (used && !moat_budget_bytes(c->gw->budget, c->dest, 0, (size_t)used, why, sizeof(why))) {
		free(out);
		set_reason(c, "moat: %s", why);
		conn_refuse(c, 429, 0);
		return false;
	}
	evbuffer_drain(in, (size_t)used);
	evbuffer_add(bufferevent_get_output(to), out, out_len);
	free(out);
	c->bytes_down += (uint64_t)used;
	__atomic_fetch_add(&c->gw->stats.bytes_down, (uint64_t)used, __ATOMIC_RELAXED);
	if (evbuffer_get_length(bufferevent_get_output(to)) >= GW_HIGH_WATER) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, GW_HIGH_WATER / 2, 0);
	}
	return true;
}

/* ---- keep-alive and the upstream pool ------------------------------------- */

/* Frees an upstream TLS connection. One that ended cleanly (its response
 * whole) is marked shut down first: OpenSSL otherwise takes a connection
 * freed without close_notify for a broken one and makes its session
 * unusable for resumption. */
static void upstream_free(struct bufferevent *bev, bool clean)
{
	if (!bev)
		return;
	SSL *ssl = clean ? bufferevent_openssl_get_ssl(bev) : NULL;
	if (ssl)
		SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	bufferevent_free(bev);
}

/* Keeps the TLS session of a verified upstream connection, one per host
 * and port (the least recently used goes), so that a new connection there
 * resumes it instead of a full handshake. */
static void session_store(moat_gateway *gw, const char *host, uint16_t port, struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	SSL_SESSION *cur = ssl ? SSL_get_session(ssl) : NULL;
	if (!cur || !SSL_SESSION_is_resumable(cur))
		return;
	/* A copy: OpenSSL marks the connection's own session unusable when
	 * the connection later ends in a fatal alert (a server that closes
	 * an idle connection without close_notify), and that must not take
	 * the kept one with it. */
	SSL_SESSION *sess = SSL_SESSION_dup(cur);
	if (!sess)
		return;
	gw_session *slot = NULL;
	for (size_t i = 0; i < GW_MAX_SESSIONS && !slot; i++)
		if (gw->sessions[i].sess && gw->sessions[i].port == port && strcmp(gw->sessions[i].host, host) == 0)
			slot = &gw->sessions[i];
	for (size_t i = 0; i < GW_MAX_SESSIONS && !slot; i++)
		if (!gw->sessions[i].sess)
			slot = &gw->sessions[i];
	if (!slot) {
		slot = &gw->sessions[0];
		for (size_t i = 1; i < GW_MAX_SESSIONS; i++)
			if (gw->sessions[i].used_ns < slot->used_ns)
				slot = &gw->sessions[i];
	}
	SSL_SESSION_free(slot->sess);
	slot->sess = sess;
	slot->port = port;
	slot->used_ns = moat__now_ns();
	snprintf(slot->host, sizeof(slot->host), "%s", host);
}

static void session_apply(moat_gateway *gw, const char *host, uint16_t port, SSL *ssl)
{
	for (size_t i = 0; i < GW_MAX_SESSIONS; i++) {
		gw_session *s = &gw->sessions[i];
		if (s->sess && s->port == port && strcmp(s->host, host) == 0) {
			if (SSL_SESSION_is_resumable(s->sess))
				(void)SSL_set_session(ssl, s->sess);
			s->used_ns = moat__now_ns();
			return;
		}
	}
}

static void pool_remove(gw_pooled *p, bool clean)
{
	moat_gateway *gw = p->gw;
	for (gw_pooled **pp = &gw->pool; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	gw->n_pooled--;
	upstream_free(p->bev, clean);
	if (p->idle)
		event_free(p->idle);
	free(p);
}

/* A pooled connection said something, closed or timed out: a server does
 * not speak unasked, so any of these ends it. */
static void pool_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pool_remove(arg, false);
}

static void pool_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	pool_remove(arg, !(what & BEV_EVENT_ERROR));
}

static void pool_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pool_remove(arg, true);
}

/* Puts c's upstream, its response whole and nothing after it, into the
 * pool; frees it when the pool is full for its host and port. */
static void pool_put(gw_conn *c, struct bufferevent *up)
{
	moat_gateway *gw = c->gw;
	session_store(gw, c->host.name, c->port, up);
	size_t same = 0;
	gw_pooled *last = NULL;
	for (gw_pooled *p = gw->pool; p; p = p->next) {
		same += p->port == c->port && strcmp(p->host, c->host.name) == 0;
		last = p;
	}
	if (same >= GW_POOL_PER_DEST) {
		upstream_free(up, true);
		return;
	}
	if (gw->n_pooled >= GW_POOL_MAX && last)
		pool_remove(last, true); /* the oldest: new ones go in front */
	gw_pooled *p = calloc(1, sizeof(*p));
	if (!p || !(p->idle = evtimer_new(gw->base, pool_idle_cb, p))) {
		free(p);
		upstream_free(up, true);
		return;
	}
	p->gw = gw;
	p->bev = up;
	p->port = c->port;
	p->addr = c->up_addr;
	snprintf(p->host, sizeof(p->host), "%s", c->host.name);
	snprintf(p->address, sizeof(p->address), "%s", c->address);
	bufferevent_setcb(up, pool_read_cb, NULL, pool_event_cb, p);
	bufferevent_set_timeouts(up, NULL, NULL);
	bufferevent_enable(up, EV_READ);
	struct timeval tv;
	ms_to_timeval(GW_POOL_IDLE_MS, &tv);
	if (timercmp(&gw->idle_timeout, &tv, <))
		tv = gw->idle_timeout;
	evtimer_add(p->idle, &tv);
	p->next = gw->pool;
	gw->pool = p;
	gw->n_pooled++;
}

/* An open connection to c's host and port whose address the rules in force
 * still allow; true when c->upstream is now one. */
static bool pool_take(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	for (gw_pooled *p = gw->pool, *next; p; p = next) {
		next = p->next;
		if (p->port != c->port || strcmp(p->host, c->host.name) != 0)
			continue;
		struct sockaddr_storage ss;
		socklen_t sl;
		const char *why = NULL;
		moat_addr_to_sockaddr(&p->addr, p->port, &ss, &sl);
		if (!moat_netrules_addr_allowed(c->rules, (struct sockaddr *)&ss, &why)) {
			pool_remove(p, true);
			continue;
		}
		c->upstream = TAKE_PTR(p->bev);
		c->up_addr = p->addr;
		snprintf(c->address, sizeof(c->address), "%s", p->address);
		pool_remove(p, true);
		bufferevent_setcb(c->upstream, upstream_read_cb, write_cb, upstream_event_cb, c);
		c->reused = true;
		gw->stats.upstream_reused++;
		return true;
	}
	return false;
}

/* Ready for the next request on a kept-alive connection: what belonged to
 * the last one is cleared (wiped where it held a value), the rules in
 * force now are taken, and the client is read again. */
static void request_next(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	free(c->method);
	c->method = NULL;
	free(c->path);
	c->path = NULL;
	secrets_clear(c);
	c->secret_names[0] = '\0';
	c->misuse = false;
	c->upstream_eof = false;
	c->body_tail_len = 0;
	c->bw_state = 0;
	c->bw_left = 0;
	c->n_addrs = c->addr_idx = 0;
	c->address[0] = '\0';
	c->body_left = 0;
	c->chunked = false;
	c->bytes_up = c->bytes_down = 0;
	c->logged = false;
	c->idle = true;
	c->allowed = false;
	c->reason[0] = '\0';
	c->rule = -1;
	c->req_done = c->reused = c->client_close = false;
	c->resp_fed = 0;
	c->resp_end = c->resp_untracked = false;
	moat_http_parser_reset(c->http);
	moat_netrules_unref(c->rules);
	c->rules = moat_netrules_slot_get(&gw->rules);
	c->state = ST_TLS_HEAD;
	if (c->deadline)
		evtimer_del(c->deadline);
	/* Between requests the connection may wait as long as an idle
	 * relay; the head's own deadline starts with its first byte. */
	bufferevent_set_timeouts(c->client, &gw->idle_timeout, &gw->idle_timeout);
	bufferevent_enable(c->client, EV_READ | EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		tls_head(c);
}

/* The response to a terminated request has gone to the client whole. The
 * upstream goes to the pool when the response left it fit for another
 * request; the client's connection carries the next request when neither
 * side asked for its end; else it closes once the response is out. */
static void response_done(gw_conn *c)
{
	bool reusable = c->resp->reusable && c->req_done && !c->upstream_eof;
	if (c->upstream) {
		struct bufferevent *up = TAKE_PTR(c->upstream);
		if (reusable && evbuffer_get_length(bufferevent_get_input(up)) == 0 &&
		    evbuffer_get_length(bufferevent_get_output(up)) == 0)
			pool_put(c, up);
		else
			upstream_free(up, reusable);
	}
	if (!reusable || c->client_eof || c->client_close || c->requests >= GW_KEEPALIVE_MAX_REQUESTS) {
		conn_close(c);
		return;
	}
	conn_log(c);
	request_next(c);
}

/* ---- TLS termination ------------------------------------------------------- */

static bool tls_terminated(const moat_gateway *gw, const moat_host *h)
{
	for (char **p = gw->terminate_hosts; p && *p; p++)
		if (moat_host_glob_match(*p, h->name))
			return true;
	return false;
}

/* The tunnel is open to the client; its ClientHello comes next, with the
 * same deadline as any tunnel's. */
static void tls_peek_start(gw_conn *c)
{
	if (c->deadline) {
		struct timeval twice = c->gw->head_timeout;
		twice.tv_sec *= 2;
		evtimer_add(c->deadline, &twice);
	}
	c->state = ST_TLS_PEEK;
	tunnel_peek(c);
}

/* The ClientHello named the tunnel's host: the gateway answers it with the
 * host's leaf and reads what the client sends inside. */
static void tls_accept(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	moat_error err = {0};
	SSL *ssl = SSL_new(gw->tls_server);
	if (!ssl || moat_tls_ca_use_leaf(gw->tls_ca, ssl, c->host.name, &err) < 0) {
		SSL_free(ssl);
		set_reason(c, "moat: TLS for %s: %s", c->host.name, err.msg[0] ? err.msg : "out of memory");
		conn_refuse(c, 502, 0);
		return;
	}
	struct bufferevent *raw = c->client;
	struct bufferevent *tls = bufferevent_openssl_filter_new(gw->base, raw, ssl, BUFFEREVENT_SSL_ACCEPTING,
								 BEV_OPT_CLOSE_ON_FREE);
	if (!tls) {
		SSL_free(ssl);
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return;
	}
	c->client = tls;
	c->tls_inner = true;
	c->keep_alive = true;
	moat_http_parser_free(c->http);
	c->http = moat_http_parser_new();
	if (!c->http) {
		set_reason(c, "moat: out of memory");
		conn_close(c);
		return;
	}
	bufferevent_setcb(tls, client_read_cb, write_cb, client_event_cb, c);
	bufferevent_set_timeouts(tls, &gw->head_timeout, &gw->head_timeout);
	if (c->deadline)
		evtimer_add(c->deadline, &gw->head_timeout);
	c->state = ST_TLS_HEAD;
	bufferevent_enable(tls, EV_READ | EV_WRITE);
	/* The ClientHello is already in the raw input: have the filter read
	 * it now rather than wait for bytes that will not come first. */
	bufferevent_trigger(raw, EV_READ, BEV_TRIG_IGNORE_WATERMARKS);
}

/* One request inside the terminated TLS: origin form, for the tunnel's
 * host, decided with its method and path like a plain HTTP request. */
static void tls_head(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	if (c->idle) {
		/* The first bytes of the next request on a kept-alive
		 * connection: it is a request of its own from here on, with
		 * the head's deadline. */
		c->idle = false;
		c->start_ns = moat__now_ns();
		bufferevent_set_timeouts(c->client, &gw->head_timeout, &gw->head_timeout);
		if (c->deadline)
			evtimer_add(c->deadline, &gw->head_timeout);
	}
	const moat_http_request *req = read_head(c);
	if (!req)
		return;
	c->requests++;
	c->method = strdup(req->method);
	c->path = strdup(req->path);
	if (!c->method || !c->path) {
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return;
	}
	if (req->form != MOAT_HTTP_ORIGIN_FORM) {
		set_reason(c, "moat: inside the TLS tunnel to %s, requests are in origin form (/path)", c->host.name);
		conn_refuse(c, 400, 0);
		return;
	}
	/* The Host header must name the tunnel's host: the upstream routes by
	 * it, and the rules, secrets and certificate were for that host. A
	 * request without one (HTTP/1.0) cannot be told apart. */
	const char *hh = moat_http_request_header(req, "Host");
	moat_host h;
	uint16_t hp = 0;
	moat_error herr = {0};
	if (!hh || moat_authority_parse(hh, strlen(hh), c->port, &h, &hp, &herr) < 0 ||
	    strcmp(h.name, c->host.name) != 0 || hp != c->port) {
		set_reason(c, "moat: the Host header %s the tunnel's host %s", hh ? "does not name" : "is missing; it must name",
			   c->host.name);
		conn_refuse(c, 400, 0);
		return;
	}
	for (const char *m = req->method; *m; m++)
		if (*m >= 'a' && *m <= 'z') {
			set_reason(c, "moat: the method %s is not in upper case; servers tell methods apart by case", req->method);
			conn_refuse(c, 400, 0);
			return;
		}
	static const char *const overrides[] = {"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"};
	const char *override = NULL;
	for (size_t i = 0; i < req->n_headers; i++)
		for (size_t j = 0; j < ELEMENTSOF(overrides); j++)
			if (strcasecmp(req->headers[i].name, overrides[j]) == 0) {
				if (override && strcasecmp(override, req->headers[i].value) != 0) {
					set_reason(c, "moat: the request carries two different method overrides");
					conn_refuse(c, 400, 0);
					return;
				}
				override = req->headers[i].value;
			}
	if (req->upgrade) {
		set_reason(c, "moat: protocol upgrades are not proxied inside a terminated tunnel");
		conn_refuse(c, 501, 0);
		return;
	}
	if (!c->rules) {
		set_reason(c, "moat: this sandbox has no network rules; all egress is denied");
		conn_refuse(c, 403, 0);
		return;
	}
	moat_net_request q = {.host = &c->host, .port = c->port, .method = c->method, .path = c->path};
	moat_net_decision dec;
	moat_netrules_decide(c->rules, &q, &dec);
	if (dec.action == MOAT_NET_ALLOW && override) {
		moat_net_decision d2;
		q.method = override;
		moat_netrules_decide(c->rules, &q, &d2);
		if (d2.action != MOAT_NET_ALLOW) {
			snprintf(dec.reason, sizeof(dec.reason), "the method override %.32s is not allowed: %s", override,
				 d2.reason);
			dec.action = MOAT_NET_DENY;
		}
	}
	c->rule = dec.rule;
	if (dec.action == MOAT_NET_APPROVE && override) {
		set_reason(c, "moat: %s %s on %s needs a person's approval, which a request with a method override "
			      "(%.32s) cannot have: send it as the method it means",
			   c->method, c->path, c->host.name, override);
		conn_refuse(c, 403, 0);
		return;
	}
	if (dec.action == MOAT_NET_APPROVE && gw->approvals) {
		(void)conn_hold(c, true);
		return;
	}
	if (dec.action != MOAT_NET_ALLOW) {
		if (dec.action == MOAT_NET_APPROVE)
			set_reason(c,
				   "moat: %s %s on %s needs a person's approval, and this sandbox has no approval queue "
				   "(only a session's can hold it: moat session create)",
				   c->method, c->path, c->host.name);
		else
			set_reason(c, "moat: %s", dec.reason);
		conn_refuse(c, 403, 0);
		return;
	}
	set_reason(c, "%s", dec.reason);
	tls_go(c);
}

/* A request inside terminated TLS is allowed (by the rules or a person):
 * secrets and budgets, then the upstream. */
static void tls_go(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	const moat_http_request *req = moat_http_parser_request(c->http);
	if (!secrets_check(c, req, true)) {
		conn_refuse(c, 403, 0);
		return;
	}
	char why[MOAT_BUDGET_REASON_MAX];
	if (!moat_budget_request(gw->budget, c->dest, moat__now_ns(), why, sizeof(why)) ||
	    !moat_budget_bytes(gw->budget, c->dest, c->bytes_up, 0, why, sizeof(why))) {
		set_reason(c, "moat: %s", why);
		conn_refuse(c, 429, 0);
		return;
	}
	if (c->deadline)
		evtimer_del(c->deadline);
	/* The response is followed to its end, so that both connections can
	 * carry another request after it; a client that asked for the
	 * connection's end (or speaks HTTP/1.0) has it closed after this. */
	if (!c->resp && !(c->resp = malloc(sizeof(*c->resp)))) {
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return;
	}
	moat_http_resp_init(c->resp, strcmp(req->method, "HEAD") == 0);
	c->client_close = req->connection_close || req->version_minor == 0;
	if (pool_take(c)) {
		c->allowed = true;
		tls_upstream_ready(c);
		return;
	}
	/* The body waits in the client's input until the upstream is ready. */
	c->state = ST_RESOLVING;
	conn_resolve(c);
}

/* The TCP connection to the upstream is up: TLS over it, with the real name. */
static bool tls_upstream_start(gw_conn *c)
{
	moat_gateway *gw = c->gw;
	moat_error err = {0};
	SSL *ssl = SSL_new(gw->tls_client);
	if (!ssl || moat_tls_client_prepare(ssl, c->host.name, &err) < 0) {
		SSL_free(ssl);
		set_reason(c, "moat: TLS to %s: %s", c->host.name, err.msg[0] ? err.msg : "out of memory");
		conn_refuse(c, 502, 0);
		return false;
	}
	/* Resumed when the last connection to this host and port left a
	 * session; the server's certificate was verified when it was made. */
	session_apply(gw, c->host.name, c->port, ssl);
	struct bufferevent *tls = bufferevent_openssl_filter_new(gw->base, c->upstream, ssl, BUFFEREVENT_SSL_CONNECTING,
								 BEV_OPT_CLOSE_ON_FREE);
	if (!tls) {
		SSL_free(ssl);
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return false;
	}
	c->upstream = tls;
	c->state = ST_TLS_UPSTREAM;
	bufferevent_setcb(tls, upstream_read_cb, write_cb, upstream_event_cb, c);
	bufferevent_set_timeouts(tls, &gw->connect_timeout, &gw->connect_timeout);
	bufferevent_enable(tls, EV_READ | EV_WRITE);
	return true;
}

/* The upstream is verified: the request goes to it as a plain HTTP one would. */
static void tls_upstream_ready(gw_conn *c)
{
	const moat_http_request *r = moat_http_parser_request(c->http);
	SSL *ssl = c->reused ? NULL : bufferevent_openssl_get_ssl(c->upstream);
	if (ssl && SSL_session_reused(ssl))
		c->gw->stats.tls_resumed++;
	if (http_send_upstream_head(c, r) < 0) {
		set_reason(c, "moat: out of memory");
		conn_refuse(c, 502, 0);
		return;
	}
	c->body_left = r->body == MOAT_HTTP_BODY_LENGTH ? r->content_length : 0;
	c->chunked = r->body == MOAT_HTTP_BODY_CHUNKED;
	moat_chunked_init(&c->chunks);
	relay_start(c, ST_RELAY_HTTP);
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	gw_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	switch (c->state) {
	case ST_SNIFF: {
		uint8_t first;
		if (evbuffer_copyout(in, &first, 1) != 1)
			return;
		/* One port serves both: SOCKS5 opens with its version byte,
		 * which is no letter an HTTP method starts with. */
		if (c->transparent && first == 0x16) {
			/* A TLS handshake record: judged as a tunnel to where
			 * the connection was going; the ClientHello is
			 * checked once the upstream is connected. */
			c->state = ST_RESOLVING;
			conn_decide(c);
		} else if (!c->transparent && first == 0x05) {
			c->proto = PROTO_SOCKS5;
			c->state = ST_SOCKS_GREETING;
			socks_greeting(c);
		} else {
			c->proto = PROTO_HTTP;
			c->state = ST_HTTP_HEAD;
			c->http = moat_http_parser_new();
			if (!c->http) {
				conn_close(c);
				return;
			}
			http_head(c);
		}
		return;
	}
	case ST_HTTP_HEAD:
		http_head(c);
		return;
	case ST_SOCKS_GREETING:
		socks_greeting(c);
		return;
	case ST_SOCKS_REQUEST:
		socks_request(c);
		return;
	case ST_TLS_PEEK:
		tunnel_peek(c);
		return;
	case ST_RELAY:
		relay(c, bev, c->upstream, true, UINT64_MAX);
		return;
	case ST_RELAY_HTTP:
		relay_body(c);
		return;
	case ST_TLS_HEAD:
		tls_head(c);
		return;
	case ST_RESOLVING:
	case ST_CONNECTING:
	case ST_TLS_UPSTREAM:
	case ST_HELD:
		/* Early bytes (a ClientHello sent before the 200, a request
		 * body) wait in the input buffer; stop reading until the
		 * upstream is ready, so they cannot pile up. */
		if (evbuffer_get_length(in) >= GW_MAX_PEEK)
			bufferevent_disable(bev, EV_READ);
		return;
	case ST_CLOSING:
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
}

/* The client's end of file. A client may shut down its sending side once
 * its request is out (curl with --proxy and some HTTP libraries, nc -N):
 * that is no reason to drop the answer. True when the connection goes on. */
static bool client_half_close(gw_conn *c)
{
	bool request_done = c->state == ST_RESOLVING || c->state == ST_CONNECTING || c->state == ST_TLS_UPSTREAM ||
			    (c->state == ST_RELAY_HTTP && (c->req_done || (!c->chunked && c->body_left == 0)));
	if (request_done) {
		c->client_eof = true;
		bufferevent_disable(c->client, EV_READ);
		return true;
	}
	if (c->state == ST_RELAY && c->upstream) {
		c->client_eof = true;
		bufferevent_disable(c->client, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0)
			(void)shutdown(bufferevent_getfd(c->upstream), SHUT_WR);
		else
			c->shut_upstream_pending = true;
		return true;
	}
	return false;
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	gw_conn *c = arg;
	/* The terminated TLS's handshake with the client is done. */
	if (what & BEV_EVENT_CONNECTED)
		return;
	if (c->state == ST_TLS_HEAD && (what & BEV_EVENT_ERROR) && !c->method && !c->requests) {
		unsigned long e = bufferevent_get_openssl_error(bev);
		char ebuf[160] = "";
		if (e)
			ERR_error_string_n(e, ebuf, sizeof(ebuf));
		ERR_clear_error();
		set_reason(c, "moat: the client ended the TLS handshake with the gateway for %s (it may pin certificates, "
			      "or not trust the sandbox's authority)%s%s", c->host.name, ebuf[0] ? ": " : "", ebuf);
	}
	if (c->state == ST_CLOSING) {
		evbuffer_drain(bufferevent_get_output(bev), evbuffer_get_length(bufferevent_get_output(bev)));
		if (!output_pending(c->upstream))
			conn_free(c);
		return;
	}
	if (c->state == ST_RELAY)
		if (!relay(c, bev, c->upstream, true, UINT64_MAX))
			return;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && client_half_close(c))
		return;
	if (what & BEV_EVENT_TIMEOUT && !c->host_set)
		set_reason(c, "moat: the client sent no complete request in time");
	conn_close(c);
}

/* The absolute deadline for what the client must say before anything is
 * decided: the per-read timeout alone restarts with every byte, so a head
 * trickled a byte at a time would hold a connection for ever. */
static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	gw_conn *c = arg;
	(void)fd;
	(void)what;
	unsigned s = (unsigned)c->gw->head_timeout.tv_sec;
	switch (c->state) {
	case ST_SNIFF:
	case ST_HTTP_HEAD:
	case ST_SOCKS_GREETING:
	case ST_SOCKS_REQUEST:
		set_reason(c, "moat: the client sent no complete request within %u s", s);
		conn_refuse(c, 408, MOAT_SOCKS5_REP_FAILURE);
		return;
	case ST_TLS_PEEK:
		set_reason(c, "moat: the client sent no complete TLS ClientHello to %s within %u s", c->host.name, s);
		conn_refuse(c, 408, MOAT_SOCKS5_REP_FAILURE);
		return;
	case ST_TLS_HEAD:
		set_reason(c, "moat: the client sent no complete request inside TLS to %s within %u s", c->host.name, s);
		conn_refuse(c, 408, 0);
		return;
	default:
		/* Resolving and connecting have their own timeouts; a relay
		 * has its idle timeout. */
		return;
	}
}

static void rearm_cb(evutil_socket_t fd, short what, void *arg)
{
	moat_gateway *gw = arg;
	(void)fd;
	(void)what;
	for (size_t i = 0; i < gw->n_listeners; i++)
		evconnlistener_enable(gw->listeners[i]);
}

/* A new client on fd, reading; NULL when it was refused or closed. */
static gw_conn *conn_accept(moat_gateway *gw, evutil_socket_t fd)
{
	if (gw->stats.active >= gw->max_clients) {
		/* Closed before a byte is read: the sandbox holds too many
		 * connections already, and each costs the supervisor
		 * descriptors. */
		close(fd);
		gw->stats.refused_clients++;
		char why[160];
		snprintf(why, sizeof(why), "moat: the sandbox already holds %u connections to the gateway, its limit",
			 gw->max_clients);
		moat_net_event ev = {.type = "net.request", .protocol = "tcp", .host = "", .address = "",
				     .decision = "deny", .rule = -1, .reason = why};
		gw_emit(gw, &ev);
		return NULL;
	}
	gw_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->gw = gw;
	c->rule = -1;
	c->start_ns = moat__now_ns();
	c->client = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->client) {
		close(fd);
		free(c);
		return NULL;
	}
	c->next = gw->conns;
	if (gw->conns)
		gw->conns->prev = c;
	gw->conns = c;
	gw->stats.connections++;
	gw->stats.active++;
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	bufferevent_setcb(c->client, client_read_cb, write_cb, client_event_cb, c);
	/* Bounds how long a client may take to say where it goes: between
	 * two reads, and in all. */
	bufferevent_set_timeouts(c->client, &gw->head_timeout, &gw->head_timeout);
	c->deadline = evtimer_new(gw->base, deadline_cb, c);
	if (!c->deadline) {
		conn_free(c);
		return NULL;
	}
	evtimer_add(c->deadline, &gw->head_timeout);
	bufferevent_enable(c->client, EV_READ | EV_WRITE);
	return c;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	(void)l;
	(void)sa;
	(void)socklen;
	(void)conn_accept(arg, fd);
}

/* A connection the sandbox's namespace redirected here (netnat.h). Where
 * it was going is its original destination, kept by conntrack: an address
 * of the stub's range stands for the name it was handed out for, any other
 * address for itself (and only a rule naming that address allows it). */
static void accept_transparent_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen,
				  void *arg)
{
	moat_gateway *gw = arg;
	(void)l;
	(void)sa;
	(void)socklen;
	struct sockaddr_in od;
	socklen_t ol = sizeof(od);
	bool known = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &od, &ol) == 0 && od.sin_family == AF_INET;
	gw_conn *c = conn_accept(gw, fd);
	if (!c)
		return;
	c->transparent = true;
	c->proto = PROTO_TRANSPARENT;
	if (!known) {
		set_reason(c, "moat: a redirected connection whose destination the kernel no longer knows");
		conn_close(c);
		return;
	}
	uint32_t a = ntohl(od.sin_addr.s_addr);
	uint16_t port = ntohs(od.sin_port);
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &od.sin_addr, text, sizeof(text));
	const char *name = text;
	if (moat_dnsmap_in_range(a)) {
		name = gw->dnsmap ? moat_dnsmap_name(gw->dnsmap, a) : NULL;
		if (!name) {
			set_raw_host(c, text, strlen(text));
			c->port = port;
			set_reason(c, "moat: %s is an address of the sandbox's name map that no name was given", text);
			conn_close(c);
			return;
		}
	}
	moat_host h;
	if (moat_host_normalize(name, strlen(name), &h, NULL) < 0) {
		set_raw_host(c, name, strlen(name));
		set_reason(c, "moat: the redirected connection's destination %s is no host", name);
		conn_close(c);
		return;
	}
	set_host(c, &h, port);
	/* A port that may carry something other than TLS is decided at
	 * once: its protocol may have the server speak first. */
	bool raw = port != 80 && port != 443;
	bool listed = false;
	for (size_t i = 0; i < gw->n_raw_ports; i++)
		listed = listed || gw->raw_ports[i] == port;
	if (raw && listed) {
		c->state = ST_RESOLVING;
		conn_decide(c);
	}
}

/* The DNS stub: every query is answered from the name map, never sent on. */
static void dns_stub_cb(evutil_socket_t fd, short what, void *arg)
{
	moat_gateway *gw = arg;
	(void)what;
	/* A bounded batch per wakeup, so a flood of queries cannot hold the
	 * loop away from the connections. */
	for (int n = 0; n < 64; n++) {
		uint8_t q[MOAT_DNS_MSG_MAX], a[MOAT_DNS_ANSWER_MAX];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t len = recvfrom(fd, q, sizeof(q), MSG_TRUNC, (struct sockaddr *)&from, &fl);
		if (len < 0)
			return;
		if ((size_t)len > sizeof(q))
			continue; /* larger than any query the stub reads */
		size_t al = moat_dns_answer(gw->dnsmap, q, (size_t)len, a);
		if (al)
			(void)sendto(fd, a, al, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	moat_gateway *gw = arg;
	/* Out of descriptors or memory: stop accepting for a moment rather
	 * than spin on a listener that stays readable, and start again when
	 * the timer fires. A listener left disabled would hang every later
	 * request of the run. */
	gw->stats.accept_errors++;
	int e = EVUTIL_SOCKET_ERROR();
	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		evconnlistener_disable(l);
		struct timeval tv = {.tv_usec = 100000};
		if (gw->rearm)
			evtimer_add(gw->rearm, &tv);
		else
			evconnlistener_enable(l);
	}
}

/* ---- the public interface -------------------------------------------------- */

static void discard_log(int severity, const char *msg)
{
	/* Library code never prints: libevent's own warnings are dropped, and
	 * everything that matters reaches the caller as an event. */
	(void)severity;
	(void)msg;
}


/* ---- approval holds ---------------------------------------------------------- */

/* Held: nothing is read past what waits in the buffer (a request's body),
 * no read timeout ends the wait (the queue's own timeout does), and the
 * client's closing is still seen, which withdraws the approval. */
static bool conn_hold(gw_conn *c, bool tls)
{
	moat_gateway *gw = c->gw;
	moat_ask ask;
	moat_error err = {0};
	if (moat__approval_ask_net(&ask, c->host.name, c->port, c->method, c->path, &err) < 0) {
		set_reason(c, "moat: %s cannot be held for approval: %s", c->host.name, err.msg);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	/* What the person reads says whether it was asked inside TLS. */
	ask.tls = tls;
	c->held_tls = tls;
	c->ticket = ++gw->next_ticket;
	moat_approvals_outcome o;
	if (moat_approvals_ask(gw->approvals, &ask, c->ticket, &o, &err) < 0) {
		set_reason(c, "moat: %s needs a person's approval, and it cannot be held: %s", c->host.name, err.msg);
		conn_refuse(c, err.code == E2BIG ? 429 : 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return false;
	}
	if (o.state == MOAT_APPROVAL_ALLOWED) {
		snprintf(c->lease, sizeof(c->lease), "%s", o.lease);
		set_reason(c, "moat: allowed by lease %s", o.lease);
		if (tls) {
			tls_go(c);
			return true;
		}
		return conn_go(c);
	}
	snprintf(c->approval, sizeof(c->approval), "%s", o.id);
	c->state = ST_HELD;
	bufferevent_set_timeouts(c->client, NULL, NULL);
	return true;
}

/* A person (or the clock) decided c's approval. */
static void conn_unhold(gw_conn *c, const moat_approvals_outcome *o)
{
	moat_gateway *gw = c->gw;
	char what[160];
	if (c->method)
		snprintf(what, sizeof(what), "%s %.100s on %s", c->method, c->path ? c->path : "", c->host.name);
	else
		snprintf(what, sizeof(what), "%s:%u", c->host.name, (unsigned)c->port);
	switch (o->state) {
	case MOAT_APPROVAL_ALLOWED:
		snprintf(c->lease, sizeof(c->lease), "%s", o->lease);
		if (o->lease[0])
			set_reason(c, "moat: approved by a reviewer (%s), lease %s", o->id, o->lease);
		else
			set_reason(c, "moat: approved once by a reviewer (%s)", o->id);
		bufferevent_set_timeouts(c->client, &gw->head_timeout, &gw->head_timeout);
		bufferevent_enable(c->client, EV_READ);
		if (c->held_tls) {
			c->state = ST_TLS_HEAD;
			tls_go(c);
		} else {
			c->state = ST_RESOLVING;
			(void)conn_go(c);
		}
		return;
	case MOAT_APPROVAL_TIMED_OUT: {
		char d[32];
		moat_format_duration_ms(o->timeout_ms, d, sizeof(d));
		c->state = c->held_tls ? ST_TLS_HEAD : ST_RESOLVING;
		set_reason(c, "moat: approval timed out: no one decided on %s within %s (approval %s)", what, d, o->id);
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return;
	}
	default:
		c->state = c->held_tls ? ST_TLS_HEAD : ST_RESOLVING;
		if (o->ended)
			set_reason(c, "moat: denied: %s (approval %s)", o->reason, o->id[0] ? o->id : "-");
		else
			set_reason(c, "moat: denied by a reviewer: %s (approval %s)", o->reason, o->id[0] ? o->id : "-");
		conn_refuse(c, 403, MOAT_SOCKS5_REP_NOT_ALLOWED);
		return;
	}
}

/* The deciders' wake-up: every held connection asks for its outcome. */
static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	moat_gateway *gw = arg;
	uint64_t v;
	while (read(fd, &v, sizeof(v)) > 0)
		;
	/* Unholding may free a connection (a refusal with nothing left to
	 * send), never another one: the next is taken first. */
	for (gw_conn *c = gw->conns, *next; c; c = next) {
		next = c->next;
		if (c->state != ST_HELD)
			continue;
		moat_approvals_outcome o;
		moat_approvals_poll(gw->approvals, c->ticket, &o);
		if (o.state != MOAT_APPROVAL_PENDING)
			conn_unhold(c, &o);
	}
}

/* Runs on the deciding thread: only the eventfd is touched. */
static void wake_fn(void *ud)
{
	moat_gateway *gw = ud;
	uint64_t one = 1;
	(void)!write(gw->wake_fd, &one, sizeof(one));
}

/* The gateway is going away (the sandbox ends): a held client is answered
 * now, in one write, since no loop turns any more to send it. */
/* The loop will not turn again: what a client is owed (a refusal, the end
 * of an answer) goes out now, in one write that never blocks. A socket
 * bufferevent's output is drained by it alone (its start is frozen), so it
 * is thawed first; a client inside terminated TLS would need the TLS layer,
 * which is past use now: it sees the connection close. */
static void flush_now(gw_conn *c)
{
	if (!c->client || bufferevent_get_underlying(c->client))
		return;
	struct evbuffer *out = bufferevent_get_output(c->client);
	if (evbuffer_get_length(out) == 0)
		return;
	evbuffer_unfreeze(out, 1);
	(void)evbuffer_write(out, bufferevent_getfd(c->client));
}

/* The gateway is going away (the sandbox ends) while c waits for a
 * decision: it is answered as denied. */
static void held_answer_now(gw_conn *c)
{
	moat_approvals_outcome o;
	moat_approvals_poll(c->gw->approvals, c->ticket, &o);
	if (o.state == MOAT_APPROVAL_PENDING || o.state == MOAT_APPROVAL_ALLOWED) {
		memset(&o, 0, sizeof(o));
		o.state = MOAT_APPROVAL_DENIED;
		o.ended = true;
		snprintf(o.id, sizeof(o.id), "%s", c->approval);
		snprintf(o.reason, sizeof(o.reason), "the sandbox ended before anyone decided");
	}
	conn_unhold(c, &o);
}

int moat_gateway_new(struct event_base *base, const moat_gateway_config *cfg, moat_gateway **ret, moat_error *err)
{
	if (!base || !cfg || !ret)
		return moat_error_set(err, EINVAL, "gateway: missing argument");
	if (cfg->n_hosts > MOAT_GATEWAY_MAX_HOSTS)
		return moat_error_set(err, MOAT_EINPUT, "network.hosts: more than %d entries", MOAT_GATEWAY_MAX_HOSTS);

	moat_gateway *gw = calloc(1, sizeof(*gw));
	if (!gw)
		return moat_error_set(err, ENOMEM, "gateway");
	gw->base = base;
	gw->dns_stub_fd = -1;
	gw->wake_fd = -1;
	moat_netrules_slot_init(&gw->rules, cfg->rules ? moat_netrules_ref(cfg->rules) : NULL);
	gw->on_event = cfg->on_event;
	gw->userdata = cfg->userdata;
	ms_to_timeval(cfg->connect_timeout_ms ? cfg->connect_timeout_ms : GW_DEFAULT_CONNECT_MS, &gw->connect_timeout);
	ms_to_timeval(cfg->idle_timeout_ms ? cfg->idle_timeout_ms : GW_DEFAULT_IDLE_MS, &gw->idle_timeout);
	ms_to_timeval(cfg->head_timeout_ms ? cfg->head_timeout_ms : MOAT_GATEWAY_DEFAULT_HEAD_MS, &gw->head_timeout);
	gw->max_clients = cfg->max_clients ? cfg->max_clients : MOAT_GATEWAY_DEFAULT_MAX_CLIENTS;
	gw->events_per_sec = cfg->events_per_sec ? cfg->events_per_sec : MOAT_GATEWAY_DEFAULT_EVENTS_PER_SEC;
	gw->ev_tokens = (uint64_t)gw->events_per_sec * 10 * 1000;
	gw->ev_last_ns = moat__now_ns();
	gw->rearm = evtimer_new(base, rearm_cb, gw);
	gw->flood = evtimer_new(base, flood_cb, gw);
	if (!gw->rearm || !gw->flood) {
		moat_gateway_free(gw);
		return moat_error_set(err, ENOMEM, "gateway");
	}
	gw->budget = moat_budget_new(&cfg->budget_run, &cfg->budget_dest);
	if (!gw->budget) {
		moat_gateway_free(gw);
		return moat_error_set(err, ENOMEM, "gateway budgets");
	}
	if (cfg->resolver) {
		gw->resolver = strdup(cfg->resolver);
		if (!gw->resolver) {
			moat_gateway_free(gw);
			return moat_error_set(err, ENOMEM, "gateway");
		}
	}
	if (cfg->n_hosts > 0) {
		gw->hosts = calloc(cfg->n_hosts, sizeof(*gw->hosts));
		if (!gw->hosts) {
			moat_gateway_free(gw);
			return moat_error_set(err, ENOMEM, "gateway");
		}
	}
	for (size_t i = 0; i < cfg->n_hosts; i++) {
		const moat_gateway_host *h = &cfg->hosts[i];
		moat_host name;
		moat_error herr = {0};
		if (!h->name || moat_host_normalize(h->name, strlen(h->name), &name, &herr) < 0 || name.is_literal) {
			moat_gateway_free(gw);
			return moat_error_set(err, MOAT_EINPUT, "network.hosts: '%s' is not a host name%s%s",
					      h->name ? h->name : "", herr.msg[0] ? ": " : "", herr.msg);
		}
		if (!h->address || moat_addr_parse(h->address, strlen(h->address), &gw->hosts[i].addr) < 0) {
			moat_gateway_free(gw);
			return moat_error_set(err, MOAT_EINPUT, "network.hosts: %s: '%s' is not an IP address", h->name,
					      h->address ? h->address : "");
		}
		memcpy(gw->hosts[i].name, name.name, sizeof(name.name));
	}
	gw->n_hosts = cfg->n_hosts;
	if (cfg->n_raw_ports > 0) {
		if (cfg->n_raw_ports > 1024) {
			moat_gateway_free(gw);
			return moat_error_set(err, MOAT_EINPUT, "network: more than 1024 raw tunnel ports");
		}
		gw->raw_ports = calloc(cfg->n_raw_ports, sizeof(uint16_t));
		if (!gw->raw_ports) {
			moat_gateway_free(gw);
			return moat_error_set(err, ENOMEM, "gateway");
		}
		memcpy(gw->raw_ports, cfg->raw_ports, cfg->n_raw_ports * sizeof(uint16_t));
		gw->n_raw_ports = cfg->n_raw_ports;
	}
	gw->secrets = cfg->secrets;
	if (cfg->tls_ca && cfg->terminate_hosts && cfg->terminate_hosts[0]) {
		int r;
		/* Sessions are kept by the gateway itself (session_store), per
		 * host and port, not in OpenSSL's cache. */
		gw->tls_ca = cfg->tls_ca;
		if (!(gw->terminate_hosts = moat__strv_copy(cfg->terminate_hosts))) {
			moat_gateway_free(gw);
			return moat_error_set(err, ENOMEM, "gateway");
		}
		if ((r = moat_tls_server_ctx(&gw->tls_server, err)) < 0 ||
		    (r = moat_tls_client_ctx(cfg->upstream_ca_file, &gw->tls_client, err)) < 0) {
			moat_gateway_free(gw);
			return r;
		}
		SSL_CTX_set_session_cache_mode(gw->tls_client, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	}
	if (cfg->approvals) {
		gw->approvals = cfg->approvals;
		gw->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		gw->wake_ev = gw->wake_fd >= 0 ? event_new(base, gw->wake_fd, EV_READ | EV_PERSIST, wake_cb, gw) : NULL;
		if (!gw->wake_ev || event_add(gw->wake_ev, NULL) < 0) {
			moat_gateway_free(gw);
			return moat_error_set(err, ENOMEM, "gateway: approval wake-up");
		}
		moat_approvals_set_wake(gw->approvals, wake_fn, gw);
	}
	event_set_log_callback(discard_log);
	*ret = gw;
	return 0;
}

void moat_gateway_free(moat_gateway *gw)
{
	if (!gw)
		return;
	if (gw->approvals) {
		moat_approvals_set_wake(gw->approvals, NULL, NULL);
		for (gw_conn *c = gw->conns, *next; c; c = next) {
			next = c->next;
			if (c->state == ST_HELD)
				held_answer_now(c);
		}
		/* Answers decided just before the end, and those above. */
		for (gw_conn *c = gw->conns; c; c = c->next)
			if (c->state == ST_CLOSING && c->approval[0])
				flush_now(c);
	}
	while (gw->conns)
		conn_free(gw->conns);
	while (gw->pool)
		pool_remove(gw->pool, true);
	for (size_t i = 0; i < GW_MAX_SESSIONS; i++)
		SSL_SESSION_free(gw->sessions[i].sess);

	if (gw->wake_ev)
		event_free(gw->wake_ev);
	if (gw->wake_fd >= 0)
		close(gw->wake_fd);
	/* What the rate cap held back is reported before the end. */
	flood_report(gw);
	if (gw->flood)
		event_free(gw->flood);
	if (gw->rearm)
		event_free(gw->rearm);
	for (size_t i = 0; i < gw->n_listeners; i++)
		evconnlistener_free(gw->listeners[i]);
	if (gw->dns)
		evdns_base_free(gw->dns, 1);
	if (gw->dns_ev)
		event_free(gw->dns_ev);
	if (gw->dns_stub_fd >= 0)
		close(gw->dns_stub_fd);
	moat_dnsmap_free(gw->dnsmap);
	moat_netrules_slot_destroy(&gw->rules);
	moat_budget_free(gw->budget);
	free(gw->hosts);
	free(gw->raw_ports);
	free(gw->resolver);
	moat__strv_free(gw->terminate_hosts);
	SSL_CTX_free(gw->tls_server);
	SSL_CTX_free(gw->tls_client);
	free(gw);
}

int moat_gateway_add_listener_fd(moat_gateway *gw, int fd, moat_error *err)
{
	_cleanup_close_ int owned = fd;
	if (gw->n_listeners >= MOAT_GATEWAY_MAX_LISTENERS)
		return moat_error_set(err, EMFILE, "gateway: too many listeners");
	if (evutil_make_socket_nonblocking(owned) < 0 || fcntl(owned, F_SETFD, FD_CLOEXEC) < 0)
		return moat_error_set(err, errno, "gateway: listener");
	struct evconnlistener *l =
		evconnlistener_new(gw->base, accept_cb, gw, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, owned);
	if (!l)
		return moat_error_set(err, ENOMEM, "gateway: listener");
	TAKE_FD(owned);
	evconnlistener_set_error_cb(l, accept_error_cb);
	gw->listeners[gw->n_listeners++] = l;
	return 0;
}

int moat_gateway_add_transparent_fd(moat_gateway *gw, int fd, moat_error *err)
{
	_cleanup_close_ int owned = fd;
	if (gw->n_listeners >= MOAT_GATEWAY_MAX_LISTENERS)
		return moat_error_set(err, EMFILE, "gateway: too many listeners");
	if (!gw->dnsmap && !(gw->dnsmap = moat_dnsmap_new()))
		return moat_error_set(err, ENOMEM, "gateway: name map");
	if (evutil_make_socket_nonblocking(owned) < 0 || fcntl(owned, F_SETFD, FD_CLOEXEC) < 0)
		return moat_error_set(err, errno, "gateway: listener");
	struct evconnlistener *l = evconnlistener_new(gw->base, accept_transparent_cb, gw,
						      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, owned);
	if (!l)
		return moat_error_set(err, ENOMEM, "gateway: listener");
	TAKE_FD(owned);
	evconnlistener_set_error_cb(l, accept_error_cb);
	gw->listeners[gw->n_listeners++] = l;
	return 0;
}

int moat_gateway_add_dns_stub_fd(moat_gateway *gw, int fd, moat_error *err)
{
	_cleanup_close_ int owned = fd;
	if (gw->dns_ev)
		return moat_error_set(err, EEXIST, "gateway: a second DNS stub");
	if (!gw->dnsmap && !(gw->dnsmap = moat_dnsmap_new()))
		return moat_error_set(err, ENOMEM, "gateway: name map");
	if (evutil_make_socket_nonblocking(owned) < 0 || fcntl(owned, F_SETFD, FD_CLOEXEC) < 0)
		return moat_error_set(err, errno, "gateway: DNS stub");
	gw->dns_ev = event_new(gw->base, owned, EV_READ | EV_PERSIST, dns_stub_cb, gw);
	if (!gw->dns_ev || event_add(gw->dns_ev, NULL) < 0)
		return moat_error_set(err, ENOMEM, "gateway: DNS stub");
	gw->dns_stub_fd = TAKE_FD(owned);
	return 0;
}

int moat_gateway_listen(moat_gateway *gw, const char *address, uint16_t port, uint16_t *ret_port, moat_error *err)
{
	moat_addr a;
	if (!address || moat_addr_parse(address, strlen(address), &a) < 0)
		return moat_error_set(err, MOAT_EINPUT, "gateway: '%s' is not an IP address", address ? address : "");
	struct sockaddr_storage ss;
	socklen_t sl;
	moat_addr_to_sockaddr(&a, port, &ss, &sl);
	_cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return moat_error_set(err, errno, "gateway: socket");
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return moat_error_set(err, errno, "gateway: bind %s port %u", address, (unsigned)port);
	if (listen(fd, 512) < 0)
		return moat_error_set(err, errno, "gateway: listen");
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return moat_error_set(err, errno, "gateway: getsockname");
	uint16_t bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						    : ((struct sockaddr_in6 *)&ss)->sin6_port);
	int r = moat_gateway_add_listener_fd(gw, TAKE_FD(fd), err);
	if (r < 0)
		return r;
	if (ret_port)
		*ret_port = bound;
	return 0;
}

void moat_gateway_set_rules(moat_gateway *gw, moat_netrules *rules)
{
	moat_netrules_slot_publish(&gw->rules, rules ? moat_netrules_ref(rules) : NULL);
}

void moat_gateway_get_stats(const moat_gateway *gw, moat_gateway_stats *ret)
{
	*ret = gw->stats;
}

void moat_gateway_get_counters(const moat_gateway *gw, moat_gateway_counters *ret)
{
	ret->allowed = __atomic_load_n(&gw->stats.allowed, __ATOMIC_RELAXED);
	ret->denied = __atomic_load_n(&gw->stats.denied, __ATOMIC_RELAXED);
	ret->bytes_up = __atomic_load_n(&gw->stats.bytes_up, __ATOMIC_RELAXED);
	ret->bytes_down = __atomic_load_n(&gw->stats.bytes_down, __ATOMIC_RELAXED);
}

char **moat_gateway_proxy_env(uint16_t port)
{
	char http[64], socks[64];
	/* The sandbox's own loopback servers are reached directly: the
	 * gateway would refuse loopback, and the namespace's loopback holds
	 * nothing but the sandbox's own. */
	static const char loopback[] = "localhost,127.0.0.1,::1";
	snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned)port);
	snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%u", (unsigned)port);
	const struct {
		const char *name, *value;
	} vars[] = {
		{"HTTP_PROXY", http}, {"HTTPS_PROXY", http}, {"ALL_PROXY", socks},
		{"http_proxy", http}, {"https_proxy", http}, {"all_proxy", socks},
		{"NO_PROXY", loopback}, {"no_proxy", loopback},
	};
	char **env = NULL;
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		char buf[128];
		snprintf(buf, sizeof(buf), "%s=%s", vars[i].name, vars[i].value);
		if (moat__strv_push(&env, buf) < 0) {
			moat__strv_free(env);
			return NULL;
		}
	}
	return env;
}

/* ---- helpers for the fronts ------------------------------------------------ */

/* A JSON string of s, which may hold a peer's bytes: text that is not
 * UTF-8 would make json_string fail and the field vanish, so every byte
 * outside ASCII is then written as \xNN instead. A refusal keeps its SNI
 * and host in the log, however they were spelt. */
static json_t *json_string_escaped(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	size_t n = strlen(s);
	_cleanup_free_ char *buf = malloc(n * 4 + 1);
	if (!buf)
		return json_null();
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x80)
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", ch);
	}
	buf[o] = '\0';
	return json_string(buf);
}

json_t *moat_net_event_to_json(const moat_net_event *ev)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (ev->type && strcmp(ev->type, "net.flood") == 0) {
		json_object_set_new(o, "suppressed", json_integer((json_int_t)ev->suppressed));
		json_object_set_new(o, "reason", json_string_escaped(ev->reason));
		return o;
	}
	json_object_set_new(o, "protocol", json_string_escaped(ev->protocol));
	json_object_set_new(o, "host", json_string_escaped(ev->host));
	json_object_set_new(o, "port", json_integer(ev->port));
	json_object_set_new(o, "address", ev->address && ev->address[0] ? json_string_escaped(ev->address) : json_null());
	json_object_set_new(o, "method", ev->method ? json_string_escaped(ev->method) : json_null());
	json_object_set_new(o, "path", ev->path ? json_string_escaped(ev->path) : json_null());
	if (ev->sni)
		json_object_set_new(o, "sni", json_string_escaped(ev->sni));
	json_object_set_new(o, "bytes_up", json_integer((json_int_t)ev->bytes_up));
	json_object_set_new(o, "bytes_down", json_integer((json_int_t)ev->bytes_down));
	json_object_set_new(o, "duration_ms", json_integer((json_int_t)ev->duration_ms));
	json_object_set_new(o, "decision", json_string_escaped(ev->decision));
	json_object_set_new(o, "rule", ev->rule >= 0 ? json_integer(ev->rule) : json_null());
	json_object_set_new(o, "reason", json_string_escaped(ev->reason));
	if (ev->secret)
		json_object_set_new(o, "secret", json_string_escaped(ev->secret));
	if (ev->alert)
		json_object_set_new(o, "alert", json_true());
	if (ev->approval)
		json_object_set_new(o, "approval", json_string_escaped(ev->approval));
	if (ev->lease)
		json_object_set_new(o, "lease", json_string_escaped(ev->lease));
	return o;
}



int moat_gateway_rules_from_patterns(char *const *allow_hosts, char *const *allow_private, moat_netrules **ret,
				     moat_error *err)
{
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	if (!b)
		return moat_error_set(err, ENOMEM, "network rules");
	moat_netrules_builder_set_default(b, MOAT_NET_DENY);
	for (char *const *p = allow_hosts; p && *p; p++) {
		_cleanup_free_ char *host = NULL;
		uint16_t ports[MOAT_NETRULE_MAX_PORTS];
		size_t n_ports = 0;
		int r = moat_allow_host_spec_parse(*p, &host, ports, ELEMENTSOF(ports), &n_ports, err);
		if (r < 0)
			return r;
		moat_netrule_spec spec = {
			.host = host,
			.ports = n_ports ? ports : NULL,
			.n_ports = n_ports,
			.action = MOAT_NET_ALLOW,
		};
		r = moat_netrules_builder_add(b, &spec, err);
		if (r < 0)
			return moat_error_wrap(err, "network.allow: %s", *p);
	}
	for (char *const *p = allow_private; p && *p; p++) {
		int r = moat_netrules_builder_allow_private(b, *p, err);
		if (r < 0)
			return moat_error_wrap(err, "network.allow_private: %s", *p);
	}
	return moat_netrules_builder_finish(b, ret, err);
}
