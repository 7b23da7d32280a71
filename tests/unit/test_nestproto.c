/* The delegation socket's message (nestproto.c): the one request the
 * front takes from inside, decoded with a cap on every size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "nestproto.h"

static void test_round_trip(void **state)
{
	(void)state;
	char *argv[] = {"python3", "-c", "print(1)", NULL};
	char *buf = NULL;
	size_t len = 0;
	moat_error err = {0};
	assert_int_equal(moat_nest_encode("version: 1\n", "/data", argv, &buf, &len, &err), 0);
	moat_nest_request rq;
	assert_int_equal(moat_nest_decode(buf, len, &rq, &err), 0);
	assert_string_equal(rq.yaml, "version: 1\n");
	assert_string_equal(rq.cwd, "/data");
	for (int i = 0; i < 3; i++)
		assert_string_equal(rq.argv[i], argv[i]);
	assert_null(rq.argv[3]);
	moat_nest_request_done(&rq);
	free(buf);
}

/* Decodes buf after poking one header field; returns the error. */
static int decode_with(uint32_t field, uint32_t value, const char *want)
{
	char *argv[] = {"true", NULL};
	char *buf = NULL;
	size_t len = 0;
	moat_error err = {0};
	assert_int_equal(moat_nest_encode("y", "", argv, &buf, &len, &err), 0);
	memcpy(buf + field * sizeof(uint32_t), &value, sizeof(value));
	moat_nest_request rq;
	int r = moat_nest_decode(buf, len, &rq, &err);
	free(buf);
	if (r == 0)
		moat_nest_request_done(&rq);
	else
		assert_non_null(strstr(err.msg, want));
	return r;
}

static void test_header_checked(void **state)
{
	(void)state;
	assert_int_not_equal(decode_with(0, 0xdeadbeef, "magic"), 0);
	assert_int_not_equal(decode_with(1, 2, "version"), 0);
	assert_int_not_equal(decode_with(2, MOAT_NEST_EXIT, "message type 2"), 0);
	assert_int_not_equal(decode_with(2, 99, "message type 99"), 0);
	assert_int_not_equal(decode_with(3, 0, "arguments"), 0);
	assert_int_not_equal(decode_with(3, 2, "not terminated"), 0);
	assert_int_not_equal(decode_with(3, MOAT_NEST_MAX_ARGS + 1, "arguments"), 0);
}

static void test_body_checked(void **state)
{
	(void)state;
	moat_error err = {0};
	moat_nest_request rq;
	moat_nest_hdr h = {MOAT_NEST_MAGIC, MOAT_NEST_VERSION, MOAT_NEST_RUN, 1};
	char buf[64];
	memcpy(buf, &h, sizeof(h));
	/* A short message, an unterminated string, trailing bytes, an empty
	 * command. */
	assert_int_not_equal(moat_nest_decode(buf, sizeof(h) - 1, &rq, &err), 0);
	memcpy(buf + sizeof(h), "y\0\0tru", 6);
	assert_int_not_equal(moat_nest_decode(buf, sizeof(h) + 6, &rq, &err), 0);
	memcpy(buf + sizeof(h), "y\0\0true\0x", 10);
	assert_int_not_equal(moat_nest_decode(buf, sizeof(h) + 10, &rq, &err), 0);
	assert_non_null(strstr(err.msg, "after the last argument"));
	memcpy(buf + sizeof(h), "y\0\0\0", 4);
	assert_int_not_equal(moat_nest_decode(buf, sizeof(h) + 4, &rq, &err), 0);
	assert_non_null(strstr(err.msg, "empty command"));
	/* Too large either way. */
	char *big = calloc(1, MOAT_NEST_MAX_MSG + 1);
	char *argv[] = {"true", NULL};
	char *out = NULL;
	size_t len;
	memset(big, 'a', MOAT_NEST_MAX_MSG);
	assert_int_not_equal(moat_nest_encode(big, "", argv, &out, &len, &err), 0);
	assert_int_not_equal(moat_nest_decode(big, MOAT_NEST_MAX_MSG + 1, &rq, &err), 0);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_header_checked),
		cmocka_unit_test(test_body_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
