/* Unit tests: secret redaction of buffers, streams and JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "redact.h"

static moat_redactor *make(void)
{
	moat_error err = {0};
	moat_redactor *r = moat_redactor_new();
	assert_non_null(r);
	assert_int_equal(moat_redactor_add(r, "TOKEN", "ghp_abc123", &err), 0);
	assert_int_equal(moat_redactor_add(r, "LONG", "ghp_abc123XYZ", &err), 0);
	assert_int_equal(moat_redactor_add(r, "PW", "hunter2", &err), 0);
	return r;
}

static void test_buffer(void **state)
{
	(void)state;
	_cleanup_redactor_ moat_redactor *r = make();
	char *o = NULL;
	size_t n = 0;
	const char *in = "a ghp_abc123 b ghp_abc123XYZ c hunter2hunter2";
	assert_int_equal(moat_redact(r, in, strlen(in), &o, &n), 4);
	assert_string_equal(o, "a [REDACTED:TOKEN] b [REDACTED:LONG] c [REDACTED:PW][REDACTED:PW]");
	assert_int_equal(n, strlen(o));
	free(o);
	assert_int_equal(moat_redact(r, "nothing", 7, &o, &n), 0);
	assert_string_equal(o, "nothing");
	free(o);
	/* A NUL inside the buffer does not stop the scan. */
	const char bin[] = "x\0hunter2";
	assert_int_equal(moat_redact(r, bin, sizeof(bin) - 1, &o, &n), 1);
	assert_int_equal(n, 2 + strlen("[REDACTED:PW]"));
	assert_memory_equal(o, "x\0[REDACTED:PW]", n);
	free(o);
	assert_int_equal(moat_redact(NULL, "hunter2", 7, &o, &n), 0);
	assert_string_equal(o, "hunter2");
	free(o);
}

static void test_add_rules(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_redactor_ moat_redactor *r = moat_redactor_new();
	assert_true(moat_redactor_add(r, "", "v", &err) < 0);
	assert_true(moat_redactor_add(r, "A B", "v", &err) < 0);
	assert_true(moat_redactor_add(r, "A]", "v", &err) < 0);
	assert_true(moat_redactor_add(r, "A", "", &err) < 0);
	assert_int_equal(moat_redactor_add(r, "A", "same", &err), 0);
	assert_int_equal(moat_redactor_add(r, "B", "same", &err), 0);
	assert_int_equal(moat_redactor_count(r), 1);
}

static void test_holdback(void **state)
{
	(void)state;
	_cleanup_redactor_ moat_redactor *r = make();
	assert_int_equal(moat_redact_holdback(r, "abc", 3), 0);
	assert_int_equal(moat_redact_holdback(r, "xx ghp_ab", 9), 6);
	assert_int_equal(moat_redact_holdback(r, "xx ghp_abc123XY", 15), 12);
	assert_int_equal(moat_redact_holdback(r, "hunt", 4), 4);
	/* A complete value is not held back: it is redacted now. */
	assert_int_equal(moat_redact_holdback(r, "hunter2", 7), 0);
	assert_int_equal(moat_redact_holdback(NULL, "hunt", 4), 0);
}

static void test_json(void **state)
{
	(void)state;
	_cleanup_redactor_ moat_redactor *r = make();
	json_t *j = json_pack("{s:s, s:[s, i, {s:s}], s:s}", "a", "pw=hunter2", "b", "ghp_abc123", 5, "hunter2",
			      "deep", "c", "clean");
	assert_non_null(j);
	assert_int_equal(moat_redact_json(r, j), 3);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"a\":\"pw=[REDACTED:PW]\",\"b\":[\"[REDACTED:TOKEN]\",5,{\"[REDACTED:PW]\":\"deep\"}],"
			       "\"c\":\"clean\"}");
	free(s);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffer),
		cmocka_unit_test(test_add_rules),
		cmocka_unit_test(test_holdback),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
