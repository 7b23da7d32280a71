/* Unit tests: JSON-RPC 2.0 decoding, framing with a size cap, and the ids
 * a peer has in flight or used (jsonrpc.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static int decode(const char *s, moat_jsonrpc_msg *m, json_t **id, const char **err)
{
	return moat_jsonrpc_decode(s, strlen(s), m, id, err);
}

static void test_decode_kinds(void **state)
{
	(void)state;
	moat_jsonrpc_msg m = {0};
	json_t *id;
	const char *err;
	assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", &m, &id, &err), 0);
	assert_int_equal(m.kind, MOAT_JSONRPC_REQUEST);
	assert_string_equal(m.method, "ping");
	assert_int_equal(json_integer_value(m.id), 7);
	assert_null(m.params);
	json_decref(id);
	moat_jsonrpc_msg_clear(&m);

	assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, &id, &err), 0);
	assert_int_equal(m.kind, MOAT_JSONRPC_NOTIFICATION);
	assert_null(m.id);
	assert_null(id);
	moat_jsonrpc_msg_clear(&m);

	assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &m, &id, &err), 0);
	assert_int_equal(m.kind, MOAT_JSONRPC_RESPONSE);
	json_decref(id);
	moat_jsonrpc_msg_clear(&m);

	assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-1,\"message\":\"x\"}}", &m, &id, &err), 0);
	assert_int_equal(m.kind, MOAT_JSONRPC_RESPONSE);
	json_decref(id);
	moat_jsonrpc_msg_clear(&m);
}

/* Each bad message gets its error code, and the id when it could be read. */
static void test_decode_errors(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int code;
		bool has_id;
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi", MOAT_JSONRPC_PARSE_ERROR, false}, /* truncated */
		{"", MOAT_JSONRPC_PARSE_ERROR, false},
		{"[]", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MOAT_JSONRPC_INVALID_REQUEST, false}, /* batch */
		{"42", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"id\":1,\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"method\":\"y\"}", MOAT_JSONRPC_PARSE_ERROR, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1}}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"result\":1}", MOAT_JSONRPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":2}", MOAT_JSONRPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}", MOAT_JSONRPC_PARSE_ERROR, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		moat_jsonrpc_msg m = {0};
		json_t *id = NULL;
		const char *err = NULL;
		int r = decode(cases[i].in, &m, &id, &err);
		if (r != cases[i].code || (id != NULL) != cases[i].has_id)
			fail_msg("case %zu (%s): %d, id %p", i, cases[i].in, r, (void *)id);
		assert_non_null(err);
		assert_null(m.msg);
		json_decref(id);
	}
	/* A string id too long to be one. */
	char big[600];
	memset(big, 'a', sizeof(big));
	char msg[800];
	snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":\"%.*s\",\"method\":\"x\"}", 300, big);
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *err;
	assert_int_equal(decode(msg, &m, &id, &err), MOAT_JSONRPC_INVALID_REQUEST);
	assert_null(id);
}

static void test_decode_invalid_utf8(void **state)
{
	(void)state;
	static const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}";
	moat_jsonrpc_msg m = {0};
	json_t *id;
	const char *err;
	assert_int_equal(moat_jsonrpc_decode(bad, sizeof(bad) - 1, &m, &id, &err), MOAT_JSONRPC_PARSE_ERROR);
	assert_string_equal(err, "invalid UTF-8");
	/* An overlong encoding of '/' and a lone surrogate are invalid too. */
	static const char overlong[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}";
	assert_int_equal(moat_jsonrpc_decode(overlong, sizeof(overlong) - 1, &m, &id, &err), MOAT_JSONRPC_PARSE_ERROR);
	static const char surrogate[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}";
	assert_int_equal(moat_jsonrpc_decode(surrogate, sizeof(surrogate) - 1, &m, &id, &err), MOAT_JSONRPC_PARSE_ERROR);
	/* A raw NUL byte in the message. */
	static const char nul[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\0b\"}";
	assert_int_equal(moat_jsonrpc_decode(nul, sizeof(nul) - 1, &m, &id, &err), MOAT_JSONRPC_PARSE_ERROR);
}

static void test_decode_size_cap(void **state)
{
	(void)state;
	moat_jsonrpc_msg m = {0};
	json_t *id;
	const char *err;
	assert_int_equal(moat_jsonrpc_decode("{}", MOAT_JSONRPC_MAX_MESSAGE + 1, &m, &id, &err), MOAT_JSONRPC_INVALID_REQUEST);
	assert_string_equal(err, "message too large");
}

static void test_salvage_id(void **state)
{
	(void)state;
	static const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\": 8,\"result\":{\"x\":\"\xc0\xaf\"}}";
	json_t *id = moat_jsonrpc_salvage_id(bad, sizeof(bad) - 1);
	assert_int_equal(json_integer_value(id), 8);
	json_decref(id);
	static const char s[] = "{\"id\":\"req-1\",\"result\":\xff}";
	id = moat_jsonrpc_salvage_id(s, sizeof(s) - 1);
	assert_string_equal(json_string_value(id), "req-1");
	json_decref(id);
	assert_null(moat_jsonrpc_salvage_id("this is not json", 16));
	assert_null(moat_jsonrpc_salvage_id("{\"id\":\"a\\\"b\"}", 12));
	assert_null(moat_jsonrpc_salvage_id("{\"id\":x}", 8));
	assert_null(moat_jsonrpc_salvage_id("{\"id\"", 5));
}

static void test_responses(void **state)
{
	(void)state;
	json_t *id = json_string("x");
	json_t *e = moat_jsonrpc_error(id, MOAT_JSONRPC_METHOD_NOT_FOUND, "no such method", NULL);
	size_t n;
	char *line = moat_jsonrpc_encode_line(e, &n);
	assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,\"message\":\"no such method\"}}\n");
	assert_int_equal(n, strlen(line));
	free(line);
	json_decref(e);
	e = moat_jsonrpc_error(NULL, MOAT_JSONRPC_PARSE_ERROR, "parse error", NULL);
	line = moat_jsonrpc_encode_line(e, &n);
	assert_non_null(strstr(line, "\"id\":null"));
	free(line);
	json_decref(e);
	/* Text outside ASCII is escaped: a line is never split by a byte of it. */
	json_t *r = moat_jsonrpc_result(id, json_pack("{s:s}", "t", "\xe2\x80\xa8 \xc3\xa9"));
	line = moat_jsonrpc_encode_line(r, &n);
	assert_non_null(strstr(line, "\\u2028 \\u00E9"));
	free(line);
	json_decref(r);
	json_decref(id);
}

struct lines {
	char got[16][64];
	size_t n;
	size_t oversized[4];
	size_t n_over;
};

static int on_line(void *u, const char *line, size_t len)
{
	struct lines *l = u;
	if (!line) {
		l->oversized[l->n_over++] = len;
		return 0;
	}
	snprintf(l->got[l->n++], 64, "%.*s", (int)len, line);
	return 0;
}

static void test_framer(void **state)
{
	(void)state;
	moat_jsonrpc_framer f;
	moat_jsonrpc_framer_init(&f, 8);
	struct lines l = {0};
	/* Split across feeds, CRLF, empty lines skipped. */
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "ab", 2, on_line, &l), 0);
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "c\r\n\n\nde\nf", 9, on_line, &l), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.got[0], "abc");
	assert_string_equal(l.got[1], "de");
	/* "f" is held; a line over 8 bytes is reported once, then dropped up to its newline. */
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "0123456789", 10, on_line, &l), 0);
	assert_int_equal(l.n_over, 1);
	assert_int_equal(l.oversized[0], 11);
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "more and more", 13, on_line, &l), 0);
	assert_int_equal(l.n_over, 1);
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "tail\nok\n", 8, on_line, &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.got[2], "ok");
	/* An oversized line whole in one feed. */
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "123456789\nx\n", 12, on_line, &l), 0);
	assert_int_equal(l.n_over, 2);
	assert_int_equal(l.oversized[1], 9);
	assert_string_equal(l.got[3], "x");
	/* Exactly the cap is fine. */
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "12345678\n", 9, on_line, &l), 0);
	assert_string_equal(l.got[4], "12345678");
	assert_true(f.cap <= 8);
	moat_jsonrpc_framer_free(&f);
}

static int stop_at_second(void *u, const char *line, size_t len)
{
	(void)line;
	(void)len;
	return ++*(int *)u == 2 ? -ECANCELED : 0;
}

static void test_framer_stops(void **state)
{
	(void)state;
	moat_jsonrpc_framer f;
	moat_jsonrpc_framer_init(&f, 0);
	assert_int_equal(f.max, MOAT_JSONRPC_MAX_MESSAGE);
	int n = 0;
	assert_int_equal(moat_jsonrpc_framer_feed(&f, "a\nb\nc\n", 6, stop_at_second, &n), -ECANCELED);
	assert_int_equal(n, 2);
	moat_jsonrpc_framer_free(&f);
}

static void test_ids(void **state)
{
	(void)state;
	moat_jsonrpc_ids t;
	moat_jsonrpc_ids_init(&t);
	json_t *one = json_integer(1), *one_s = json_string("1"), *two = json_integer(2);
	assert_int_equal(moat_jsonrpc_ids_begin(&t, one), 0);
	/* The string "1" is another id than the number 1. */
	assert_int_equal(moat_jsonrpc_ids_begin(&t, one_s), 0);
	/* Reused while in flight, and after it finished. */
	assert_int_equal(moat_jsonrpc_ids_begin(&t, one), -EEXIST);
	assert_true(moat_jsonrpc_ids_inflight(&t, one));
	assert_int_equal(moat_jsonrpc_ids_end(&t, one), 0);
	assert_false(moat_jsonrpc_ids_inflight(&t, one));
	assert_int_equal(moat_jsonrpc_ids_end(&t, one), -ENOENT);
	assert_int_equal(moat_jsonrpc_ids_begin(&t, one), -EEXIST);
	assert_int_equal(moat_jsonrpc_ids_end(&t, two), -ENOENT);
	/* The in-flight cap. */
	for (int i = 100; i < 100 + MOAT_JSONRPC_MAX_INFLIGHT - 1; i++) {
		json_t *id = json_integer(i);
		assert_int_equal(moat_jsonrpc_ids_begin(&t, id), 0);
		json_decref(id);
	}
	assert_int_equal(moat_jsonrpc_ids_begin(&t, two), -EAGAIN);
	/* Only the last MOAT_JSONRPC_RECENT_IDS finished ids are remembered. */
	for (int i = 100; i < 100 + MOAT_JSONRPC_MAX_INFLIGHT - 1; i++) {
		json_t *id = json_integer(i);
		assert_int_equal(moat_jsonrpc_ids_end(&t, id), 0);
		json_decref(id);
	}
	for (int i = 0; i < MOAT_JSONRPC_RECENT_IDS; i++) {
		json_t *id = json_integer(10000 + i);
		assert_int_equal(moat_jsonrpc_ids_begin(&t, id), 0);
		assert_int_equal(moat_jsonrpc_ids_end(&t, id), 0);
		json_decref(id);
	}
	assert_int_equal(moat_jsonrpc_ids_begin(&t, one), 0);
	json_decref(one);
	json_decref(one_s);
	json_decref(two);
	moat_jsonrpc_ids_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_kinds),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_decode_invalid_utf8),
		cmocka_unit_test(test_decode_size_cap),
		cmocka_unit_test(test_salvage_id),
		cmocka_unit_test(test_responses),
		cmocka_unit_test(test_framer),
		cmocka_unit_test(test_framer_stops),
		cmocka_unit_test(test_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
