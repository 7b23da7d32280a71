/* Unit tests: the HTTP request head, TLS ClientHello and SOCKS5 parsers,
 * whole, split at every byte, and malformed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "proxyproto.h"

/* ---- HTTP ------------------------------------------------------------------ */

/* Feeds s in chunks of step bytes (0: all at once). Returns the final
 * status; *consumed adds up what the parser took. */
static int feed(moat_http_parser *p, const char *s, size_t len, size_t step, size_t *consumed, moat_error *err)
{
	size_t off = 0;
	int r = MOAT_PARSE_MORE;
	*consumed = 0;
	moat_http_parser_reset(p);
	while (off < len) {
		size_t n = step && step < len - off ? step : len - off, used = 0;
		r = moat_http_parser_feed(p, s + off, n, &used, err);
		*consumed += used;
		if (r != MOAT_PARSE_MORE)
			return r;
		assert_int_equal(used, n);
		off += n;
	}
	return r;
}

static const moat_http_request *parse_ok(moat_http_parser *p, const char *s)
{
	moat_error err = { 0 };
	size_t consumed;
	/* Whole, then one byte at a time, then in 7-byte chunks: the same. */
	size_t steps[] = { 1, 7, 0 };
	for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
		int r = feed(p, s, strlen(s), steps[i], &consumed, &err);
		if (r != MOAT_PARSE_DONE)
			fail_msg("step %zu: %d %s on: %s", steps[i], r, err.msg, s);
	}
	const moat_http_request *q = moat_http_parser_request(p);
	assert_non_null(q);
	assert_int_equal(q->head_len, consumed);
	return q;
}

static void parse_bad(moat_http_parser *p, const char *s, size_t len, int want, const char *why)
{
	moat_error err = { 0 };
	size_t consumed;
	size_t steps[] = { 0, 1 };
	for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
		moat_error_clear(&err);
		int r = feed(p, s, len, steps[i], &consumed, &err);
		if (r != want)
			fail_msg("step %zu: got %d (%s), expected %d on: %.200s", steps[i], r, err.msg, want, s);
		if (why && !strstr(err.msg, why))
			fail_msg("reason \"%s\" lacks \"%s\" on: %.200s", err.msg, why, s);
	}
}
#define BAD(p, s, why) parse_bad(p, s, strlen(s), -EBADMSG, why)

static void test_http_forms(void **state)
{
	(void)state;
	_cleanup_http_parser_ moat_http_parser *p = moat_http_parser_new();
	const moat_http_request *q;

	q = parse_ok(p, "GET http://Example.COM./a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n");
	assert_string_equal(q->method, "GET");
	assert_int_equal(q->form, MOAT_HTTP_ABSOLUTE_FORM);
	assert_string_equal(q->host.name, "example.com");
	assert_int_equal(q->port, 80);
	assert_string_equal(q->path, "/a/b?c=d");
	assert_int_equal(q->version_minor, 1);
	assert_int_equal(q->n_headers, 2);
	assert_string_equal(moat_http_request_header(q, "user-agent"), "t");
	assert_null(moat_http_request_header(q, "Cookie"));
	assert_int_equal(q->body, MOAT_HTTP_BODY_NONE);
	assert_false(q->connection_close);

	q = parse_ok(p, "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n");
	assert_int_equal(q->form, MOAT_HTTP_AUTHORITY_FORM);
	assert_string_equal(q->host.name, "api.github.com");
	assert_int_equal(q->port, 443);

	q = parse_ok(p, "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n");
	assert_true(q->host.is_literal);
	assert_string_equal(q->host.name, "2001:db8::1");
	assert_int_equal(q->port, 8443);

	q = parse_ok(p, "POST /submit HTTP/1.1\r\nHost: files.test:8080\r\nContent-Length: 12\r\n\r\n");
	assert_int_equal(q->form, MOAT_HTTP_ORIGIN_FORM);
	assert_string_equal(q->host.name, "files.test");
	assert_int_equal(q->port, 8080);
	assert_int_equal(q->body, MOAT_HTTP_BODY_LENGTH);
	assert_int_equal(q->content_length, 12);

	q = parse_ok(p, "POST http://a.test:81 HTTP/1.1\r\nHost: a.test:81\r\nTransfer-Encoding: Chunked\r\n"
			"Connection: keep-alive, close\r\nExpect: 100-continue\r\nUpgrade: websocket\r\n\r\n");
	assert_string_equal(q->path, "/");
	assert_int_equal(q->port, 81);
	assert_int_equal(q->body, MOAT_HTTP_BODY_CHUNKED);
	assert_true(q->connection_close);
	assert_true(q->expect_continue);
	assert_true(q->upgrade);

	q = parse_ok(p, "GET http://a.test?x=1 HTTP/1.0\r\n\r\n");
	assert_string_equal(q->path, "/?x=1");
	assert_true(q->connection_close);
	q = parse_ok(p, "GET http://a.test/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
	assert_false(q->connection_close);

	q = parse_ok(p, "OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n");
	assert_int_equal(q->form, MOAT_HTTP_ASTERISK_FORM);

	/* Header values are trimmed; empty values are fine. */
	q = parse_ok(p, "GET / HTTP/1.1\r\nHost:a.test \t\r\nX-Empty:\r\n\r\n");
	assert_string_equal(moat_http_request_header(q, "host"), "a.test");
	assert_string_equal(moat_http_request_header(q, "x-empty"), "");

	/* One or two empty lines before the request line are skipped. */
	q = parse_ok(p, "\r\n\r\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
	assert_int_equal(q->head_len, 4 + strlen("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"));
}

static void test_http_pipelined(void **state)
{
	(void)state;
	_cleanup_http_parser_ moat_http_parser *p = moat_http_parser_new();
	moat_error err = { 0 };
	const char *two = "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello"
			  "GET http://b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n";
	size_t used;
	assert_int_equal(moat_http_parser_feed(p, two, strlen(two), &used, &err), MOAT_PARSE_DONE);
	const moat_http_request *q = moat_http_parser_request(p);
	assert_int_equal(used, strlen("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\n"));
	assert_int_equal(q->content_length, 5);
	/* Feeding more after DONE changes nothing until reset. */
	size_t used2;
	assert_int_equal(moat_http_parser_feed(p, "x", 1, &used2, &err), MOAT_PARSE_DONE);
	assert_int_equal(used2, 0);
	const char *next = two + used + 5;
	moat_http_parser_reset(p);
	assert_null(moat_http_parser_request(p));
	assert_int_equal(moat_http_parser_feed(p, next, strlen(next), &used, &err), MOAT_PARSE_DONE);
	assert_string_equal(moat_http_parser_request(p)->host.name, "b.test");
}

static void test_http_smuggling(void **state)
{
	(void)state;
	_cleanup_http_parser_ moat_http_parser *p = moat_http_parser_new();
	const char *H = "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n";
	char buf[512];
#define WITH(hdrs, why)                                                    \
	do {                                                               \
		snprintf(buf, sizeof(buf), "%s%s\r\n", H, hdrs);           \
		BAD(p, buf, why);                                          \
	} while (0)
	WITH("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "both");
	WITH("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "both");
	WITH("Content-Length: 5\r\nContent-Length: 5\r\n", "more than one Content-Length");
	WITH("Content-Length: 5\r\ncontent-length: 6\r\n", "more than one Content-Length");
	WITH("Content-Length: 5, 5\r\n", "invalid Content-Length");
	WITH("Content-Length: +5\r\n", "invalid Content-Length");
	WITH("Content-Length: -1\r\n", "invalid Content-Length");
	WITH("Content-Length: 0x5\r\n", "invalid Content-Length");
	WITH("Content-Length: \r\n", "invalid Content-Length");
	WITH("Content-Length: 99999999999999999999\r\n", "invalid Content-Length");
	WITH("Content_Length: 5\r\n", "'_'");
	WITH("Transfer_Encoding: chunked\r\n", "'_'");
	WITH("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "more than one Transfer-Encoding");
	WITH("Transfer-Encoding: chunked, identity\r\n", "single \"chunked\"");
	WITH("Transfer-Encoding: identity\r\n", "single \"chunked\"");
	WITH("Transfer-Encoding: xchunked\r\n", "single \"chunked\"");
	WITH("Transfer-Encoding: chunked\x0b\r\n", "control");
	WITH("Transfer-Encoding : chunked\r\n", "token");
	WITH(" Transfer-Encoding: chunked\r\n", "folding");
	WITH("X: a\r\n\tTransfer-Encoding: chunked\r\n", "folding");
	WITH("Host: b.test\r\n", "more than one Host");
	WITH("X: a\rTransfer-Encoding: chunked\r\n", "bare CR");
	WITH(": novalue\r\n", "without a name");
	WITH("NoColon\r\n", "without a name");
	WITH("X\x7f: 1\r\n", "token");
#undef WITH
	BAD(p, "GET / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0");
	BAD(p, "GET / HTTP/1.1\r\nHost: a.test\nX: y\r\n\r\n", "bare LF");
	BAD(p, "GET / HTTP/1.1\nHost: a.test\n\n\r\n\r\n", "bare LF");
	/* A head of bare LFs never ends in CRLFCRLF: refused as soon as the
	 * first bare LF arrives, whole or byte by byte, not left waiting. */
	BAD(p, "GET / HTTP/1.1\nHost: a.test\n\n", "bare LF");
	BAD(p, "GET / HTTP/1.1\n", "bare LF");
	parse_bad(p, "GET / HTTP/1.1\r\nHost: a.test\r\nX: \0\r\n\r\n", 38, -EBADMSG, "NUL");
	/* The Host header must agree with the target. */
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", "disagrees");
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test:8080\r\n\r\n", "disagrees");
	BAD(p, "CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n", "disagrees");
	/* A CONNECT whose Host names the proxy (loopback) is what Node sends:
	 * the target is judged, the Host is never forwarded. Not for other
	 * requests, whose Host the upstream reads. */
	const moat_http_request *q = parse_ok(p, "CONNECT a.test:443 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n");
	assert_string_equal(q->host.name, "a.test");
	assert_int_equal(q->port, 443);
	q = parse_ok(p, "CONNECT a.test:443 HTTP/1.1\r\nHost: localhost:3128\r\n\r\n");
	assert_string_equal(q->host.name, "a.test");
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n", "disagrees");
	BAD(p, "CONNECT a.test:443 HTTP/1.1\r\nHost: 10.0.0.1:3128\r\n\r\n", "disagrees");
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test@b.test\r\n\r\n", "user info");
	/* A host is spelt on the wire as it is judged: no percent-escapes, no
	 * raw UTF-8, wherever a name appears. */
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: a%2etest\r\n\r\n", "percent-encoded");
	BAD(p, "GET http://a%2etest/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "percent-encoded");
	BAD(p, "GET / HTTP/1.1\r\nHost: %61.test\r\n\r\n", "percent-encoded");
	BAD(p, "CONNECT a%2etest:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", "percent-encoded");
	BAD(p, "GET http://a.test/ HTTP/1.1\r\nHost: b\xc3\xbc.test\r\n\r\n", "outside ASCII");
}

static void test_http_malformed(void **state)
{
	(void)state;
	_cleanup_http_parser_ moat_http_parser *p = moat_http_parser_new();
	BAD(p, "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "request line");
	BAD(p, "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", "version");
	BAD(p, "GET / HTTP/2.0\r\nHost: a\r\n\r\n", "version");
	BAD(p, "GET / http/1.1\r\nHost: a\r\n\r\n", "version");
	BAD(p, "GET /\r\n\r\n", "request line");
	BAD(p, "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", "token");
	BAD(p, "GET / HTTP/1.1\r\n\r\n", "Host");
	BAD(p, "GET /#frag HTTP/1.1\r\nHost: a\r\n\r\n", "fragment");
	BAD(p, "GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", "non-ASCII");
	BAD(p, "GET a.test:80 HTTP/1.1\r\nHost: a\r\n\r\n", "neither");
	BAD(p, "GET * HTTP/1.1\r\nHost: a\r\n\r\n", "OPTIONS");
	BAD(p, "CONNECT a.test HTTP/1.1\r\n\r\n", "no port");
	BAD(p, "CONNECT /x HTTP/1.1\r\n\r\n", "CONNECT target");
	BAD(p, "CONNECT user@a.test:443 HTTP/1.1\r\n\r\n", "user info");
	BAD(p, "GET http://user:pw@a.test/ HTTP/1.1\r\n\r\n", "user info");
	BAD(p, "GET http://a.test#@b.test/ HTTP/1.1\r\n\r\n", "fragment");
	BAD(p, "GET http://a.test\\@b.test/ HTTP/1.1\r\n\r\n", "backslash");
	BAD(p, "GET http://0x7f.1:99999/ HTTP/1.1\r\n\r\n", "port");
	BAD(p, "\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "empty request line");
	BAD(p, "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "bare LF");
	BAD(p, "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", "bare CR");
	parse_bad(p, "GET ftp://a.test/ HTTP/1.1\r\n\r\n", 30, -ENOTSUP, "scheme");
	parse_bad(p, "GET https://a.test/ HTTP/1.1\r\n\r\n", 32, -ENOTSUP, "CONNECT");

	/* Caps: a long line is refused as soon as it is too long. */
	char *big = malloc(MOAT_HTTP_MAX_HEAD + 100);
	assert_non_null(big);
	strcpy(big, "GET /");
	memset(big + 5, 'a', MOAT_HTTP_MAX_LINE + 10);
	big[5 + MOAT_HTTP_MAX_LINE + 10] = '\0';
	parse_bad(p, big, strlen(big), -E2BIG, "longer than");
	/* Many short headers: over the header count. */
	size_t o = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < MOAT_HTTP_MAX_HEADERS + 1; i++)
		o += (size_t)sprintf(big + o, "X-%d: 1\r\n", i);
	strcpy(big + o, "\r\n");
	parse_bad(p, big, strlen(big), -E2BIG, "headers");
	/* A head that never ends. */
	o = (size_t)sprintf(big, "GET / HTTP/1.1\r\n");
	while (o + 20 < MOAT_HTTP_MAX_HEAD + 50)
		o += (size_t)sprintf(big + o, "X-Pad: %010d\r\n", 1);
	parse_bad(p, big, o, -E2BIG, "head is longer");
	free(big);
}

/* ---- TLS ------------------------------------------------------------------- */

typedef struct bytes {
	uint8_t b[70000];
	size_t n;
} bytes;

static void put8(bytes *o, unsigned v) { o->b[o->n++] = (uint8_t)v; }
static void put16(bytes *o, unsigned v)
{
	put8(o, v >> 8);
	put8(o, v & 0xff);
}
static void put(bytes *o, const void *d, size_t n)
{
	memcpy(o->b + o->n, d, n);
	o->n += n;
}

/* A ClientHello handshake message (no record layer). ext is raw extension
 * bytes appended after the server_name one. */
static void hello_msg(bytes *m, const char *sni, const uint8_t *ext, size_t ext_n, size_t pad)
{
	bytes body = { .n = 0 };
	put16(&body, 0x0303);
	for (int i = 0; i < 32; i++)
		put8(&body, i);
	put8(&body, 0);            /* session id */
	put16(&body, 2);
	put16(&body, 0x1301);      /* TLS_AES_128_GCM_SHA256 */
	put8(&body, 1);
	put8(&body, 0);            /* null compression */
	bytes exts = { .n = 0 };
	if (sni) {
		size_t l = strlen(sni);
		put16(&exts, 0);
		put16(&exts, l + 5);
		put16(&exts, l + 3);
		put8(&exts, 0);
		put16(&exts, l);
		put(&exts, sni, l);
	}
	if (ext_n)
		put(&exts, ext, ext_n);
	if (pad) {
		put16(&exts, 21); /* padding */
		put16(&exts, pad);
		for (size_t i = 0; i < pad; i++)
			put8(&exts, 0);
	}
	put16(&body, exts.n);
	put(&body, exts.b, exts.n);
	m->n = 0;
	put8(m, 1);
	put8(m, body.n >> 16);
	put16(m, body.n & 0xffff);
	put(m, body.b, body.n);
}

/* Wraps a handshake message in records of at most frag bytes each. */
static void records(bytes *out, const bytes *m, size_t frag)
{
	out->n = 0;
	for (size_t off = 0; off < m->n;) {
		size_t n = m->n - off < frag ? m->n - off : frag;
		put8(out, 22);
		put16(out, 0x0301);
		put16(out, n);
		put(out, m->b + off, n);
		off += n;
	}
}

static bytes m_, r_;

static void test_tls_sni(void **state)
{
	(void)state;
	moat_tls_hello h;
	moat_error err = { 0 };
	static const uint8_t alpn[] = { 0, 16, 0, 14, 0, 12, 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
	hello_msg(&m_, "API.GitHub.com", alpn, sizeof(alpn), 0);
	records(&r_, &m_, 16384);
	assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
	assert_true(h.has_sni);
	assert_string_equal(h.sni, "API.GitHub.com");
	assert_true(h.has_alpn_h2);
	assert_false(h.has_ech);
	assert_int_equal(h.bytes, r_.n);
	assert_int_equal(h.legacy_version, 0x0303);
	/* Every prefix asks for more; none is an error. */
	for (size_t n = 0; n < r_.n; n++)
		if (moat_tls_hello_parse(r_.b, n, &h, &err) != MOAT_PARSE_MORE)
			fail_msg("prefix of %zu bytes: %s", n, err.msg);
	/* Trailing bytes (the next record) are not part of the hello. */
	r_.b[r_.n] = 23;
	assert_int_equal(moat_tls_hello_parse(r_.b, r_.n + 1, &h, &err), MOAT_PARSE_DONE);
	assert_int_equal(h.bytes, r_.n);

	/* Split across records, down to one byte per record. */
	size_t frags[] = { 1, 3, 50, 100 };
	for (size_t i = 0; i < ELEMENTSOF(frags); i++) {
		records(&r_, &m_, frags[i]);
		assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
		assert_string_equal(h.sni, "API.GitHub.com");
		assert_int_equal(h.bytes, r_.n);
	}

	/* A large hello (post-quantum key shares) over two full records. */
	hello_msg(&m_, "big.test", NULL, 0, 20000);
	records(&r_, &m_, 16384);
	assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
	assert_string_equal(h.sni, "big.test");

	/* No SNI at all; ECH flagged. */
	static const uint8_t ech[] = { 0xfe, 0x0d, 0, 2, 0, 0 };
	hello_msg(&m_, NULL, ech, sizeof(ech), 0);
	records(&r_, &m_, 16384);
	assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
	assert_false(h.has_sni);
	assert_true(h.has_ech);

	/* Every ECH draft code point and ESNI, beside a plain SNI. */
	static const uint16_t hiding[] = { 0xfe08, 0xfe09, 0xfe0a, 0xfe0b, 0xfe0c, 0xfe0d, 0xfd00, 0xffce };
	for (size_t i = 0; i < ELEMENTSOF(hiding); i++) {
		uint8_t ext[] = { (uint8_t)(hiding[i] >> 8), (uint8_t)hiding[i], 0, 2, 0, 0 };
		hello_msg(&m_, "front.test", ext, sizeof(ext), 0);
		records(&r_, &m_, 16384);
		assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
		if (!h.has_ech)
			fail_msg("extension 0x%04x not flagged as hiding the server name", hiding[i]);
	}
	/* A neighbour that hides nothing is not flagged. */
	static const uint8_t other[] = { 0xfe, 0x0e, 0, 2, 0, 0 };
	hello_msg(&m_, "front.test", other, sizeof(other), 0);
	records(&r_, &m_, 16384);
	assert_int_equal(moat_tls_hello_parse(r_.b, r_.n, &h, &err), MOAT_PARSE_DONE);
	assert_false(h.has_ech);
}

static void tls_bad(const bytes *b, int want, const char *why)
{
	moat_tls_hello h;
	moat_error err = { 0 };
	int r = moat_tls_hello_parse(b->b, b->n, &h, &err);
	if (r != want)
		fail_msg("got %d (%s), expected %d", r, err.msg, want);
	if (why && !strstr(err.msg, why))
		fail_msg("reason \"%s\" lacks \"%s\"", err.msg, why);
}

static void test_tls_malformed(void **state)
{
	(void)state;
	static const uint8_t dup_sni[] = { 0, 0, 0, 8, 0, 6, 0, 0, 3, 'a', '.', 'b' };
	hello_msg(&m_, "a.test", dup_sni, sizeof(dup_sni), 0);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -EBADMSG, "duplicate extension");

	/* Two host_names in one server_name list. */
	static const uint8_t two[] = { 0, 0, 0, 14, 0, 12, 0, 0, 3, 'a', '.', 'b', 0, 0, 3, 'c', '.', 'd' };
	hello_msg(&m_, NULL, two, sizeof(two), 0);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -EBADMSG, "exactly one host_name");

	static const uint8_t nul[] = { 0, 0, 0, 8, 0, 6, 0, 0, 3, 'a', 0, 'b' };
	hello_msg(&m_, NULL, nul, sizeof(nul), 0);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -EBADMSG, "NUL");

	static const uint8_t short_list[] = { 0, 0, 0, 8, 0, 9, 0, 0, 3, 'a', '.', 'b' };
	hello_msg(&m_, NULL, short_list, sizeof(short_list), 0);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -EBADMSG, "server_name");

	static const uint8_t trunc[] = { 0, 0, 0, 40 };
	hello_msg(&m_, NULL, trunc, sizeof(trunc), 0);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -EBADMSG, "truncated extension");

	/* Handshake message longer than the cap. */
	hello_msg(&m_, "a.test", NULL, 0, MOAT_TLS_MAX_HELLO);
	records(&r_, &m_, 16384);
	tls_bad(&r_, -E2BIG, "longer than");

	/* Not a handshake, SSLv2, bad record version and length, a second
	 * message after the hello, an alert in between. */
	bytes b = { .n = 0 };
	put(&b, "GET / HTTP/1.1\r\n", 16);
	tls_bad(&b, -EBADMSG, "not a TLS handshake");
	b.n = 0;
	put(&b, "\x80\x2e\x01\x03\x01", 5);
	tls_bad(&b, -EBADMSG, "SSLv2");
	hello_msg(&m_, "a.test", NULL, 0, 0);
	records(&r_, &m_, 16384);
	r_.b[1] = 2;
	tls_bad(&r_, -EBADMSG, "record version");
	records(&r_, &m_, 16384);
	r_.b[3] = 0x40;
	r_.b[4] = 0x01;
	tls_bad(&r_, -EBADMSG, "record length");
	b.n = 0;
	put(&b, "\x16\x03\x01\x00\x00", 5);
	tls_bad(&b, -EBADMSG, "record length");
	b = m_;
	put(&b, "\x01\x00\x00\x00", 4);
	records(&r_, &b, 16384);
	tls_bad(&r_, -EBADMSG, "data after");
	records(&r_, &m_, 20);
	memmove(r_.b + 25 + 7, r_.b + 25, r_.n - 25);
	memcpy(r_.b + 25, "\x15\x03\x03\x00\x02\x02\x28", 7);
	r_.n += 7;
	tls_bad(&r_, -EBADMSG, "other than handshake");
	b.n = 0;
	put(&b, "\x16\x03\x01\x00\x04\x02\x00\x00\x00", 9);
	tls_bad(&b, -EBADMSG, "not a ClientHello");
}

/* ---- SOCKS5 ---------------------------------------------------------------- */

static void test_socks5(void **state)
{
	(void)state;
	moat_error err = { 0 };
	size_t used;
	bool noauth;
	uint8_t reply, rep[10], g[2];
	moat_socks5_request q;

	assert_int_equal(moat_socks5_greeting_parse("\x05\x02\x02\x00", 4, &used, &noauth, &err), MOAT_PARSE_DONE);
	assert_int_equal(used, 4);
	assert_true(noauth);
	assert_int_equal(moat_socks5_greeting_parse("\x05\x01\x02", 3, &used, &noauth, &err), MOAT_PARSE_DONE);
	assert_false(noauth);
	assert_int_equal(moat_socks5_greeting_parse("\x05\x02\x00", 3, &used, &noauth, &err), MOAT_PARSE_MORE);
	assert_int_equal(moat_socks5_greeting_parse("\x05", 1, &used, &noauth, &err), MOAT_PARSE_MORE);
	assert_int_equal(moat_socks5_greeting_parse("", 0, &used, &noauth, &err), MOAT_PARSE_MORE);
	assert_int_equal(moat_socks5_greeting_parse("\x04\x01\x00", 3, &used, &noauth, &err), -EBADMSG);
	assert_int_equal(moat_socks5_greeting_parse("\x05\x00", 2, &used, &noauth, &err), -EBADMSG);
	moat_socks5_greeting_reply(true, g);
	assert_memory_equal(g, "\x05\x00", 2);
	moat_socks5_greeting_reply(false, g);
	assert_memory_equal(g, "\x05\xff", 2);

	static const uint8_t dom[] = "\x05\x01\x00\x03\x0e" "api.github.com" "\x01\xbb";
	size_t dl = sizeof(dom) - 1;
	for (size_t n = 0; n < dl; n++)
		assert_int_equal(moat_socks5_request_parse(dom, n, &used, &q, &reply, &err), MOAT_PARSE_MORE);
	assert_int_equal(moat_socks5_request_parse(dom, dl, &used, &q, &reply, &err), MOAT_PARSE_DONE);
	assert_int_equal(used, dl);
	assert_true(q.is_domain);
	assert_string_equal(q.domain, "api.github.com");
	assert_int_equal(q.port, 443);
	assert_int_equal(reply, MOAT_SOCKS5_REP_SUCCEEDED);

	assert_int_equal(moat_socks5_request_parse("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50", 10, &used, &q, &reply,
						   &err),
			 MOAT_PARSE_DONE);
	assert_false(q.is_domain);
	assert_int_equal(q.addr.family, AF_INET);
	assert_memory_equal(q.addr.bytes, "\x7f\x00\x00\x01", 4);
	assert_int_equal(q.port, 80);

	static const uint8_t v6[22] = { 5, 1, 0, 4, [19] = 1, [20] = 0, [21] = 22 };
	assert_int_equal(moat_socks5_request_parse(v6, 22, &used, &q, &reply, &err), MOAT_PARSE_DONE);
	assert_int_equal(q.addr.family, AF_INET6);
	assert_int_equal(q.addr.bytes[15], 1);
	assert_int_equal(q.port, 22);

	assert_int_equal(moat_socks5_request_parse("\x05\x02\x00\x01", 4, &used, &q, &reply, &err), -ENOTSUP);
	assert_int_equal(reply, MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED);
	assert_non_null(strstr(err.msg, "BIND"));
	assert_int_equal(moat_socks5_request_parse("\x05\x03", 2, &used, &q, &reply, &err), -ENOTSUP);
	assert_int_equal(reply, MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED);
	assert_non_null(strstr(err.msg, "UDP"));
	assert_int_equal(moat_socks5_request_parse("\x05\x09", 2, &used, &q, &reply, &err), -EBADMSG);
	assert_int_equal(moat_socks5_request_parse("\x05\x01\x00\x05", 4, &used, &q, &reply, &err), -ENOTSUP);
	assert_int_equal(reply, MOAT_SOCKS5_REP_ATYP_NOT_SUPPORTED);
	assert_int_equal(moat_socks5_request_parse("\x05\x01\x01\x01", 4, &used, &q, &reply, &err), -EBADMSG);
	assert_int_equal(moat_socks5_request_parse("\x04\x01", 2, &used, &q, &reply, &err), -EBADMSG);
	assert_int_equal(moat_socks5_request_parse("\x05\x01\x00\x03\x00\x00\x50", 7, &used, &q, &reply, &err),
			 -EBADMSG);
	assert_int_equal(moat_socks5_request_parse("\x05\x01\x00\x03\x03" "a\0b" "\x00\x50", 10, &used, &q, &reply,
						   &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(moat_socks5_request_parse("\x05\x01\x00\x01\x01\x02\x03\x04\x00\x00", 10, &used, &q, &reply,
						   &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "port 0"));

	moat_socks5_reply(MOAT_SOCKS5_REP_NOT_ALLOWED, rep);
	assert_memory_equal(rep, "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00", 10);
}

static int chunked_all(const char *body, size_t step, size_t *ret_used, moat_error *err)
{
	moat_chunked c;
	moat_chunked_init(&c);
	size_t len = strlen(body), total = 0;
	int r = MOAT_PARSE_MORE;
	for (size_t off = 0; off < len && r == MOAT_PARSE_MORE; off += step) {
		size_t n = len - off < step ? len - off : step, used = 0;
		r = moat_chunked_feed(&c, body + off, n, &used, err);
		if (r >= 0)
			total += used;
	}
	*ret_used = total;
	return r;
}

static void test_chunked(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t body_len; /* bytes that belong to the body */
	} ok[] = {
		{ "0\r\n\r\n", 5 },
		{ "5\r\nhello\r\n0\r\n\r\n", 15 },
		{ "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", 15 },
		{ "A;name=v\r\n0123456789\r\n0\r\n\r\n", 27 },
		{ "00005\r\nhello\r\n0\r\n\r\n", 19 },
	};
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "\r\n", "not a hexadecimal" },
		{ "-5\r\n", "not a hexadecimal" },
		{ "5 \r\nhello\r\n", "something other" },
		{ "0x5\r\n", "something other" },
		{ "5\nhello", "something other" },
		{ "5\r\nhelloX\r\n", "longer than its size" },
		{ "5\r\nhello\n0", "bare LF after chunk data" },
		{ "5\r\nhello\r0", "bare CR after chunk data" },
		{ "1000000000000000\r\n", "15 digits" },
		{ "0\r\nX-Trailer: 1\r\n\r\n", "trailer" },
		{ "5;a\x01\r\n", "control byte" },
	};
	for (size_t step = 1; step <= 64; step *= 4) {
		for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
			moat_error err = { 0 };
			size_t used = 0;
			int r = chunked_all(ok[i].in, step, &used, &err);
			if (r != MOAT_PARSE_DONE || used != ok[i].body_len)
				fail_msg("step %zu: %s: r %d used %zu (%s)", step, ok[i].in, r, used, err.msg);
		}
		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			moat_error err = { 0 };
			size_t used = 0;
			int r = chunked_all(bad[i].in, step, &used, &err);
			if (r != -EBADMSG || !strstr(err.msg, bad[i].why))
				fail_msg("step %zu: %s: r %d (%s), expected \"%s\"", step, bad[i].in, r, err.msg, bad[i].why);
		}
	}
	/* An unfinished body wants more. */
	moat_error err = { 0 };
	size_t used = 0;
	assert_int_equal(chunked_all("5\r\nhel", 64, &used, &err), MOAT_PARSE_MORE);
	assert_int_equal(used, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_http_forms),      cmocka_unit_test(test_http_pipelined),
		cmocka_unit_test(test_http_smuggling),  cmocka_unit_test(test_http_malformed),
		cmocka_unit_test(test_tls_sni),         cmocka_unit_test(test_tls_malformed),
		cmocka_unit_test(test_socks5),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
