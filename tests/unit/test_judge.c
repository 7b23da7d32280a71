/* Unit tests: the judge's cases parser, output comparison, harness protocol
 * and verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "judge.h"

static moat_judge_suite *parse_ok(const char *text)
{
	moat_error err = {0};
	moat_judge_suite *s = NULL;
	int r = moat_judge_suite_parse(text, strlen(text), "cases.jsonl", &s, &err);
	if (r < 0)
		fail_msg("parse failed: %s", err.msg);
	return s;
}

/* Parses text expecting a failure whose message contains want. */
static void parse_bad(const char *text, const char *want)
{
	moat_error err = {0};
	moat_judge_suite *s = NULL;
	int r = moat_judge_suite_parse(text, strlen(text), "cases.jsonl", &s, &err);
	if (r >= 0) {
		moat_judge_suite_free(s);
		fail_msg("accepted: %s", text);
	}
	assert_null(s);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (!strstr(err.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
}

static void test_parse_stdin_case(void **state)
{
	(void)state;
	_cleanup_judge_suite_ moat_judge_suite *s =
		parse_ok("{\"name\":\"add\",\"stdin\":\"1 2\\n\",\"expected_stdout\":\"3\\n\",\"args\":[\"-v\"]}\n"
			 "\n"
			 "  {\"name\":\"empty\",\"expected_stdout\":\"\"}  \r\n");
	assert_int_equal(s->n_cases, 2);
	assert_int_equal(s->n_call_cases, 0);
	moat_judge_case *c = &s->cases[0];
	assert_string_equal(c->name, "add");
	assert_int_equal(c->line, 1);
	assert_false(c->is_call);
	assert_int_equal(c->stdin_len, 4);
	assert_memory_equal(c->stdin_data, "1 2\n", 4);
	assert_int_equal(c->expected_len, 2);
	assert_string_equal(c->args[0], "-v");
	assert_null(c->args[1]);
	assert_int_equal(c->compare, MOAT_JUDGE_COMPARE_EXACT);
	assert_int_equal(s->cases[1].line, 3);
	assert_null(s->cases[1].stdin_data);
	assert_int_equal(s->cases[1].expected_len, 0);
}

static void test_parse_nul_bytes(void **state)
{
	(void)state;
	_cleanup_judge_suite_ moat_judge_suite *s =
		parse_ok("{\"name\":\"bin\",\"stdin\":\"a\\u0000b\",\"expected_stdout\":\"\\u0000\"}");
	assert_int_equal(s->cases[0].stdin_len, 3);
	assert_int_equal(s->cases[0].stdin_data[1], '\0');
	assert_int_equal(s->cases[0].expected_len, 1);
	parse_bad("{\"name\":\"x\",\"expected_stdout\":\"\",\"args\":[\"a\\u0000b\"]}", "NUL");
	parse_bad("{\"name\":\"a\\u0000b\",\"expected_stdout\":\"\"}", "name");
}

static void test_parse_call_case(void **state)
{
	(void)state;
	_cleanup_judge_suite_ moat_judge_suite *s =
		parse_ok("{\"name\":\"f\",\"call\":{\"function\":\"solve\",\"args\":[1,[2,3],{\"k\":null}]},"
			 "\"expected\":{\"a\":[1.5]},\"compare\":\"numeric\",\"tolerance\":0.01,"
			 "\"limits\":{\"time\":\"2s\",\"mem\":\"64M\",\"pids\":8,\"output\":4096}}");
	moat_judge_case *c = &s->cases[0];
	assert_true(c->is_call);
	assert_int_equal(s->n_call_cases, 1);
	assert_string_equal(c->function, "solve");
	assert_int_equal(json_array_size(c->call_args), 3);
	assert_true(json_is_object(c->expected));
	assert_int_equal(c->compare, MOAT_JUDGE_COMPARE_NUMERIC);
	assert_true(c->tolerance == 0.01);

	moat_limits base, out;
	moat_limits_default_code(&base);
	moat_judge_case_limits(c, &base, &out);
	assert_int_equal(out.wall_ms, 2000);
	assert_int_equal(out.memory_bytes, 64ull << 20);
	assert_int_equal(out.pids, 8);
	assert_int_equal(out.output_bytes, 4096);
	assert_int_equal(out.cpu_ms, base.cpu_ms); /* not set: the base stays */
	assert_int_equal(out.tmp_bytes, base.tmp_bytes);

	_cleanup_judge_suite_ moat_judge_suite *s2 =
		parse_ok("{\"name\":\"noargs\",\"call\":{\"function\":\"f\"},\"expected\":null}");
	assert_int_equal(json_array_size(s2->cases[0].call_args), 0);
	assert_true(json_is_null(s2->cases[0].expected));
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_bad("", "no cases");
	parse_bad("\n\n", "no cases");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\"}\n{\"name\":\"b\",\"stdn\":\"x\",\"expected_stdout\":\"1\"}",
		  "cases.jsonl:2: unknown key \"stdn\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\"}\n\n{\"name\": }", "cases.jsonl:3:");
	parse_bad("[1,2]", "cases.jsonl:1: a case is a JSON object");
	parse_bad("{\"expected_stdout\":\"1\"}", "no \"name\"");
	parse_bad("{\"name\":\"\",\"expected_stdout\":\"1\"}", "non-empty");
	parse_bad("{\"name\":\"a\"}", "needs \"expected_stdout\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"expected_stdout\":\"2\"}", "cases.jsonl:1:");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":1}", "must be a string");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\"}\n{\"name\":\"a\",\"expected_stdout\":\"1\"}",
		  "cases.jsonl:2: case \"a\" is already on line 1");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"compare\":\"fuzzy\"}", "\"compare\" must be");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"tolerance\":0.1}", "needs \"compare\": \"numeric\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"compare\":\"numeric\",\"tolerance\":-1}",
		  "non-negative");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"limits\":{\"memory\":\"1G\"}}", "unknown limit");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"limits\":{\"time\":\"fast\"}}", "limit \"time\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"limits\":{\"time\":1.5}}", "limit \"time\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"limits\":{\"pids\":-1}}", "limit \"pids\"");
	parse_bad("{\"name\":\"a\",\"expected_stdout\":\"1\",\"args\":[1]}", "args[0]");
	/* The two kinds of case do not mix. */
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"f\"},\"expected_stdout\":\"1\",\"expected\":1}",
		  "function case");
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"f\"},\"stdin\":\"x\",\"expected\":1}", "function case");
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"f\"}}", "needs \"expected\"");
	parse_bad("{\"name\":\"a\",\"expected\":1}", "belongs to a function case");
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"os.system\"},\"expected\":1}", "identifier");
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"f\",\"args\":{}},\"expected\":1}", "must be an array");
	parse_bad("{\"name\":\"a\",\"call\":{\"function\":\"f\",\"kwargs\":{}},\"expected\":1}", "call.kwargs");
	parse_bad("{\"name\":\"a\",\"call\":{\"args\":[]},\"expected\":1}", "needs \"function\"");
}

static void test_parse_caps(void **state)
{
	(void)state;
	/* More cases than the cap. */
	size_t n = MOAT_JUDGE_MAX_CASES + 1;
	char *big = malloc(n * 48);
	assert_non_null(big);
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(big + o, "{\"name\":\"c%05zu\",\"expected_stdout\":\"\"}\n", i);
	moat_error err = {0};
	moat_judge_suite *s = NULL;
	assert_true(moat_judge_suite_parse(big, o, "big", &s, &err) < 0);
	assert_non_null(strstr(err.msg, "more than 10000 cases"));
	free(big);

	/* A name one byte too long. */
	char name[MOAT_JUDGE_MAX_NAME + 64];
	memset(name, 'x', sizeof(name));
	int len = snprintf(name, sizeof(name), "{\"name\":\"%0*d\",\"expected_stdout\":\"\"}", MOAT_JUDGE_MAX_NAME + 1, 0);
	assert_true(len > 0);
	parse_bad(name, "at most 128 bytes");
}

static bool text(moat_judge_compare mode, double tol, const char *e, const char *a, char *why)
{
	return moat_judge_compare_text(mode, tol, e, strlen(e), a, strlen(a), why, 256);
}

static void test_compare_exact(void **state)
{
	(void)state;
	char why[256];
	assert_true(text(MOAT_JUDGE_COMPARE_EXACT, 0, "3\n", "3\n", why));
	assert_true(text(MOAT_JUDGE_COMPARE_EXACT, 0, "", "", why));
	assert_false(text(MOAT_JUDGE_COMPARE_EXACT, 0, "3\n", "3", why));
	assert_non_null(strstr(why, "line 1: output ends early"));
	assert_false(text(MOAT_JUDGE_COMPARE_EXACT, 0, "a\nb\nc\n", "a\nb\nd\n", why));
	assert_string_equal(why, "line 3: expected \"c\\n\", got \"d\\n\"");
	assert_false(text(MOAT_JUDGE_COMPARE_EXACT, 0, "a\n", "a\nextra\n", why));
	assert_non_null(strstr(why, "line 2: extra output"));
	/* NUL bytes count. */
	assert_false(moat_judge_compare_text(MOAT_JUDGE_COMPARE_EXACT, 0, "a\0b", 3, "a\0c", 3, why, sizeof(why)));
	assert_non_null(strstr(why, "\\x00"));
	/* A long line is shortened in the message. */
	char longline[400];
	memset(longline, 'z', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	assert_false(text(MOAT_JUDGE_COMPARE_EXACT, 0, longline, "y", why));
	assert_true(strlen(why) < 200);
	/* why may be NULL. */
	assert_false(moat_judge_compare_text(MOAT_JUDGE_COMPARE_EXACT, 0, "a", 1, "b", 1, NULL, 0));
}

static void test_compare_whitespace(void **state)
{
	(void)state;
	char why[256];
	assert_true(text(MOAT_JUDGE_COMPARE_WHITESPACE, 0, "1 2 3\n", "  1\t2\n\n3", why));
	assert_true(text(MOAT_JUDGE_COMPARE_WHITESPACE, 0, "", " \n\t", why));
	assert_false(text(MOAT_JUDGE_COMPARE_WHITESPACE, 0, "1 2 3", "1 2", why));
	assert_string_equal(why, "token 3: expected \"3\", got the end of the output");
	assert_false(text(MOAT_JUDGE_COMPARE_WHITESPACE, 0, "1 2", "1 2 3", why));
	assert_non_null(strstr(why, "expected the end of the output"));
	assert_false(text(MOAT_JUDGE_COMPARE_WHITESPACE, 0, "12", "1 2", why));
	/* Whitespace mode does not loosen numbers. */
	assert_false(text(MOAT_JUDGE_COMPARE_WHITESPACE, 1e-6, "1.0", "1", why));
}

static void test_compare_numeric(void **state)
{
	(void)state;
	char why[256];
	const moat_judge_compare N = MOAT_JUDGE_COMPARE_NUMERIC;
	assert_true(text(N, 1e-6, "0.333333", "0.3333331", why));
	assert_true(text(N, 1e-6, "1", "1.0000000", why));
	assert_false(text(N, 1e-6, "0.333", "0.334", why));
	assert_string_equal(why, "token 1: expected \"0.333\", got \"0.334\"");
	/* Relative tolerance for large values, absolute near zero. */
	assert_true(text(N, 1e-6, "1000000000000", "1000000000100", why));
	assert_false(text(N, 1e-6, "1000000000000", "1000002000000", why));
	assert_true(text(N, 1e-6, "0", "0.0000001", why));
	assert_true(text(N, 1e-6, "1e3", "1000", why));
	/* Words compare exactly; the two must agree token for token. */
	assert_true(text(N, 1e-3, "YES 2.5\n", "YES\n2.5004", why));
	assert_false(text(N, 1e-3, "YES 2.5", "yes 2.5", why));
	/* Only decimal numbers: hex floats, nan and inf compare as text. */
	assert_false(text(N, 1, "0x10", "16", why));
	assert_false(text(N, 1, "nan", "NaN", why));
	assert_true(text(N, 1, "nan", "nan", why));
	assert_false(text(N, 1e-6, "inf", "1e999", why));
	assert_false(text(N, 1e-6, "1", "-", why));
	assert_true(text(N, 0, "2", "2.0", why));
	assert_false(text(N, 0, "2", "2.0000001", why));
}

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad JSON in test: %s: %s", s, e.text);
	return v;
}

static bool jcmp(moat_judge_compare mode, double tol, const char *e, const char *a, char *why)
{
	json_t *je = J(e), *ja = J(a);
	bool r = moat_judge_compare_json(mode, tol, je, ja, why, 256);
	json_decref(je);
	json_decref(ja);
	return r;
}

/* Exact mode, and tolerance 0, compare exactly at any size; a tolerance
 * above 0 is relative for large values (test_compare_numeric). */
static void test_compare_big_numbers(void **state)
{
	(void)state;
	char why[256];
	assert_false(jcmp(MOAT_JUDGE_COMPARE_EXACT, 0, "9007199254740993", "9007199254740992.0", why));
	assert_false(jcmp(MOAT_JUDGE_COMPARE_NUMERIC, 0, "9007199254740993", "9007199254740992.0", why));
	assert_false(jcmp(MOAT_JUDGE_COMPARE_NUMERIC, 0, "123456789012345678", "123456789012345679", why));
	assert_false(jcmp(MOAT_JUDGE_COMPARE_EXACT, 0, "123456789012345678", "123456789012345679", why));
	assert_true(jcmp(MOAT_JUDGE_COMPARE_EXACT, 0, "9007199254740992", "9007199254740992.0", why));
	assert_true(jcmp(MOAT_JUDGE_COMPARE_NUMERIC, 1e-6, "1.0", "1.0000001", why));
	assert_false(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "123456789012345678", "123456789012345679", why));
	assert_false(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "9007199254740993", "9007199254740992.0", why));
	assert_true(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "9007199254740992", "9007199254740992.0", why));
	assert_true(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "0.50", "5e-1", why));
	assert_true(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "-0", "0.000", why));
	assert_true(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "007", "7", why));
	assert_false(text(MOAT_JUDGE_COMPARE_NUMERIC, 0, "0.1", "0.10000000000000001", why));
	assert_true(text(MOAT_JUDGE_COMPARE_NUMERIC, 1e-6, "0.1", "0.10000000000000001", why));
}

static void test_compare_json(void **state)
{
	(void)state;
	char why[256];
	const moat_judge_compare E = MOAT_JUDGE_COMPARE_EXACT, N = MOAT_JUDGE_COMPARE_NUMERIC,
				 W = MOAT_JUDGE_COMPARE_WHITESPACE;
	assert_true(jcmp(E, 0, "3", "3", why));
	assert_true(jcmp(E, 0, "3", "3.0", why));
	assert_false(jcmp(E, 0, "3", "\"3\"", why));
	assert_string_equal(why, "$: expected a number, got \"3\"");
	assert_false(jcmp(E, 0, "0.1", "0.1000001", why));
	assert_true(jcmp(N, 1e-6, "0.1", "0.1000001", why));
	assert_false(jcmp(E, 0, "1.6666667", "1", why));
	assert_string_equal(why, "$: expected 1.6666667, got 1");
	assert_true(jcmp(E, 0, "{\"a\":[1,2],\"b\":null}", "{\"b\":null,\"a\":[1,2]}", why));
	assert_false(jcmp(E, 0, "{\"a\":[1,2]}", "{\"a\":[1,3]}", why));
	assert_non_null(strstr(why, "$.a[1]: expected 2, got 3"));
	assert_false(jcmp(E, 0, "{\"a\":1}", "{\"a\":1,\"b\":2}", why));
	assert_non_null(strstr(why, "unexpected key \"b\""));
	assert_false(jcmp(E, 0, "{\"a\":1,\"b\":2}", "{\"a\":1}", why));
	assert_non_null(strstr(why, "missing key \"b\""));
	assert_false(jcmp(E, 0, "[1,2]", "[1,2,3]", why));
	assert_non_null(strstr(why, "array of 2, got 3"));
	assert_false(jcmp(E, 0, "true", "false", why));
	assert_false(jcmp(E, 0, "null", "false", why));
	assert_false(jcmp(E, 0, "[]", "{}", why));
	assert_true(jcmp(E, 0, "\"a b\"", "\"a b\"", why));
	assert_false(jcmp(E, 0, "\"a b\"", "\"a  b\"", why));
	assert_true(jcmp(W, 0, "\"a b\"", "\" a\\n b \"", why));
	assert_true(jcmp(N, 1e-9, "[[1.0, 2.5], {\"x\": 1e-12}]", "[[1, 2.5000000001], {\"x\": 0}]", why));
	/* Large integers compare exactly, not through doubles. */
	assert_false(jcmp(E, 0, "9007199254740993", "9007199254740992", why));
}

static void test_call_request(void **state)
{
	(void)state;
	_cleanup_judge_suite_ moat_judge_suite *s =
		parse_ok("{\"name\":\"f\",\"call\":{\"function\":\"solve\",\"args\":[1,\"x\"]},\"expected\":42}");
	size_t n = 0;
	_cleanup_free_ char *line = moat_judge_call_request(&s->cases[0], "00112233445566778899aabbccddeeff", &n);
	assert_non_null(line);
	assert_int_equal(n, strlen(line));
	assert_int_equal(line[n - 1], '\n');
	/* The expected value never leaves moat. */
	assert_null(strstr(line, "42"));
	assert_null(strstr(line, "expected"));
	json_t *o = J(line);
	assert_string_equal(json_string_value(json_object_get(o, "function")), "solve");
	assert_string_equal(json_string_value(json_object_get(o, "nonce")), "00112233445566778899aabbccddeeff");
	assert_int_equal(json_array_size(json_object_get(o, "args")), 2);
	json_decref(o);

	char a[MOAT_JUDGE_NONCE_LEN + 1], b[MOAT_JUDGE_NONCE_LEN + 1];
	assert_int_equal(moat_judge_nonce(a, NULL), 0);
	assert_int_equal(moat_judge_nonce(b, NULL), 0);
	assert_int_equal(strlen(a), MOAT_JUDGE_NONCE_LEN);
	assert_string_not_equal(a, b);
}

#define NONCE "0123456789abcdef0123456789abcdef"

static void reply(const char *out, moat_judge_reply *r) { moat_judge_reply_parse(out, strlen(out), NONCE, r); }

static void test_reply_parse(void **state)
{
	(void)state;
	moat_judge_reply r;

	reply("hello from the submission\n\nmoat-result:" NONCE " {\"value\":[1,2]}\n", &r);
	assert_int_equal(r.kind, MOAT_JUDGE_REPLY_VALUE);
	assert_int_equal(json_array_size(r.value), 2);
	assert_int_equal(r.other_bytes, strlen("hello from the submission\n\n"));
	moat_judge_reply_done(&r);

	reply("moat-result:" NONCE " {\"error\":\"ZeroDivisionError: division by zero\"}\n", &r);
	assert_int_equal(r.kind, MOAT_JUDGE_REPLY_ERROR);
	assert_string_equal(r.message, "ZeroDivisionError: division by zero");
	moat_judge_reply_done(&r);

	/* Nothing, or a fake verdict without the nonce. */
	reply("", &r);
	assert_int_equal(r.kind, MOAT_JUDGE_REPLY_MISSING);
	reply("{\"verdict\":\"pass\"}\nmoat-result:ffffffffffffffffffffffffffffffff {\"value\":3}\n", &r);
	assert_int_equal(r.kind, MOAT_JUDGE_REPLY_MISSING);

	static const char *const invalid[] = {
		/* The nonce twice: the submission found it and spoke for the
		 * harness. */
		"moat-result:" NONCE " {\"value\":3}\nmoat-result:" NONCE " {\"value\":4}\n",
		"leak " NONCE "\nmoat-result:" NONCE " {\"value\":4}\n",
		/* Not at the start of a line. */
		"xmoat-result:" NONCE " {\"value\":3}\n",
		/* Malformed: cut short, not JSON, extra keys, wrong error type,
		 * no space after the tag. */
		"moat-result:" NONCE " {\"value\":3}",
		"moat-result:" NONCE " {value}\n",
		"moat-result:" NONCE " {\"value\":3,\"verdict\":\"pass\"}\n",
		"moat-result:" NONCE " {\"error\":3}\n",
		"moat-result:" NONCE "{\"value\":3}\n",
	};
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		reply(invalid[i], &r);
		if (r.kind != MOAT_JUDGE_REPLY_INVALID)
			fail_msg("accepted: %s", invalid[i]);
		assert_null(r.value);
	}
}

static moat_result exited(int code)
{
	moat_result r;
	moat_result_init(&r);
	r.status = MOAT_STATUS_EXITED;
	r.exit_code = code;
	r.exit_status = code;
	return r;
}

static void test_decide(void **state)
{
	(void)state;
	char detail[512];
	_cleanup_judge_suite_ moat_judge_suite *s =
		parse_ok("{\"name\":\"t\",\"expected_stdout\":\"3\\n\"}\n"
			 "{\"name\":\"f\",\"call\":{\"function\":\"f\"},\"expected\":3}\n");
	const moat_judge_case *t = &s->cases[0], *f = &s->cases[1];

	moat_result r = exited(0);
	assert_int_equal(moat_judge_decide(t, &r, "3\n", 2, NULL, NULL, 0, detail, sizeof(detail)), MOAT_JUDGE_PASS);
	assert_int_equal(moat_judge_decide(t, &r, "4\n", 2, NULL, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_WRONG_ANSWER);
	assert_non_null(strstr(detail, "expected \"3\\n\", got \"4\\n\""));
	/* Right output, but a crash: not a pass. */
	r = exited(1);
	assert_int_equal(moat_judge_decide(t, &r, "3\n", 2, NULL, "Traceback", 9, detail, sizeof(detail)),
			 MOAT_JUDGE_RUNTIME_ERROR);
	assert_non_null(strstr(detail, "exit code 1; stderr: Traceback"));
	r.status = MOAT_STATUS_SIGNALED;
	r.signal = 11;
	assert_int_equal(moat_judge_decide(t, &r, "3\n", 2, NULL, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_RUNTIME_ERROR);
	assert_non_null(strstr(detail, "signal 11"));

	static const struct {
		moat_status s;
		moat_judge_verdict v;
	} map[] = {
		{MOAT_STATUS_TIMEOUT, MOAT_JUDGE_TIMEOUT},       {MOAT_STATUS_CPU_LIMIT, MOAT_JUDGE_CPU_LIMIT},
		{MOAT_STATUS_OOM, MOAT_JUDGE_OOM},               {MOAT_STATUS_PIDS_LIMIT, MOAT_JUDGE_PIDS_LIMIT},
		{MOAT_STATUS_OUTPUT_LIMIT, MOAT_JUDGE_OUTPUT_LIMIT}, {MOAT_STATUS_SETUP_ERROR, MOAT_JUDGE_SETUP_ERROR},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		r = exited(0);
		r.status = map[i].s;
		/* Even the right output does not pass a run that hit a limit. */
		assert_int_equal(moat_judge_decide(t, &r, "3\n", 2, NULL, NULL, 0, detail, sizeof(detail)), map[i].v);
		assert_string_equal(moat_judge_verdict_to_string(map[i].v), moat_status_to_string(map[i].s));
	}

	moat_judge_reply rep;
	r = exited(0);
	reply("moat-result:" NONCE " {\"value\":3.0}\n", &rep);
	assert_int_equal(moat_judge_decide(f, &r, NULL, 0, &rep, NULL, 0, detail, sizeof(detail)), MOAT_JUDGE_PASS);
	moat_judge_reply_done(&rep);
	reply("moat-result:" NONCE " {\"value\":4}\n", &rep);
	assert_int_equal(moat_judge_decide(f, &r, NULL, 0, &rep, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_WRONG_ANSWER);
	assert_string_equal(detail, "$: expected 3, got 4");
	/* A right value followed by a crash is not a pass. */
	r = exited(3);
	assert_int_equal(moat_judge_decide(f, &r, NULL, 0, &rep, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_RUNTIME_ERROR);
	moat_judge_reply_done(&rep);
	r = exited(0);
	reply("{\"verdict\":\"pass\"}\n", &rep);
	assert_int_equal(moat_judge_decide(f, &r, NULL, 0, &rep, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_RUNTIME_ERROR);
	reply("moat-result:" NONCE " {\"error\":\"ValueError: no\"}\n", &rep);
	assert_int_equal(moat_judge_decide(f, &r, NULL, 0, &rep, NULL, 0, detail, sizeof(detail)),
			 MOAT_JUDGE_RUNTIME_ERROR);
	assert_string_equal(detail, "ValueError: no");
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(moat_judge_lang_from_path("a/b/sol.py"), MOAT_JUDGE_LANG_PYTHON);
	assert_int_equal(moat_judge_lang_from_path("sol.js"), MOAT_JUDGE_LANG_JAVASCRIPT);
	assert_int_equal(moat_judge_lang_from_path("sol.c"), _MOAT_JUDGE_LANG_INVALID);
	assert_int_equal(moat_judge_lang_from_path("dir.py/sol"), _MOAT_JUDGE_LANG_INVALID);
	assert_int_equal(moat_judge_lang_from_string("python"), MOAT_JUDGE_LANG_PYTHON);
	assert_int_equal(moat_judge_lang_from_string("js"), MOAT_JUDGE_LANG_JAVASCRIPT);
	assert_int_equal(moat_judge_lang_from_string("ruby"), _MOAT_JUDGE_LANG_INVALID);
	assert_int_equal(moat_judge_compare_from_string("numeric"), MOAT_JUDGE_COMPARE_NUMERIC);
	assert_int_equal(moat_judge_compare_from_string(NULL), _MOAT_JUDGE_COMPARE_INVALID);
	assert_string_equal(moat_judge_verdict_to_string(MOAT_JUDGE_WRONG_ANSWER), "wrong_answer");
	assert_string_equal(moat_judge_verdict_to_string(_MOAT_JUDGE_VERDICT_MAX), "invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stdin_case), cmocka_unit_test(test_parse_nul_bytes),
		cmocka_unit_test(test_parse_call_case),  cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_caps),       cmocka_unit_test(test_compare_exact),
		cmocka_unit_test(test_compare_whitespace), cmocka_unit_test(test_compare_numeric),
		cmocka_unit_test(test_compare_json),     cmocka_unit_test(test_call_request),
		cmocka_unit_test(test_compare_big_numbers),
		cmocka_unit_test(test_reply_parse),      cmocka_unit_test(test_decide),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
