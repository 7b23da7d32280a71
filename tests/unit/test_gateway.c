/* The gateway engine end to end on loopback: a gateway on its own thread
 * (as in a run), upstream servers and a test name server on another, and
 * blocking clients here that speak HTTP, CONNECT and SOCKS5 to it. Every
 * upstream is on 127.0.0.1 and is reachable only because the rules list it
 * in allow_private. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "gateway.h"
#include "netproxy.h"
#include "netrules.h"
#include "proxyproto.h"

/* ---- upstream servers, on their own event loop ---------------------------- */

static struct event_base *up_base;
static pthread_t up_thread;
static int up_stop_fd = -1;
static uint16_t echo_port, http_port, dns_port;
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_head[8192];
static int http_requests;
static int dns_a_queries;

static void echo_read(struct bufferevent *bev, void *arg)
{
	(void)arg;
	bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void up_event(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

static void http_write_done(struct bufferevent *bev, void *arg)
{
	(void)arg;
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_free(bev);
}

/* Answers one request per connection, and records every request head it
 * sees on it (so a smuggled second request would show). */
static void http_read(struct bufferevent *bev, void *arg)
{
	(void)arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0)
		return;
	size_t len = evbuffer_get_length(in);
	pthread_mutex_lock(&up_lock);
	size_t n = len < sizeof(last_head) - 1 ? len : sizeof(last_head) - 1;
	evbuffer_copyout(in, last_head, n);
	last_head[n] = '\0';
	for (char *p = last_head; (p = strstr(p, " HTTP/1.1\r\n")); p++)
		http_requests++;
	pthread_mutex_unlock(&up_lock);
	evbuffer_drain(in, len);
	evbuffer_add_printf(bufferevent_get_output(bev),
			    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
	bufferevent_setcb(bev, NULL, http_write_done, up_event, NULL);
}

static void up_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	(void)l;
	(void)sa;
	(void)len;
	struct bufferevent *bev = bufferevent_socket_new(up_base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, arg ? http_read : echo_read, NULL, up_event, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* The test name server: rebind.test answers 127.0.0.1 the first time and
 * 127.0.0.3 afterwards, like a DNS rebinding attacker; mixed.test answers
 * with an allowed and a refused address at once. */
static void dns_cb(struct evdns_server_request *req, void *arg)
{
	(void)arg;
	for (int i = 0; i < req->nquestions; i++) {
		const struct evdns_server_question *q = req->questions[i];
		if (q->type != EVDNS_TYPE_A)
			continue;
		pthread_mutex_lock(&up_lock);
		int nth = dns_a_queries++;
		pthread_mutex_unlock(&up_lock);
		struct in_addr a[2];
		int n = 1;
		if (strcasecmp(q->name, "rebind.test") == 0) {
			inet_pton(AF_INET, nth == 0 ? "127.0.0.1" : "127.0.0.3", &a[0]);
		} else if (strcasecmp(q->name, "mixed.test") == 0) {
			inet_pton(AF_INET, "127.0.0.1", &a[0]);
			inet_pton(AF_INET, "127.0.0.3", &a[1]);
			n = 2;
		} else {
			continue;
		}
		evdns_server_request_add_a_reply(req, q->name, n, a, 0);
	}
	evdns_server_request_respond(req, 0);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void *up_main(void *arg)
{
	(void)arg;
	event_base_dispatch(up_base);
	return NULL;
}

static uint16_t listener_port(struct evconnlistener *l)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &sl);
	return ntohs(sin.sin_port);
}

static struct evconnlistener *up_listen(bool http)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	return evconnlistener_new_bind(up_base, up_accept, http ? (void *)1 : NULL,
				       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 256, (struct sockaddr *)&sin,
				       sizeof(sin));
}

static int dns_sock = -1;
static struct evdns_server_port *dns_server;
static struct evconnlistener *echo_l, *http_l;
static struct event *up_stop_ev;

static void upstreams_start(void)
{
	up_base = event_base_new();
	assert_non_null(up_base);
	echo_l = up_listen(false);
	http_l = up_listen(true);
	assert_non_null(echo_l);
	assert_non_null(http_l);
	echo_port = listener_port(echo_l);
	http_port = listener_port(http_l);

	dns_sock = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(dns_sock, (struct sockaddr *)&sin, sizeof(sin)), 0);
	socklen_t sl = sizeof(sin);
	getsockname(dns_sock, (struct sockaddr *)&sin, &sl);
	dns_port = ntohs(sin.sin_port);
	dns_server = evdns_add_server_port_with_base(up_base, dns_sock, 0, dns_cb, NULL);
	assert_non_null(dns_server);

	up_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	up_stop_ev = event_new(up_base, up_stop_fd, EV_READ | EV_PERSIST, stop_cb, up_base);
	event_add(up_stop_ev, NULL);
	assert_int_equal(pthread_create(&up_thread, NULL, up_main, NULL), 0);
}

static void upstreams_stop(void)
{
	uint64_t one = 1;
	(void)!write(up_stop_fd, &one, sizeof(one));
	pthread_join(up_thread, NULL);
	evdns_close_server_port(dns_server);
	close(dns_sock);
	evconnlistener_free(echo_l);
	evconnlistener_free(http_l);
	event_free(up_stop_ev);
	close(up_stop_fd);
	event_base_free(up_base);
}

/* ---- the gateway under test ---------------------------------------------- */

#define MAX_EVENTS 512
typedef struct ev_copy {
	char type[16], protocol[16], host[128], address[64], decision[8], method[16], path[128], reason[320];
	int rule;
	uint64_t bytes_up, bytes_down, suppressed;
} ev_copy;
static ev_copy events[MAX_EVENTS];
static int n_events;
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_event(void *userdata, const moat_net_event *ev)
{
	(void)userdata;
	pthread_mutex_lock(&ev_lock);
	if (n_events < MAX_EVENTS) {
		ev_copy *e = &events[n_events++];
		snprintf(e->type, sizeof(e->type), "%s", ev->type ? ev->type : "");
		e->suppressed = ev->suppressed;
		snprintf(e->protocol, sizeof(e->protocol), "%s", ev->protocol);
		snprintf(e->host, sizeof(e->host), "%s", ev->host);
		snprintf(e->address, sizeof(e->address), "%s", ev->address ? ev->address : "");
		snprintf(e->decision, sizeof(e->decision), "%s", ev->decision);
		snprintf(e->method, sizeof(e->method), "%s", ev->method ? ev->method : "");
		snprintf(e->path, sizeof(e->path), "%s", ev->path ? ev->path : "");
		snprintf(e->reason, sizeof(e->reason), "%s", ev->reason);
		e->rule = ev->rule;
		e->bytes_up = ev->bytes_up;
		e->bytes_down = ev->bytes_down;
	}
	pthread_mutex_unlock(&ev_lock);
}

/* Waits (briefly) for the event of the latest connection to host. */
static ev_copy last_event_for(const char *host)
{
	for (int tries = 0; tries < 200; tries++) {
		pthread_mutex_lock(&ev_lock);
		for (int i = n_events - 1; i >= 0; i--) {
			if (strcmp(events[i].host, host) == 0) {
				ev_copy e = events[i];
				events[i].host[0] = '\0'; /* consumed */
				pthread_mutex_unlock(&ev_lock);
				return e;
			}
		}
		pthread_mutex_unlock(&ev_lock);
		usleep(10000);
	}
	ev_copy none;
	memset(&none, 0, sizeof(none));
	return none;
}

static moat_netproxy *proxy;
static uint16_t proxy_port;

static moat_netrules *make_rules(const char *const *hosts)
{
	moat_netrules *r = NULL;
	moat_error err = {0};
	char *allow_private[] = {"127.0.0.1/32", NULL};
	int ret = moat_gateway_rules_from_patterns((char *const *)hosts, allow_private, &r, &err);
	if (ret < 0)
		fail_msg("rules: %s", err.msg);
	return r;
}

static void gateway_start(const moat_gateway_config *extra)
{
	char up_http[64], up_echo[64], rebind[64], mixed[64], internal[64], echo443[64];
	snprintf(up_http, sizeof(up_http), "up.test:%u", http_port);
	snprintf(up_echo, sizeof(up_echo), "up.test:%u", echo_port);
	snprintf(rebind, sizeof(rebind), "rebind.test:%u", http_port);
	snprintf(mixed, sizeof(mixed), "mixed.test:%u", http_port);
	snprintf(internal, sizeof(internal), "internal.test:%u", http_port);
	snprintf(echo443, sizeof(echo443), "raw.test:%u", echo_port);
	const char *hosts[] = {up_http, up_echo, rebind, mixed, internal, echo443, NULL};
	moat_netrules *rules = make_rules(hosts);

	static moat_gateway_host static_hosts[] = {
		{"up.test", "127.0.0.1"},
		{"raw.test", "127.0.0.1"},
		{"internal.test", "127.0.0.2"},
	};
	static char resolver[32];
	snprintf(resolver, sizeof(resolver), "127.0.0.1:%u", dns_port);
	static uint16_t raw_ports[1];
	moat_gateway_config cfg = {0};
	if (extra)
		cfg = *extra;
	cfg.rules = rules;
	cfg.hosts = static_hosts;
	cfg.n_hosts = ELEMENTSOF(static_hosts);
	cfg.resolver = resolver;
	cfg.on_event = on_event;
	cfg.connect_timeout_ms = 2000;
	(void)raw_ports;

	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 512), 0);
	socklen_t sl = sizeof(sin);
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	proxy_port = ntohs(sin.sin_port);
	moat_error err = {0};
	moat_netproxy_fds fds = {.proxy = fd, .transparent = -1, .dns = -1, .upstream_netns = -1};
	if (moat__netproxy_start(&cfg, &fds, &proxy, &err) < 0)
		fail_msg("gateway: %s", err.msg);
	moat_netrules_unref(rules);
}

static void gateway_stop(void)
{
	moat__netproxy_stop(proxy, NULL);
	proxy = NULL;
}

static int setup(void **state)
{
	(void)state;
	n_events = 0;
	http_requests = 0;
	dns_a_queries = 0;
	last_head[0] = '\0';
	gateway_start(NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_stop();
	return 0;
}

/* ---- clients --------------------------------------------------------------- */

static int client_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(proxy_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	assert_int_equal(moat__write_all(fd, buf, len), 0);
}

/* Reads until EOF (or the buffer is full); returns the length. */
static size_t read_to_eof(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

/* Reads until the head of a response has arrived. */
static void read_head(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		ssize_t n = read(fd, buf + got, 1);
		if (n <= 0)
			break;
		got++;
		buf[got] = '\0';
		if (got >= 4 && memcmp(buf + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	buf[got] = '\0';
}

static void read_exact(int fd, void *buf, size_t len)
{
	assert_int_equal(moat__read_all(fd, buf, len), (ssize_t)len);
}

static char *http_get(const char *target, const char *extra_headers)
{
	int fd = client_connect();
	static char req[16384];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n%s\r\n", target, extra_headers ? extra_headers : "");
	send_all(fd, req, strlen(req));
	static char resp[16384];
	read_to_eof(fd, resp, sizeof(resp));
	close(fd);
	return resp;
}

/* A real ClientHello for sni, made by OpenSSL on memory BIOs. */
static size_t client_hello(const char *sni, unsigned char *buf, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	SSL_set_bio(ssl, rb, wb);
	if (sni)
		SSL_set_tlsext_host_name(ssl, sni);
	SSL_set_connect_state(ssl);
	SSL_do_handshake(ssl);
	char *data;
	long len = BIO_get_mem_data(wb, &data);
	assert_true(len > 0 && (size_t)len <= cap);
	memcpy(buf, data, (size_t)len);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)len;
}

static int connect_tunnel(const char *authority, char *resp, size_t cap)
{
	int fd = client_connect();
	char req[512];
	snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority);
	send_all(fd, req, strlen(req));
	read_head(fd, resp, cap);
	return fd;
}

/* ---- the tests -------------------------------------------------------------- */

static void test_http_allowed_and_rewritten(void **state)
{
	(void)state;
	char target[128], hdrs[256];
	snprintf(target, sizeof(target), "http://up.test:%u/path?q=1", http_port);
	snprintf(hdrs, sizeof(hdrs),
		 "Host: up.test:%u\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive, X-Hop\r\n"
		 "X-Hop: 1\r\nX-Keep: 2\r\n",
		 http_port);
	char *resp = http_get(target, hdrs);
	assert_non_null(strstr(resp, "200 OK"));
	assert_non_null(strstr(resp, "hello"));
	pthread_mutex_lock(&up_lock);
	assert_true(strncmp(last_head, "GET /path?q=1 HTTP/1.1\r\n", 24) == 0);
	assert_null(strcasestr(last_head, "Proxy-Authorization"));
	assert_null(strcasestr(last_head, "X-Hop"));
	assert_null(strcasestr(last_head, "keep-alive"));
	assert_non_null(strstr(last_head, "X-Keep: 2\r\n"));
	assert_non_null(strstr(last_head, "Connection: close\r\n"));
	pthread_mutex_unlock(&up_lock);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "allow");
	assert_string_equal(e.protocol, "http");
	assert_string_equal(e.method, "GET");
	assert_string_equal(e.path, "/path?q=1");
	assert_string_equal(e.address, "127.0.0.1");
	assert_true(e.bytes_down >= 5);
	assert_true(e.rule >= 0);
}

/* Java's HttpClient offers an upgrade to cleartext HTTP/2 on every http://
 * request: the offer is dropped and the request served in HTTP/1.1, while
 * any other upgrade (websocket) is still refused. */
static void test_h2c_offer_dropped(void **state)
{
	(void)state;
	char target[128], hdrs[256];
	snprintf(target, sizeof(target), "http://up.test:%u/", http_port);
	snprintf(hdrs, sizeof(hdrs),
		 "Host: up.test:%u\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
		 "HTTP2-Settings: AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA\r\n",
		 http_port);
	char *resp = http_get(target, hdrs);
	assert_non_null(strstr(resp, "200 OK"));
	pthread_mutex_lock(&up_lock);
	assert_null(strcasestr(last_head, "Upgrade"));
	assert_null(strcasestr(last_head, "HTTP2-Settings"));
	pthread_mutex_unlock(&up_lock);
	snprintf(hdrs, sizeof(hdrs), "Host: up.test:%u\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n", http_port);
	resp = http_get(target, hdrs);
	assert_non_null(strstr(resp, "501 "));
}

static void test_http_denied_host(void **state)
{
	(void)state;
	char *resp = http_get("http://api.evil.test/steal", "Host: api.evil.test\r\n");
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	assert_non_null(strstr(resp, "X-Moat-Reason: moat: "));
	assert_non_null(strstr(resp, "api.evil.test"));
	ev_copy e = last_event_for("api.evil.test");
	assert_string_equal(e.decision, "deny");
	assert_int_equal(e.rule, -1);
	assert_int_equal(http_requests, 0);
}

static void test_http_private_address_refused(void **state)
{
	(void)state;
	char target[128];
	snprintf(target, sizeof(target), "http://internal.test:%u/", http_port);
	char *resp = http_get(target, NULL);
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	/* The client learns the class of the answer, never the answer. */
	assert_null(strstr(resp, "127.0.0.2"));
	assert_non_null(strstr(resp, "special-purpose address (loopback)"));
	assert_non_null(strstr(resp, "allow_private"));
	ev_copy e = last_event_for("internal.test");
	assert_string_equal(e.decision, "deny");
	/* The host's log keeps it. */
	assert_string_equal(e.address, "127.0.0.2");
	assert_int_equal(http_requests, 0);
}

static void test_literal_encodings_refused(void **state)
{
	(void)state;
	/* Rules that allow each of these addresses on the upstream port: only
	 * the SSRF guard stands between their spellings and a server. */
	const char *lits[] = {"127.0.0.1", "127.0.0.2", "[::ffff:127.0.0.2]", "[::1]", "0.0.0.0", "169.254.169.254"};
	char bufs[ELEMENTSOF(lits)][64];
	const char *hosts[ELEMENTSOF(lits) + 1];
	for (size_t i = 0; i < ELEMENTSOF(lits); i++) {
		snprintf(bufs[i], sizeof(bufs[i]), "%s:%u", lits[i], http_port);
		hosts[i] = bufs[i];
	}
	hosts[ELEMENTSOF(lits)] = NULL;
	moat_netrules *r = make_rules(hosts);
	moat_gateway_set_rules(moat__netproxy_gateway(proxy), r);
	moat_netrules_unref(r);
	const char *forms[] = {"127.0.0.2", "2130706434", "0x7f000002", "0177.0.0.2", "0x7f.0.0.2", "127.2",
			       "[::ffff:127.0.0.2]", "[::ffff:7f00:2]", "[::1]", "0.0.0.0", "169.254.169.254"};
	for (size_t i = 0; i < ELEMENTSOF(forms); i++) {
		char target[128];
		snprintf(target, sizeof(target), "http://%s:%u/", forms[i], http_port);
		char *resp = http_get(target, NULL);
		if (!strstr(resp, "HTTP/1.1 403 ") || !strstr(resp, "allow_private"))
			fail_msg("%s was not refused by the SSRF guard: %.200s", forms[i], resp);
	}
	assert_int_equal(http_requests, 0);
	/* 127.0.0.1 is in allow_private: the same rules let it through. */
	char target[128];
	snprintf(target, sizeof(target), "http://127.0.0.1:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
}

static void test_rules_swap(void **state)
{
	(void)state;
	char target[128];
	snprintf(target, sizeof(target), "http://up.test:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
	const char *none[] = {"nothing.test", NULL};
	moat_netrules *r = make_rules(none);
	moat_gateway_set_rules(moat__netproxy_gateway(proxy), r);
	moat_netrules_unref(r);
	assert_non_null(strstr(http_get(target, NULL), "HTTP/1.1 403 "));
}

static void test_origin_form_and_smuggling(void **state)
{
	(void)state;
	char *resp = http_get("/", "Host: up.test\r\n");
	assert_non_null(strstr(resp, "HTTP/1.1 400 "));

	/* A second request hidden after an empty body is dropped, never
	 * forwarded. */
	int fd = client_connect();
	char req[1024];
	snprintf(req, sizeof(req),
		 "POST http://up.test:%u/a HTTP/1.1\r\nHost: up.test:%u\r\nContent-Length: 0\r\n\r\n"
		 "GET http://up.test:%u/admin HTTP/1.1\r\nHost: up.test:%u\r\n\r\n",
		 http_port, http_port, http_port, http_port);
	send_all(fd, req, strlen(req));
	char buf[4096];
	read_to_eof(fd, buf, sizeof(buf));
	close(fd);
	assert_non_null(strstr(buf, "200 OK"));
	pthread_mutex_lock(&up_lock);
	assert_int_equal(http_requests, 1);
	assert_null(strstr(last_head, "/admin"));
	pthread_mutex_unlock(&up_lock);

	char te[256];
	snprintf(te, sizeof(te), "http://up.test:%u/", http_port);
	resp = http_get(te, "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n");
	assert_non_null(strstr(resp, "HTTP/1.1 400 "));
}

/* A client that shuts down its sending side after the request still gets
 * the response; through a tunnel the half-close is passed on. */
static void test_half_close(void **state)
{
	(void)state;
	int fd = client_connect();
	char req[256];
	snprintf(req, sizeof(req), "GET http://up.test:%u/ HTTP/1.1\r\nHost: up.test:%u\r\n\r\n", http_port, http_port);
	send_all(fd, req, strlen(req));
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	char buf[4096];
	read_to_eof(fd, buf, sizeof(buf));
	close(fd);
	assert_non_null(strstr(buf, "200 OK"));

	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	unsigned char hello[4096], back[4096];
	size_t n = client_hello("up.test", hello, sizeof(hello));
	send_all(fd, hello, n);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	size_t got = read_to_eof(fd, (char *)back, sizeof(back));
	close(fd);
	assert_int_equal(got, n);
	assert_memory_equal(hello, back, n);
}

/* A chunked body is forwarded chunked, exactly to its last chunk: what
 * follows (a second request) is dropped, and broken framing cuts the
 * request. */
static void test_chunked_body(void **state)
{
	(void)state;
	int fd = client_connect();
	char req[1024];
	snprintf(req, sizeof(req),
		 "POST http://up.test:%u/upload HTTP/1.1\r\nHost: up.test:%u\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n"
		 "GET http://up.test:%u/admin HTTP/1.1\r\nHost: up.test:%u\r\n\r\n",
		 http_port, http_port, http_port, http_port);
	send_all(fd, req, strlen(req));
	char buf[4096];
	read_to_eof(fd, buf, sizeof(buf));
	close(fd);
	assert_non_null(strstr(buf, "200 OK"));
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "allow");
	pthread_mutex_lock(&up_lock);
	assert_int_equal(http_requests, 1);
	assert_non_null(strstr(last_head, "POST /upload HTTP/1.1\r\n"));
	assert_non_null(strstr(last_head, "Transfer-Encoding: chunked\r\n"));
	assert_null(strstr(last_head, "/admin"));
	pthread_mutex_unlock(&up_lock);

	/* Broken framing: the request is cut, and the log says why. */
	fd = client_connect();
	snprintf(req, sizeof(req),
		 "POST http://up.test:%u/upload HTTP/1.1\r\nHost: up.test:%u\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "zz\r\nhello\r\n",
		 http_port, http_port);
	send_all(fd, req, strlen(req));
	read_to_eof(fd, buf, sizeof(buf));
	close(fd);
	e = last_event_for("up.test");
	assert_string_equal(e.decision, "deny");
	assert_non_null(strstr(e.reason, "chunked request body"));
}

static void test_connect_tls_relayed(void **state)
{
	(void)state;
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	unsigned char hello[4096], back[4096];
	size_t n = client_hello("up.test", hello, sizeof(hello));
	send_all(fd, hello, n);
	read_exact(fd, back, n);
	assert_memory_equal(hello, back, n);
	close(fd);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "allow");
	assert_string_equal(e.protocol, "connect");
	/* The CONNECT head counts as sent by the sandbox, then the tunnel. */
	size_t head = strlen("CONNECT  HTTP/1.1\r\nHost: \r\n\r\n") + 2 * strlen(auth);
	assert_int_equal(e.bytes_up, head + n);
	assert_int_equal(e.bytes_down, n);
}

static void test_connect_sni_mismatch(void **state)
{
	(void)state;
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	unsigned char hello[4096];
	size_t n = client_hello("evil.test", hello, sizeof(hello));
	send_all(fd, hello, n);
	char buf[64];
	assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0);
	close(fd);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "deny");
	assert_non_null(strstr(e.reason, "does not match"));
	assert_non_null(strstr(e.reason, "evil.test"));
	/* Only the CONNECT head went anywhere: the hello was held back. */
	assert_int_equal(e.bytes_up, strlen("CONNECT  HTTP/1.1\r\nHost: \r\n\r\n") + 2 * strlen(auth));
}

/* The SNI goes upstream as sent: one that only equals the tunnel's host
 * once percent-decoded is refused. */
static void test_connect_sni_encoded(void **state)
{
	(void)state;
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	unsigned char hello[4096];
	size_t n = client_hello("up%2etest", hello, sizeof(hello));
	send_all(fd, hello, n);
	char buf[64];
	assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0);
	close(fd);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "deny");
	assert_non_null(strstr(e.reason, "percent-encoded"));
	assert_int_equal(e.bytes_up, strlen("CONNECT  HTTP/1.1\r\nHost: \r\n\r\n") + 2 * strlen(auth));
}

/* What the rules judge is what the upstream gets: method overrides are
 * judged as the method they name, URL overrides never leave, and a method
 * in lower case is refused. */
static void test_http_overrides(void **state)
{
	(void)state;
	static const char *const get[] = {"GET"};
	static const char *const del[] = {"DELETE"};
	moat_error err = {0};
	moat_netrules *r = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	uint16_t port = http_port;
	moat_netrule_spec deny = {.host = "up.test", .ports = &port, .n_ports = 1, .methods = del, .n_methods = 1,
				  .action = MOAT_NET_DENY};
	moat_netrule_spec allow = {.host = "up.test", .ports = &port, .n_ports = 1, .methods = get, .n_methods = 1,
				   .action = MOAT_NET_ALLOW};
	assert_int_equal(moat_netrules_builder_add(b, &deny, &err), 0);
	assert_int_equal(moat_netrules_builder_add(b, &allow, &err), 0);
	assert_int_equal(moat_netrules_builder_allow_private(b, "127.0.0.1/32", &err), 0);
	assert_int_equal(moat_netrules_builder_finish(b, &r, &err), 0);
	moat_gateway_set_rules(moat__netproxy_gateway(proxy), r);
	moat_netrules_unref(r);

	char target[128], hdrs[256];
	snprintf(target, sizeof(target), "http://up.test:%u/x", http_port);
	static const char *const names[] = {"X-HTTP-Method-Override", "X-HTTP-Method", "x-method-override"};
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		snprintf(hdrs, sizeof(hdrs), "%s: DELETE\r\n", names[i]);
		char *resp = http_get(target, hdrs);
		if (!strstr(resp, "HTTP/1.1 403 ") || !strstr(resp, "method override DELETE"))
			fail_msg("%s: %.200s", names[i], resp);
	}
	assert_int_equal(http_requests, 0);
	assert_non_null(strstr(http_get(target, "X-HTTP-Method-Override: GET\r\n"), "200 OK"));
	assert_non_null(strstr(http_get(target, "X-HTTP-Method-Override: GET\r\nX-HTTP-Method: PUT\r\n"),
			       "HTTP/1.1 400 "));

	assert_non_null(strstr(http_get(target, "X-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\nX-Keep: 1\r\n"),
			       "200 OK"));
	pthread_mutex_lock(&up_lock);
	assert_null(strcasestr(last_head, "X-Original-URL"));
	assert_null(strcasestr(last_head, "X-Rewrite-URL"));
	assert_non_null(strstr(last_head, "X-Keep: 1\r\n"));
	pthread_mutex_unlock(&up_lock);

	int fd = client_connect();
	char req[256], resp[1024];
	snprintf(req, sizeof(req), "get %s HTTP/1.1\r\n\r\n", target);
	send_all(fd, req, strlen(req));
	read_to_eof(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 400 "));
	assert_non_null(strstr(resp, "upper case"));
}

static void test_connect_not_tls(void **state)
{
	(void)state;
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	const char *plain = "GET /admin HTTP/1.1\r\nHost: up.test\r\n\r\n";
	send_all(fd, plain, strlen(plain));
	char buf[64];
	assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0);
	close(fd);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "deny");
	assert_non_null(strstr(e.reason, "TLS"));
}

static void test_connect_denied(void **state)
{
	(void)state;
	char resp[1024];
	int fd = connect_tunnel("api.evil.test:443", resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	close(fd);
	char auth[64];
	snprintf(auth, sizeof(auth), "127.0.0.2:%u", echo_port);
	fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	close(fd);
}

static int socks_open(const uint8_t *req, size_t len, uint8_t *ret_code)
{
	int fd = client_connect();
	const uint8_t greet[] = {5, 1, 0};
	send_all(fd, greet, sizeof(greet));
	uint8_t g[2];
	read_exact(fd, g, 2);
	assert_int_equal(g[0], 5);
	assert_int_equal(g[1], 0);
	send_all(fd, req, len);
	uint8_t rep[10];
	read_exact(fd, rep, sizeof(rep));
	assert_int_equal(rep[0], 5);
	*ret_code = rep[1];
	return fd;
}

static size_t socks_domain_req(const char *host, uint16_t port, uint8_t *buf)
{
	size_t hl = strlen(host), n = 0;
	buf[n++] = 5;
	buf[n++] = 1;
	buf[n++] = 0;
	buf[n++] = 3;
	buf[n++] = (uint8_t)hl;
	memcpy(buf + n, host, hl);
	n += hl;
	buf[n++] = (uint8_t)(port >> 8);
	buf[n++] = (uint8_t)port;
	return n;
}

static void test_socks5(void **state)
{
	(void)state;
	uint8_t req[300], code;
	size_t n = socks_domain_req("up.test", echo_port, req);
	int fd = socks_open(req, n, &code);
	assert_int_equal(code, 0);
	unsigned char hello[4096], back[4096];
	size_t hn = client_hello("up.test", hello, sizeof(hello));
	send_all(fd, hello, hn);
	read_exact(fd, back, hn);
	assert_memory_equal(hello, back, hn);
	close(fd);
	assert_string_equal(last_event_for("up.test").protocol, "socks5");

	n = socks_domain_req("api.evil.test", 443, req);
	fd = socks_open(req, n, &code);
	assert_int_equal(code, MOAT_SOCKS5_REP_NOT_ALLOWED);
	close(fd);
	assert_string_equal(last_event_for("api.evil.test").decision, "deny");

	/* An IPv4 literal of a refused range. */
	const uint8_t lit[] = {5, 1, 0, 1, 127, 0, 0, 2, (uint8_t)(echo_port >> 8), (uint8_t)echo_port};
	fd = socks_open(lit, sizeof(lit), &code);
	assert_int_equal(code, MOAT_SOCKS5_REP_NOT_ALLOWED);
	close(fd);

	/* UDP ASSOCIATE is refused as unsupported. */
	const uint8_t udp[] = {5, 3, 0, 1, 0, 0, 0, 0, 0, 0};
	fd = socks_open(udp, sizeof(udp), &code);
	assert_int_equal(code, MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED);
	close(fd);
}

static void test_dns_rebinding(void **state)
{
	(void)state;
	char target[128];
	snprintf(target, sizeof(target), "http://rebind.test:%u/", http_port);
	/* First answer: 127.0.0.1, which allow_private opens. */
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
	ev_copy e = last_event_for("rebind.test");
	assert_string_equal(e.address, "127.0.0.1");
	/* The attacker's name server now answers 127.0.0.3: the gateway asks
	 * again for the new connection, checks the new answer, and refuses. */
	char *resp = http_get(target, NULL);
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	assert_null(strstr(resp, "127.0.0.3"));
	assert_non_null(strstr(resp, "(loopback)"));
	assert_string_equal(last_event_for("rebind.test").address, "127.0.0.3");
	assert_int_equal(http_requests, 1);
	moat_gateway_stats st;
	moat_gateway_get_stats(moat__netproxy_gateway(proxy), &st);
	assert_int_equal(st.dns_queries, 2);

	/* An answer that mixes an allowed and a refused address is refused
	 * as a whole. */
	snprintf(target, sizeof(target), "http://mixed.test:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "HTTP/1.1 403 "));
	assert_int_equal(http_requests, 1);
}

/* ---- starvation and flooding ------------------------------------------- */

/* A sandbox may hold max_clients connections; one more is closed at once,
 * and the gateway serves again as soon as one is let go. */
static void test_max_clients(void **state)
{
	(void)state;
	gateway_stop();
	moat_gateway_config cfg = {0};
	cfg.max_clients = 4;
	gateway_start(&cfg);
	int idle[4];
	for (int i = 0; i < 4; i++)
		idle[i] = client_connect();
	usleep(200000);
	int extra = client_connect();
	/* Closed without a byte. The count is polled rather than timed: on a
	 * loaded machine the gateway's thread may take a while to get there. */
	moat_gateway_stats st = {0};
	for (int i = 0; i < 1000 && st.refused_clients == 0; i++) {
		usleep(10000);
		moat_gateway_get_stats(moat__netproxy_gateway(proxy), &st);
	}
	if (st.refused_clients != 1)
		fail_msg("refused %llu, active %llu", (unsigned long long)st.refused_clients,
			 (unsigned long long)st.active);
	char buf[64];
	assert_int_equal(read_to_eof(extra, buf, sizeof(buf)), 0);
	close(extra);
	ev_copy e = last_event_for("");
	assert_string_equal(e.protocol, "tcp");
	assert_non_null(strstr(e.reason, "4 connections"));
	close(idle[0]);
	usleep(200000);
	char target[128];
	snprintf(target, sizeof(target), "http://up.test:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
	for (int i = 1; i < 4; i++)
		close(idle[i]);
}

/* A head trickled a byte at a time, each byte well within the per-read
 * timeout, still meets the absolute deadline. */
static void test_head_deadline(void **state)
{
	(void)state;
	gateway_stop();
	moat_gateway_config cfg = {0};
	cfg.head_timeout_ms = 600;
	gateway_start(&cfg);
	char req[128];
	int n = snprintf(req, sizeof(req), "GET http://up.test:%u/ HTTP/1.1\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n",
			 http_port);
	int fd = client_connect();
	int sent = 0;
	/* 150 ms a byte: the whole head would take seconds; the deadline
	 * is 600 ms after the connection was accepted. */
	for (; sent < n; sent++) {
		if (write(fd, req + sent, 1) != 1)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 150) > 0)
			break;
	}
	assert_true(sent < n);
	char resp[1024];
	read_to_eof(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 408 "));
	assert_non_null(strstr(resp, "no complete request"));
	assert_int_equal(http_requests, 0);
}

/* The same for a tunnel's ClientHello, counted from the 200. */
static void test_hello_deadline(void **state)
{
	(void)state;
	gateway_stop();
	moat_gateway_config cfg = {0};
	cfg.head_timeout_ms = 600;
	gateway_start(&cfg);
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	unsigned char hello[4096];
	size_t n = client_hello("up.test", hello, sizeof(hello));
	size_t sent = 0;
	for (; sent < n; sent++) {
		if (write(fd, hello + sent, 1) != 1)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 150) > 0)
			break;
	}
	assert_true(sent < n);
	char buf[64];
	assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0);
	close(fd);
	ev_copy e = last_event_for("up.test");
	assert_string_equal(e.decision, "deny");
	assert_non_null(strstr(e.reason, "ClientHello"));
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Out of descriptors, accept() fails and the listener is disabled; it must
 * be re-armed, or every later request of the run would hang. */
static void test_listener_rearmed(void **state)
{
	(void)state;
	struct rlimit saved, tight;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	int used = open_fds();
	assert_true(used > 0);
	tight = saved;
	tight.rlim_cur = (rlim_t)used + 4;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
	int fds[16];
	int nfd = 0;
	for (int i = 0; i < 16; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(proxy_port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		(void)connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		fds[nfd++] = fd;
	}
	/* The listener stays readable while the queue holds connections
	 * it cannot accept. */
	moat_gateway_stats st = {0};
	for (int i = 0; i < 100 && st.accept_errors == 0; i++) {
		usleep(20000);
		moat_gateway_get_stats(moat__netproxy_gateway(proxy), &st);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	assert_true(st.accept_errors > 0);
	char target[128];
	snprintf(target, sizeof(target), "http://up.test:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
}

/* Events over the rate cap are counted into net.flood events; none is lost
 * from the count. */
static void test_event_flood(void **state)
{
	(void)state;
	gateway_stop();
	moat_gateway_config cfg = {0};
	cfg.events_per_sec = 2; /* a burst of 20 */
	gateway_start(&cfg);
	n_events = 0;
	char path[2048];
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	for (int i = 0; i < 60; i++) {
		char target[2200];
		snprintf(target, sizeof(target), "http://denied.test%s", path);
		assert_non_null(strstr(http_get(target, NULL), "HTTP/1.1 403 "));
	}
	/* The summary comes a second after the first event held back. */
	uint64_t requests = 0, suppressed = 0;
	for (int tries = 0; tries < 300; tries++) {
		requests = suppressed = 0;
		pthread_mutex_lock(&ev_lock);
		for (int i = 0; i < n_events; i++) {
			if (strcmp(events[i].type, "net.flood") == 0)
				suppressed += events[i].suppressed;
			else
				requests++;
		}
		pthread_mutex_unlock(&ev_lock);
		if (requests + suppressed == 60)
			break;
		usleep(20000);
	}
	assert_int_equal(requests + suppressed, 60);
	assert_true(suppressed > 0);
	assert_true(requests >= 20 && requests < 60);
	/* The long path is cut in the log. */
	pthread_mutex_lock(&ev_lock);
	assert_true(strlen(events[0].path) < 200 || strstr(events[0].path, "...") == NULL);
	pthread_mutex_unlock(&ev_lock);
}

/* A peer's bytes that are not UTF-8 stay in the log, escaped. */
static void test_event_json_escapes(void **state)
{
	(void)state;
	moat_net_event ev = {.type = "net.request", .protocol = "connect", .host = "up.test", .port = 443,
			     .address = "", .sni = "\xff\xfe.test", .decision = "deny", .rule = -1,
			     .reason = "moat: the TLS server name \xff\xfe.test does not match"};
	json_t *o = moat_net_event_to_json(&ev);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "sni")), "\\xff\\xfe.test");
	assert_non_null(strstr(json_string_value(json_object_get(o, "reason")), "\\xff\\xfe.test"));
	json_decref(o);
	moat_net_event fl = {.type = "net.flood", .suppressed = 7, .reason = "x"};
	o = moat_net_event_to_json(&fl);
	assert_int_equal(json_integer_value(json_object_get(o, "suppressed")), 7);
	json_decref(o);
}

/* A refused request's head still counts as bytes the sandbox sent. */
static void test_head_counted(void **state)
{
	(void)state;
	char hdrs[4200];
	memset(hdrs, 0, sizeof(hdrs));
	strcpy(hdrs, "X-Big: ");
	memset(hdrs + 7, 'b', 4000);
	strcat(hdrs, "\r\n");
	char *resp = http_get("http://denied.test/", hdrs);
	assert_non_null(strstr(resp, "HTTP/1.1 403 "));
	ev_copy e = last_event_for("denied.test");
	assert_true(e.bytes_up > 4000);
}

static void test_budgets(void **state)
{
	(void)state;
	gateway_stop();
	moat_gateway_config b = {0};
	b.budget_run.requests_per_minute = 3;
	b.budget_dest.max_conns = 1;
	gateway_start(&b);

	/* One tunnel open to up.test: a second concurrent one is refused. */
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	int fd = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 "));
	int fd2 = connect_tunnel(auth, resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 429 "));
	close(fd2);
	close(fd);
	/* The refused tunnel cost nothing: one request was counted, two
	 * more pass, the fourth is over the rate. */
	usleep(100000);
	char target[128];
	snprintf(target, sizeof(target), "http://up.test:%u/", http_port);
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
	assert_non_null(strstr(http_get(target, NULL), "200 OK"));
	char *resp4 = http_get(target, NULL);
	assert_non_null(strstr(resp4, "HTTP/1.1 429 "));
	assert_non_null(strstr(resp4, "moat: "));
}

static void test_concurrent_tunnels(void **state)
{
	(void)state;
	enum { N = 100 };
	int fds[N];
	char auth[64], resp[1024];
	snprintf(auth, sizeof(auth), "up.test:%u", echo_port);
	unsigned char hello[4096];
	size_t hn = client_hello("up.test", hello, sizeof(hello));
	for (int i = 0; i < N; i++) {
		fds[i] = connect_tunnel(auth, resp, sizeof(resp));
		assert_non_null(strstr(resp, "HTTP/1.1 200 "));
		send_all(fds[i], hello, hn);
	}
	/* Every tunnel is open at once; each gets its own bytes back. */
	for (int i = 0; i < N; i++) {
		char msg[32];
		snprintf(msg, sizeof(msg), "tunnel-%03d", i);
		send_all(fds[i], msg, strlen(msg));
	}
	for (int i = 0; i < N; i++) {
		unsigned char back[4096];
		char msg[32], got[32];
		snprintf(msg, sizeof(msg), "tunnel-%03d", i);
		read_exact(fds[i], back, hn);
		assert_memory_equal(back, hello, hn);
		read_exact(fds[i], got, strlen(msg));
		assert_memory_equal(got, msg, strlen(msg));
	}
	moat_gateway_stats st;
	moat_gateway_get_stats(moat__netproxy_gateway(proxy), &st);
	assert_true(st.active >= N);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

static void test_proxy_env(void **state)
{
	(void)state;
	char **env = moat_gateway_proxy_env(3128);
	assert_non_null(env);
	bool http = false, socks = false, noproxy = false;
	for (char **e = env; *e; e++) {
		http = http || strcmp(*e, "https_proxy=http://127.0.0.1:3128") == 0;
		socks = socks || strcmp(*e, "ALL_PROXY=socks5h://127.0.0.1:3128") == 0;
		noproxy = noproxy || strcmp(*e, "NO_PROXY=localhost,127.0.0.1,::1") == 0;
	}
	assert_true(http && socks && noproxy);
	moat__strv_free(env);
}

int main(void)
{
	upstreams_start();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_http_allowed_and_rewritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_h2c_offer_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_denied_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_private_address_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_literal_encodings_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rules_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_origin_form_and_smuggling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_tls_relayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_sni_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_sni_encoded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_overrides, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunked_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_rearmed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_flood, setup, teardown),
		cmocka_unit_test(test_event_json_escapes),
		cmocka_unit_test_setup_teardown(test_head_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_not_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socks5, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dns_rebinding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budgets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_tunnels, setup, teardown),
		cmocka_unit_test(test_proxy_env),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	upstreams_stop();
	return r;
}
