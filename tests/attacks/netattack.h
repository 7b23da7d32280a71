/* Shared by the network attack programs (net_*.c): talk to the sandbox's
 * proxy port (127.0.0.1:3128) the way a hostile program would, and judge
 * the answer. Each attack file holds one attempt.
 *
 * The test that runs them (tests/integration/net_attacks.sh) starts, on the
 * host side:
 *   MOAT_T_UP          an allowed upstream, "up.test:PORT", that answers
 *                      "upstream-ok" (and /redirect?to=URL with a 302)
 *   MOAT_T_SECRET_PORT a port on the host's 127.0.0.1 whose server answers
 *                      "MOAT-SECRET": reaching it is an escape
 * Without them (run by a generic attack runner with no network at all) every
 * attempt fails to reach the proxy, which is also the sandbox holding.
 *
 * Exit status: 0 blocked, 1 escaped, 2 unexpected. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define NA_PROXY_PORT 3128
#define NA_SECRET "MOAT-SECRET"

static inline const char *na_up(void)
{
	const char *s = getenv("MOAT_T_UP");
	return s ? s : "up.test:80";
}

static inline unsigned na_secret_port(void)
{
	const char *s = getenv("MOAT_T_SECRET_PORT");
	return s ? (unsigned)atoi(s) : 80;
}

static inline unsigned na_up_port(void)
{
	const char *c = strrchr(na_up(), ':');
	return c ? (unsigned)atoi(c + 1) : 80;
}

/* Set while a step whose verdict does not count runs (a warm-up request). */
static int na_quiet;

static inline int na_blocked(const char *what)
{
	if (!na_quiet)
		printf("BLOCKED: %s\n", what);
	return 0;
}

static inline int na_escaped(const char *what)
{
	if (!na_quiet)
		printf("ESCAPED: %s\n", what);
	return 1;
}

static inline int na_unexpected(const char *what)
{
	if (!na_quiet)
		printf("UNEXPECTED: %s\n", what);
	return 2;
}

/* Connects to the proxy port; -1 when there is none (no egress at all). */
static inline int na_proxy_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(NA_PROXY_PORT)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int na_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads until EOF, the buffer is full or the timeout passes. */
static inline size_t na_read_all(int fd, char *buf, size_t cap)
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

/* Reads a response head (up to the blank line). */
static inline size_t na_read_head(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		ssize_t n = read(fd, buf + got, 1);
		if (n <= 0)
			break;
		got++;
		if (got >= 4 && memcmp(buf + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	buf[got] = '\0';
	return got;
}

static inline int na_status(const char *resp)
{
	int st = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

/* Judges a response to a request that must not reach anything: the secret
 * or any answer the gateway forwarded (2xx, 3xx) or tried to (502, 504) is
 * an escape; a refusal with moat's reason is the sandbox holding. */
static inline int na_judge_http(const char *what, const char *resp, size_t len)
{
	char line[512];
	if (memmem(resp, len, NA_SECRET, strlen(NA_SECRET))) {
		snprintf(line, sizeof(line), "%s: reached the internal server", what);
		return na_escaped(line);
	}
	int st = na_status(resp);
	const char *reason = strstr(resp, "X-Moat-Reason: ");
	if (reason) {
		size_t rl = strcspn(reason + 15, "\r\n");
		snprintf(line, sizeof(line), "%s: %d %.*s", what, st, (int)(rl > 300 ? 300 : rl), reason + 15);
	} else {
		snprintf(line, sizeof(line), "%s: status %d, %zu bytes", what, st, len);
	}
	if ((st >= 200 && st < 400) || st == 502 || st == 504)
		return na_escaped(line);
	if (st >= 400 && reason)
		return na_blocked(line);
	if (len == 0) {
		snprintf(line, sizeof(line), "%s: connection closed without an answer", what);
		return na_blocked(line);
	}
	return na_unexpected(line);
}

/* Sends one raw request (printf format) through the proxy and judges it. */
static inline int na_http_raw(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int na_http_raw(const char *what, const char *fmt, ...)
{
	char req[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(req, sizeof(req), fmt, ap);
	va_end(ap);
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	na_send(fd, req, (size_t)n);
	static char resp[65536];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	return na_judge_http(what, resp, len);
}

/* GET http://HOST/ through the proxy, HOST given as it should appear in the
 * URL (with a port). */
static inline int na_get(const char *what, const char *host_port)
{
	return na_http_raw(what, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host_port,
			   host_port);
}

/* GET http://<literal>:<secret port>/, the literal in some encoding of the
 * host's 127.0.0.1 (or another refused range). */
static inline int na_get_literal(const char *literal)
{
	char hp[300], what[320];
	snprintf(hp, sizeof(hp), "%s:%u", literal, na_secret_port());
	snprintf(what, sizeof(what), "GET http://%s/", hp);
	return na_get(what, hp);
}

/* A minimal TLS 1.2 ClientHello carrying one server name (RFC 6066) and,
 * when extra_type is not 0, one more (empty-bodied) extension of that type. */
static inline size_t na_client_hello_ext(const char *sni, unsigned extra_type, unsigned char *out, size_t cap);
static inline size_t na_client_hello(const char *sni, unsigned char *out, size_t cap)
{
	return na_client_hello_ext(sni, 0, out, cap);
}

static inline size_t na_client_hello_ext(const char *sni, unsigned extra_type, unsigned char *out, size_t cap)
{
	size_t hl = strlen(sni);
	if (hl > 200 || cap < hl + 128)
		return 0;
	unsigned char ext[256];
	size_t e = 0;
	ext[e++] = 0x00, ext[e++] = 0x00;                     /* server_name */
	ext[e++] = (unsigned char)((hl + 5) >> 8), ext[e++] = (unsigned char)(hl + 5);
	ext[e++] = (unsigned char)((hl + 3) >> 8), ext[e++] = (unsigned char)(hl + 3);
	ext[e++] = 0x00;                                      /* host_name */
	ext[e++] = (unsigned char)(hl >> 8), ext[e++] = (unsigned char)hl;
	memcpy(ext + e, sni, hl);
	e += hl;
	if (extra_type) {
		ext[e++] = (unsigned char)(extra_type >> 8), ext[e++] = (unsigned char)extra_type;
		ext[e++] = 0x00, ext[e++] = 0x02, ext[e++] = 0x00, ext[e++] = 0x00;
	}
	unsigned char body[512];
	size_t b = 0;
	body[b++] = 0x03, body[b++] = 0x03;                   /* TLS 1.2 */
	for (int i = 0; i < 32; i++)
		body[b++] = (unsigned char)(0x42 + i);        /* random */
	body[b++] = 0x00;                                     /* session id */
	body[b++] = 0x00, body[b++] = 0x02, body[b++] = 0xc0, body[b++] = 0x2f;
	body[b++] = 0x01, body[b++] = 0x00;                   /* compression */
	body[b++] = (unsigned char)(e >> 8), body[b++] = (unsigned char)e;
	memcpy(body + b, ext, e);
	b += e;
	size_t n = 0;
	out[n++] = 0x16, out[n++] = 0x03, out[n++] = 0x01;
	out[n++] = (unsigned char)((b + 4) >> 8), out[n++] = (unsigned char)(b + 4);
	out[n++] = 0x01, out[n++] = 0x00;
	out[n++] = (unsigned char)(b >> 8), out[n++] = (unsigned char)b;
	memcpy(out + n, body, b);
	return n + b;
}

/* Sends payload through an open tunnel and judges what comes back: the
 * secret or the upstream's answer means the tunnel carried it. */
static inline int na_tunnel_payload(const char *what, int fd, const void *payload, size_t len)
{
	char line[512];
	na_send(fd, payload, len);
	static char resp[65536];
	size_t got = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (memmem(resp, got, NA_SECRET, strlen(NA_SECRET)) || memmem(resp, got, "upstream-ok", 11)) {
		snprintf(line, sizeof(line), "%s: the tunnel carried it (%zu bytes back)", what, got);
		return na_escaped(line);
	}
	if (got == 0) {
		snprintf(line, sizeof(line), "%s: the gateway cut the tunnel", what);
		return na_blocked(line);
	}
	snprintf(line, sizeof(line), "%s: %zu unexpected bytes back", what, got);
	return na_unexpected(line);
}

/* CONNECT authority; when the gateway accepts (200), sends payload and
 * judges what comes back. */
static inline int na_connect(const char *what, const char *authority, const void *payload, size_t len)
{
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	char req[600];
	int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority);
	na_send(fd, req, (size_t)n);
	char head[4096];
	size_t hl = na_read_head(fd, head, sizeof(head));
	int st = na_status(head);
	if (st != 200) {
		close(fd);
		return na_judge_http(what, head, hl);
	}
	return na_tunnel_payload(what, fd, payload, len);
}

/* CONNECT authority, then (when the gateway answers 200) a ClientHello
 * naming sni. The upstreams of the suite speak plain HTTP: any byte back
 * means the tunnel carried the hello to them. */
static inline int na_connect_hello_ext(const char *what, const char *authority, const char *sni, unsigned extra_type)
{
	unsigned char hello[512];
	size_t hl = na_client_hello_ext(sni, extra_type, hello, sizeof(hello));
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	char req[600];
	int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority);
	na_send(fd, req, (size_t)n);
	char head[4096];
	size_t got = na_read_head(fd, head, sizeof(head));
	if (na_status(head) != 200) {
		close(fd);
		return na_judge_http(what, head, got);
	}
	na_send(fd, hello, hl);
	static char resp[4096];
	got = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	char line[512];
	if (got > 0) {
		snprintf(line, sizeof(line), "%s: the tunnel carried the ClientHello (%zu bytes back)", what, got);
		return na_escaped(line);
	}
	snprintf(line, sizeof(line), "%s: the gateway cut the tunnel", what);
	return na_blocked(line);
}

static inline int na_connect_hello(const char *what, const char *authority, const char *sni)
{
	return na_connect_hello_ext(what, authority, sni, 0);
}

/* SOCKS5: greeting, then the request bytes; returns the reply code (or -1)
 * and leaves *ret_fd open on success. */
static inline int na_socks(const unsigned char *req, size_t len, int *ret_fd)
{
	*ret_fd = -1;
	int fd = na_proxy_connect();
	if (fd < 0)
		return -2;
	const unsigned char greet[] = {5, 1, 0};
	unsigned char g[2], rep[10];
	if (na_send(fd, greet, sizeof(greet)) < 0 || read(fd, g, 2) != 2 || g[1] != 0) {
		close(fd);
		return -1;
	}
	na_send(fd, req, len);
	size_t got = 0;
	while (got < sizeof(rep)) {
		ssize_t n = read(fd, rep + got, sizeof(rep) - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < 2) {
		close(fd);
		return -1;
	}
	if (rep[1] == 0)
		*ret_fd = fd;
	else
		close(fd);
	return rep[1];
}

/* Judges a SOCKS5 attempt that must be refused. */
static inline int na_socks_judge(const char *what, const unsigned char *req, size_t len)
{
	char line[512];
	int fd;
	int code = na_socks(req, len, &fd);
	if (code == -2)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	if (code == 0) {
		/* Success means the gateway connected to the target. */
		close(fd);
		snprintf(line, sizeof(line), "%s: SOCKS5 connected", what);
		return na_escaped(line);
	}
	if (code < 0) {
		snprintf(line, sizeof(line), "%s: connection closed", what);
		return na_blocked(line);
	}
	snprintf(line, sizeof(line), "%s: SOCKS5 reply %d", what, code);
	return na_blocked(line);
}

/* ---- transparent egress (moat run --net transparent) ----------------------
 * The attacks below connect straight to an address, as a program that
 * ignores the proxy variables would; the sandbox's namespace redirects the
 * connection to the gateway, which must judge the name the address was
 * handed out for (or the address itself). Where the sandbox has no
 * transparent egress (proxy mode, or no network), the connection fails:
 * that is the sandbox holding too. */
#include <netdb.h>

/* The IPv4 address the sandbox's resolver gives name; -1 when it gives
 * none (there is no DNS inside without transparent egress). */
static inline int na_resolve4(const char *name, struct in_addr *ret)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(name, NULL, &hints, &res) != 0 || !res)
		return -1;
	*ret = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

/* Connects to addr:port directly, sends payload, and judges what comes
 * back: the internal service's secret or the allowed upstream's answer is
 * an escape, a refusal with moat's reason or a cut is the sandbox holding. */
static inline int na_direct(const char *what, struct in_addr addr, unsigned port, const void *payload, size_t len)
{
	char line[512];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = addr};
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "%s: connect: %s", what, strerror(errno));
		close(fd);
		return errno == ENETUNREACH || errno == EHOSTUNREACH || errno == EACCES || errno == EPERM ||
				       errno == ECONNREFUSED
			       ? na_blocked(line)
			       : na_unexpected(line);
	}
	na_send(fd, payload, len);
	static char resp[65536];
	size_t got = na_read_all(fd, resp, sizeof(resp) - 1);
	resp[got] = 0;
	close(fd);
	if (memmem(resp, got, "upstream-ok", 11)) {
		snprintf(line, sizeof(line), "%s: the upstream answered", what);
		return na_escaped(line);
	}
	if (got > 0 && strncmp(resp, "HTTP/", 5) == 0)
		return na_judge_http(what, resp, got);
	if (memmem(resp, got, NA_SECRET, strlen(NA_SECRET))) {
		snprintf(line, sizeof(line), "%s: reached the internal server", what);
		return na_escaped(line);
	}
	if (got == 0) {
		snprintf(line, sizeof(line), "%s: the gateway cut the connection", what);
		return na_blocked(line);
	}
	snprintf(line, sizeof(line), "%s: %zu unexpected bytes back", what, got);
	return na_unexpected(line);
}

/* GET / straight to addr:port with the given Host header. */
static inline int na_direct_get(const char *what, struct in_addr addr, unsigned port, const char *host)
{
	char req[600];
	int n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host);
	return na_direct(what, addr, port, req, (size_t)n);
}
