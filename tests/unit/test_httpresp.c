/* Unit tests: where an upstream's response ends (httpresp.h), whole and
 * split at every byte, with what follows it left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "httpresp.h"
#include "proxyproto.h"

/* Feeds s in steps of step bytes (0: whole); returns the verdict and, in
 * *used, how many bytes the response took. */
static int feed(moat_http_resp *r, bool head, const char *s, size_t len, size_t step, size_t *used)
{
	moat_http_resp_init(r, head);
	size_t off = 0;
	int ret = MOAT_PARSE_MORE;
	*used = 0;
	while (off < len && ret == MOAT_PARSE_MORE) {
		size_t n = step && step < len - off ? step : len - off, u = 0;
		moat_error err = {0};
		ret = moat_http_resp_feed(r, s + off, n, &u, &err);
		if (ret == MOAT_PARSE_MORE)
			assert_int_equal(u, n);
		*used += u;
		off += n;
	}
	return ret;
}

/* The response ends exactly where want says, whatever the steps; returns
 * the follower for its flags. */
static void ends_at(moat_http_resp *r, bool head, const char *s, size_t want, bool reusable)
{
	size_t len = strlen(s);
	for (size_t step = 0; step <= len; step = step ? step * 2 + 1 : 1) {
		size_t used;
		int ret = feed(r, head, s, len, step, &used);
		if (ret != MOAT_PARSE_DONE || used != want)
			fail_msg("step %zu: %d, used %zu, want %zu: %s", step, ret, used, want, s);
		assert_int_equal(r->reusable, reusable);
	}
}

static void test_length(void **state)
{
	(void)state;
	moat_http_resp r;
	const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	char buf[256];
	snprintf(buf, sizeof(buf), "%sHTTP/1.1 200 OK\r\n", a);
	ends_at(&r, false, buf, strlen(a), true);
	assert_int_equal(r.status, 200);
	/* Zero length, a repeated equal length, a reason-less status line. */
	ends_at(&r, false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nGET", 38, true);
	ends_at(&r, false, "HTTP/1.1 200\r\nContent-Length: 3, 3\r\n\r\nabcX", 41, true);
	/* Connection: close and HTTP/1.0 end the connection after it. */
	ends_at(&r, false, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 58, false);
	ends_at(&r, false, "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 39, false);
	ends_at(&r, false, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", 63, true);
}

static void test_no_body(void **state)
{
	(void)state;
	moat_http_resp r;
	/* HEAD, 204 and 304 have no body whatever the head says. */
	const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
	ends_at(&r, true, h, strlen(h), true);
	ends_at(&r, false, "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nHTTP", 46, true);
	ends_at(&r, false, "HTTP/1.1 304 Not Modified\r\n\r\n", 29, true);
}

static void test_interim(void **state)
{
	(void)state;
	moat_http_resp r;
	const char *s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
			"HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone";
	ends_at(&r, false, s, strlen(s), true);
	assert_int_equal(r.status, 201);
}

static void test_chunked(void **state)
{
	(void)state;
	moat_http_resp r;
	const char *s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			"4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n";
	char buf[512];
	snprintf(buf, sizeof(buf), "%sHTTP/1.1", s);
	ends_at(&r, false, buf, strlen(s), true);
	/* A chunk's data holding what looks like the end is data. */
	const char *t = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\n0\r\n\r\n\r\n0\r\n\r\n";
	ends_at(&r, false, t, strlen(t), true);
}

static void test_ambiguous(void **state)
{
	(void)state;
	moat_http_resp r;
	size_t used;
	/* Both framings: followed as chunked, and neither connection is
	 * reused after it. */
	const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
	ends_at(&r, false, s, strlen(s), false);
	/* Two lengths: no reading is safe. */
	const char *d = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd";
	assert_true(feed(&r, false, d, strlen(d), 0, &used) < 0);
	/* A coding other than chunked last, or no length: until close. */
	const char *c = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxxxxxxxx";
	assert_int_equal(feed(&r, false, c, strlen(c), 0, &used), MOAT_PARSE_MORE);
	assert_int_equal(used, strlen(c));
	assert_true(r.close_delimited);
	assert_false(r.reusable);
	const char *n = "HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n";
	assert_int_equal(feed(&r, false, n, strlen(n), 0, &used), MOAT_PARSE_MORE);
	assert_true(r.close_delimited);
	const char *u = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw";
	assert_int_equal(feed(&r, false, u, strlen(u), 0, &used), MOAT_PARSE_MORE);
	assert_true(r.close_delimited);
}

static void test_malformed(void **state)
{
	(void)state;
	moat_http_resp r;
	size_t used;
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1234567890abcdef0\r\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		for (size_t step = 0; step <= 1; step++)
			if (feed(&r, false, bad[i], strlen(bad[i]), step, &used) >= 0)
				fail_msg("accepted: %s", bad[i]);
	/* Caps: a line, a head, interim responses without end. */
	static char big[MOAT_HTTP_RESP_MAX_HEAD + 4096];
	int o = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nX: ");
	memset(big + o, 'a', MOAT_HTTP_RESP_MAX_LINE + 10);
	big[o + MOAT_HTTP_RESP_MAX_LINE + 10] = '\0';
	assert_true(feed(&r, false, big, strlen(big), 0, &used) < 0);
	o = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\n");
	while ((size_t)o + 100 < sizeof(big))
		o += snprintf(big + o, sizeof(big) - (size_t)o, "X-Filler: %080d\r\n", 0);
	assert_true(feed(&r, false, big, strlen(big), 0, &used) < 0);
	o = 0;
	for (int i = 0; i < MOAT_HTTP_RESP_MAX_INTERIM + 2; i++)
		o += snprintf(big + o, sizeof(big) - (size_t)o, "HTTP/1.1 100 Continue\r\n\r\n");
	assert_true(feed(&r, false, big, strlen(big), 0, &used) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_length),    cmocka_unit_test(test_no_body),   cmocka_unit_test(test_interim),
		cmocka_unit_test(test_chunked),   cmocka_unit_test(test_ambiguous), cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
