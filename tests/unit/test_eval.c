/* Unit tests: moat eval's input layouts, the harness's report, verdicts, the
 * pass@k estimator, result lines and the summary. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "eval.h"
#include "judge.h"

#define P1 "{\"task_id\":\"T/0\",\"prompt\":\"def f(x):\\n\",\"test\":\"def check(c):\\n    assert c(1) == 2\\n\",\"entry_point\":\"f\"}\n"
#define P2 "{\"task_id\":\"T/1\",\"prompt\":\"def g():\\n\",\"test\":\"def check(c):\\n    pass\\n\",\"entry_point\":\"g\",\"canonical_solution\":\"    return 1\\n\",\"extra\":[1,2]}\n"

static moat_eval_problems *problems_ok(const char *text)
{
	moat_error err = {0};
	moat_eval_problems *p = NULL;
	if (moat_eval_problems_parse("problems.jsonl", text, strlen(text), &p, &err) < 0)
		fail_msg("parse failed: %s", err.msg);
	return p;
}

static void problems_bad(const char *text, const char *want)
{
	moat_error err = {0};
	moat_eval_problems *p = NULL;
	if (moat_eval_problems_parse("problems.jsonl", text, strlen(text), &p, &err) >= 0) {
		moat_eval_problems_free(p);
		fail_msg("accepted: %s", text);
	}
	assert_null(p);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (!strstr(err.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
}

static void samples_bad(const moat_eval_problems *p, const char *text, const char *want)
{
	moat_error err = {0};
	moat_eval_samples *s = NULL;
	if (moat_eval_samples_parse("samples.jsonl", text, strlen(text), p, &s, &err) >= 0) {
		moat_eval_samples_free(s);
		fail_msg("accepted: %s", text);
	}
	assert_null(s);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (!strstr(err.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
}

static void test_problems_layouts(void **state)
{
	(void)state;
	_cleanup_eval_problems_ moat_eval_problems *p = problems_ok(P1 "\n  \r\n" P2);
	assert_int_equal(p->n, 2);
	assert_string_equal(p->v[0].task_id, "T/0");
	assert_string_equal(p->v[0].entry_point, "f");
	assert_null(p->v[0].canonical_solution);
	assert_int_equal(p->v[0].line, 1);
	assert_int_equal(p->v[1].line, 4);
	assert_string_equal(p->v[1].canonical_solution, "    return 1\n");
	assert_int_equal(p->v[1].lang, MOAT_EVAL_LANG_NONE);
	assert_int_equal(moat_eval_problems_find(p, "T/1"), 1);
	assert_int_equal(moat_eval_problems_find(p, "T/0"), 0);
	assert_int_equal(moat_eval_problems_find(p, "T/2"), -1);

	/* MultiPL-E: name, tests, language, no entry_point. */
	_cleanup_eval_problems_ moat_eval_problems *m = problems_ok(
		"{\"name\":\"HumanEval_0_x\",\"language\":\"js\",\"prompt\":\"function x(){\\n\","
		"\"tests\":\"}\\nconst assert = require('node:assert');\\nassert.equal(x(),1);\\n\",\"stop_tokens\":[\"\\nfunction\"]}\n");
	assert_string_equal(m->v[0].task_id, "HumanEval_0_x");
	assert_int_equal(m->v[0].lang, MOAT_EVAL_LANG_JAVASCRIPT);
	assert_null(m->v[0].entry_point);
	assert_int_equal(m->v[0].limits_set, 0);

	/* Per-problem limits, with moat judge's keys. */
	_cleanup_eval_problems_ moat_eval_problems *l = problems_ok(
		"{\"task_id\":\"a\",\"prompt\":\"p\",\"test\":\"t\",\"limits\":{\"time\":\"90s\",\"mem\":\"512M\"}}\n");
	assert_int_equal(l->v[0].limits_set, MOAT_JUDGE_LIMIT_TIME | MOAT_JUDGE_LIMIT_MEM);
	assert_int_equal(l->v[0].limits.wall_ms, 90000);
	assert_int_equal(l->v[0].limits.memory_bytes, 512u << 20);
	assert_non_null(strstr(m->v[0].test, "assert.equal"));
}

static void test_problems_errors(void **state)
{
	(void)state;
	problems_bad(P1 "{\"task_id\":\"T/1\",\"prompt\":\"x\"\n", "problems.jsonl:2: bad JSON");
	problems_bad(P1 "[1,2]\n", "problems.jsonl:2: not a JSON object");
	problems_bad("{\"prompt\":\"x\",\"test\":\"y\"}\n", "problems.jsonl:1: missing \"task_id\"");
	problems_bad("{\"task_id\":\"a\",\"test\":\"y\"}\n", "problems.jsonl:1: missing \"prompt\"");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"y\"}\n", "problems.jsonl:1: missing \"test\"");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"y\",\"test\":\"t\",\"tests\":\"t\"}\n", "both \"test\" and \"tests\"");
	problems_bad("{\"task_id\":\"a\",\"prompt\":1,\"test\":\"t\"}\n", "problems.jsonl:1: \"prompt\" is not a string");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"p\",\"test\":\"t\",\"entry_point\":\"f()\\nimport os\"}\n",
		     "is not an identifier");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"p\",\"test\":\"t\",\"language\":\"cobol\"}\n", "\"language\" \"cobol\"");
	problems_bad("{\"task_id\":\"a\",\"task_id\":\"b\",\"prompt\":\"p\",\"test\":\"t\"}\n", "problems.jsonl:1: bad JSON: duplicate object key");
	problems_bad("{\"task_id\":\"\",\"prompt\":\"p\",\"test\":\"t\"}\n", "\"task_id\" is empty");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"p\\u0000\",\"test\":\"t\"}\n", "NUL");
	problems_bad(P1 P2 P1, "problems.jsonl:3: task_id \"T/0\" is already on line 1");
	problems_bad(P1 "{\"task_id\":\"a\",\"prompt\":\"p\",\"test\":\"t\",\"limits\":{\"time\":\"soon\"}}\n",
		     "problems.jsonl:2: limit \"time\"");
	problems_bad("{\"task_id\":\"a\",\"prompt\":\"p\",\"test\":\"t\",\"limits\":{\"disk\":1}}\n",
		     "problems.jsonl:1: unknown limit \"disk\"");
	problems_bad("\n\n", "problems.jsonl: no problems");
}

static void test_samples(void **state)
{
	(void)state;
	_cleanup_eval_problems_ moat_eval_problems *p = problems_ok(P1 P2);
	moat_error err = {0};
	moat_eval_samples *s = NULL;
	const char *text = "{\"task_id\":\"T/1\",\"completion\":\"    return 1\\n\"}\n"
			   "{\"task_id\":\"T/0\",\"solution\":\"def f(x):\\n    return x+1\\n\",\"score\":3}\n"
			   "{\"task_id\":\"T/1\",\"completion\":\"    return 1\\n\"}\n";
	assert_int_equal(moat_eval_samples_parse("samples.jsonl", text, strlen(text), p, &s, &err), 0);
	assert_int_equal(s->n, 3);
	assert_int_equal(s->v[0].problem, 1);
	assert_false(s->v[0].is_solution);
	assert_int_equal(s->v[1].problem, 0);
	assert_true(s->v[1].is_solution);
	assert_int_equal(s->v[2].line, 3);
	moat_eval_samples_free(s);

	samples_bad(p, "{\"task_id\":\"T/0\",\"completion\":\"x\"}\n{\"task_id\":\"T/9\",\"completion\":\"x\"}\n",
		    "samples.jsonl:2: unknown task_id \"T/9\"");
	samples_bad(p, "{\"task_id\":\"T/0\"}\n", "samples.jsonl:1: missing \"completion\" (or \"solution\")");
	samples_bad(p, "{\"completion\":\"x\"}\n", "samples.jsonl:1: missing \"task_id\"");
	samples_bad(p, "{\"task_id\":\"T/0\",\"completion\":\"x\",\"solution\":\"y\"}\n", "both \"completion\" and \"solution\"");
	samples_bad(p, "{\"task_id\":\"T/0\",\"completion\":\"x\",\"completion\":\"y\"}\n",
		    "samples.jsonl:1: bad JSON: duplicate object key");
	samples_bad(p, "{\"task_id\":\"T/0\",\"completion\":[]}\n", "\"completion\" is not a string");
	samples_bad(p, "{\"task_id\":\"T/0\",\"completion\":\"x\"}\n{nope}\n", "samples.jsonl:2: bad JSON");
	samples_bad(p, "", "samples.jsonl: no samples");
}

/* A gzip'd problems file reads the same as the plain one; a cut one is an
 * error naming the file. */
static void test_gzip(void **state)
{
	(void)state;
	char path[] = "/tmp/test_eval_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	gzFile gz = gzdopen(dup(fd), "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, P1 P2, (unsigned)strlen(P1 P2)), (int)strlen(P1 P2));
	assert_int_equal(gzclose(gz), Z_OK);
	moat_error err = {0};
	moat_eval_problems *p = NULL;
	assert_int_equal(moat_eval_problems_load(path, &p, &err), 0);
	assert_int_equal(p->n, 2);
	assert_string_equal(p->v[1].task_id, "T/1");
	moat_eval_problems_free(p);

	off_t size = lseek(fd, 0, SEEK_END);
	assert_int_equal(ftruncate(fd, size - 12), 0);
	p = NULL;
	assert_true(moat_eval_problems_load(path, &p, &err) < 0);
	assert_null(p);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "gzip"));
	close(fd);
	unlink(path);
}

static void test_program_and_request(void **state)
{
	(void)state;
	_cleanup_eval_problems_ moat_eval_problems *p = problems_ok(P1);
	moat_eval_sample s = {.problem = 0, .code = (char *)"    return x + 1"};
	size_t n;
	char *code = moat_eval_code(&p->v[0], &s, &n);
	assert_string_equal(code, "def f(x):\n    return x + 1\n");
	assert_int_equal(n, strlen(code));
	size_t rn;
	char *req = moat_eval_request("0123456789abcdef0123456789abcdef", &p->v[0], code, n, &rn);
	assert_string_equal(req, "0123456789abcdef0123456789abcdef\nf\n27\ndef f(x):\n    return x + 1\n"
				 "def check(c):\n    assert c(1) == 2\n");
	assert_int_equal(rn, strlen(req));
	free(req);
	free(code);

	moat_eval_sample sol = {.problem = 0, .code = (char *)"def f(x):\n    return 2\n", .is_solution = true};
	code = moat_eval_code(&p->v[0], &sol, &n);
	assert_string_equal(code, "def f(x):\n    return 2\n");
	free(code);
}

#define NONCE "0123456789abcdef0123456789abcdef"

static void test_report(void **state)
{
	(void)state;
	char d[64];
	const char *out = "hello\nmoat-eval:" NONCE " pass\n";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, d, sizeof(d)), MOAT_EVAL_REPORT_PASS);
	/* Another nonce, a line not ended, text before the tag on the line:
	 * none counts. */
	out = "moat-eval:ffffffffffffffffffffffffffffffff pass\nx moat-eval:" NONCE " pass\nmoat-eval:" NONCE " pass";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, d, sizeof(d)), MOAT_EVAL_REPORT_NONE);
	out = "moat-eval:" NONCE " passed\n";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, d, sizeof(d)), MOAT_EVAL_REPORT_NONE);
	out = "moat-eval:" NONCE " fail AssertionError: bad\tvalue\n";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, d, sizeof(d)), MOAT_EVAL_REPORT_FAIL);
	assert_string_equal(d, "AssertionError: bad value");
	out = "moat-eval:" NONCE " error NameError: name 'y' is not defined\n";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, d, sizeof(d)), MOAT_EVAL_REPORT_ERROR);
	assert_string_equal(d, "NameError: name 'y' is not defined");
	char small[8];
	assert_int_equal(moat_eval_report_parse(out, strlen(out), NONCE, small, sizeof(small)), MOAT_EVAL_REPORT_ERROR);
	assert_string_equal(small, "NameErr");
	/* A nonce that is not the right length never matches. */
	out = "moat-eval:abc pass\n";
	assert_int_equal(moat_eval_report_parse(out, strlen(out), "abc", d, sizeof(d)), MOAT_EVAL_REPORT_NONE);
}

static void test_decide(void **state)
{
	(void)state;
	moat_result r;
	moat_result_init(&r);
	char res[256];
	r.status = MOAT_STATUS_EXITED;
	r.exit_code = 0;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_PASS);
	assert_string_equal(res, "passed");
	/* os._exit(0) before the tests: exit 0, no report. */
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_NONE, "", res, sizeof(res)), MOAT_EVAL_ERROR);
	assert_string_equal(res, "failed: exited with code 0 before the tests finished");
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_FAIL, "", res, sizeof(res)), MOAT_EVAL_FAIL);
	assert_string_equal(res, "failed: AssertionError");
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_ERROR, "ZeroDivisionError: division by zero", res,
					  sizeof(res)),
			 MOAT_EVAL_ERROR);
	assert_string_equal(res, "failed: ZeroDivisionError: division by zero");
	/* A pass whose run did not exit 0 is not trusted; neither is output
	 * beyond what moat keeps. */
	r.exit_code = 3;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_ERROR);
	r.exit_code = 0;
	assert_int_equal(moat_eval_decide(&r, true, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_OUTPUT_LIMIT);
	/* A limit wins over a report printed before it. */
	r.status = MOAT_STATUS_TIMEOUT;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_TIMEOUT);
	assert_string_equal(res, "timed out");
	r.status = MOAT_STATUS_CPU_LIMIT;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_CPU_LIMIT);
	assert_string_equal(res, "timed out");
	r.status = MOAT_STATUS_OOM;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_OOM);
	r.status = MOAT_STATUS_PIDS_LIMIT;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_NONE, "", res, sizeof(res)), MOAT_EVAL_PIDS_LIMIT);
	r.status = MOAT_STATUS_OUTPUT_LIMIT;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_OUTPUT_LIMIT);
	r.status = MOAT_STATUS_SIGNALED;
	r.signal = 9;
	r.exit_code = -1;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_NONE, "", res, sizeof(res)), MOAT_EVAL_ERROR);
	assert_string_equal(res, "failed: killed by signal 9 before the tests finished");
	r.status = MOAT_STATUS_SETUP_ERROR;
	assert_int_equal(moat_eval_decide(&r, false, MOAT_EVAL_REPORT_PASS, "", res, sizeof(res)), MOAT_EVAL_SETUP_ERROR);
}

/* The unbiased estimator against values worked out by hand from
 * 1 - C(n-c, k) / C(n, k). */
static void test_pass_at_k(void **state)
{
	(void)state;
	assert_float_equal(moat_eval_pass_at_k(10, 0, 1), 0.0, 1e-12);
	assert_float_equal(moat_eval_pass_at_k(10, 10, 1), 1.0, 1e-12);
	assert_float_equal(moat_eval_pass_at_k(10, 3, 1), 0.3, 1e-12);
	/* 1 - C(3,2)/C(5,2) = 1 - 3/10 */
	assert_float_equal(moat_eval_pass_at_k(5, 2, 2), 0.7, 1e-12);
	/* 1 - C(7,5)/C(10,5) = 1 - 21/252 */
	assert_float_equal(moat_eval_pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-12);
	/* 1 - C(3,3)/C(4,3) = 1 - 1/4 */
	assert_float_equal(moat_eval_pass_at_k(4, 1, 3), 0.75, 1e-12);
	/* 1 - C(199,100)/C(200,100) = 1 - 100/200: no overflow at n=200. */
	assert_float_equal(moat_eval_pass_at_k(200, 1, 100), 0.5, 1e-9);
	/* n - c < k: every draw of k holds a pass. */
	assert_float_equal(moat_eval_pass_at_k(5, 4, 2), 1.0, 1e-12);
	/* 1 - C(8,2)/C(10,2) = 1 - 28/45 */
	assert_float_equal(moat_eval_pass_at_k(10, 2, 2), 17.0 / 45.0, 1e-12);
	assert_float_equal(moat_eval_pass_at_k(3, 1, 4), 0.0, 1e-12);
}

static void test_parse_ks(void **state)
{
	(void)state;
	unsigned ks[MOAT_EVAL_MAX_KS];
	moat_error err = {0};
	assert_int_equal(moat_eval_parse_ks("100,1,10", ks, MOAT_EVAL_MAX_KS, &err), 3);
	assert_int_equal(ks[0], 1);
	assert_int_equal(ks[1], 10);
	assert_int_equal(ks[2], 100);
	assert_true(moat_eval_parse_ks("1,1", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_non_null(strstr(err.msg, "given twice"));
	assert_true(moat_eval_parse_ks("0", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("1,", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("1;2", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("-1", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("1000001", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("", ks, MOAT_EVAL_MAX_KS, &err) < 0);
	assert_true(moat_eval_parse_ks("1,2,3", ks, 2, &err) < 0);
}

static void test_result_and_summary(void **state)
{
	(void)state;
	_cleanup_eval_problems_ moat_eval_problems *p = problems_ok(P1 P2);
	moat_eval_sample s = {.problem = 1, .code = (char *)"    return 1\n", .line = 4};
	moat_result r;
	moat_result_init(&r);
	r.status = MOAT_STATUS_EXITED;
	r.exit_code = 0;
	r.wall_ms = 12;
	char *line = moat_eval_result_json(p, &s, 3, MOAT_EVAL_PASS, "passed", &r);
	json_t *o = json_loads(line, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "task_id")), "T/1");
	assert_string_equal(json_string_value(json_object_get(o, "completion")), "    return 1\n");
	assert_true(json_is_true(json_object_get(o, "passed")));
	assert_string_equal(json_string_value(json_object_get(o, "result")), "passed");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "pass");
	assert_int_equal(json_integer_value(json_object_get(o, "sample")), 3);
	assert_int_equal(json_integer_value(json_object_get(o, "wall_ms")), 12);
	assert_null(json_object_get(o, "isolation"));
	json_decref(o);
	free(line);

	/* T/0: 4 samples, 1 passes; T/1: 4 samples, 2 pass. */
	moat_eval_totals t;
	assert_int_equal(moat_eval_totals_init(&t, p->n), 0);
	moat_eval_sample a = {.problem = 0}, b = {.problem = 1};
	moat_eval_totals_add(&t, &a, MOAT_EVAL_PASS);
	moat_eval_totals_add(&t, &a, MOAT_EVAL_FAIL);
	moat_eval_totals_add(&t, &a, MOAT_EVAL_TIMEOUT);
	moat_eval_totals_add(&t, &a, MOAT_EVAL_FAIL);
	moat_eval_totals_add(&t, &b, MOAT_EVAL_PASS);
	moat_eval_totals_add(&t, &b, MOAT_EVAL_PASS);
	moat_eval_totals_add(&t, &b, MOAT_EVAL_ERROR);
	moat_eval_totals_add(&t, &b, MOAT_EVAL_FAIL);
	unsigned ks[] = {1, 2, 10};
	char *sum = moat_eval_summary_json(&t, ks, 3);
	o = json_loads(sum, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "samples")), 8);
	assert_int_equal(json_integer_value(json_object_get(o, "passed")), 3);
	assert_int_equal(json_integer_value(json_object_get(o, "tasks")), 2);
	json_t *pk = json_object_get(o, "pass@k");
	/* pass@1: (1/4 + 2/4) / 2; pass@2: ((1 - C(3,2)/C(4,2)) + (1 - C(2,2)/C(4,2))) / 2
	 * = (1/2 + 5/6) / 2; pass@10: more than the 4 samples, left out. */
	assert_float_equal(json_real_value(json_object_get(pk, "pass@1")), 0.375, 1e-12);
	assert_float_equal(json_real_value(json_object_get(pk, "pass@2")), (0.5 + 5.0 / 6.0) / 2, 1e-12);
	assert_null(json_object_get(pk, "pass@10"));
	json_t *v = json_object_get(o, "verdicts");
	assert_int_equal(json_integer_value(json_object_get(v, "pass")), 3);
	assert_int_equal(json_integer_value(json_object_get(v, "fail")), 3);
	assert_int_equal(json_integer_value(json_object_get(v, "timeout")), 1);
	assert_int_equal(json_integer_value(json_object_get(v, "error")), 1);
	assert_null(json_object_get(v, "oom"));
	/* All 8 ran cold: the summary says so, and why. */
	assert_int_equal(json_integer_value(json_object_get(o, "warm_samples")), 0);
	assert_null(json_object_get(o, "cold_reason"));
	json_decref(o);
	free(sum);
	t.warm_samples = 6;
	t.cold_reason = "not Python";
	sum = moat_eval_summary_json(&t, ks, 3);
	o = json_loads(sum, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(o, "warm_samples")), 6);
	assert_string_equal(json_string_value(json_object_get(o, "cold_reason")), "not Python");
	json_decref(o);
	free(sum);
	t.warm_samples = 8;
	sum = moat_eval_summary_json(&t, ks, 3);
	o = json_loads(sum, 0, NULL);
	assert_null(json_object_get(o, "cold_reason"));
	json_decref(o);
	free(sum);
	moat_eval_totals_done(&t);
}

/* What keeps every sample of a configuration off the warm path: a place a
 * sample could write that the interpreter does not clear between samples,
 * a network, the file trail, or MOAT_EVAL_WARM=0. */
static void test_warm_refusal(void **state)
{
	(void)state;
	moat_config c;
	memset(&c, 0, sizeof(c));
	unsetenv("MOAT_EVAL_WARM");
	assert_null(moat__eval_warm_refusal(&c));
	setenv("MOAT_EVAL_WARM", "0", 1);
	assert_string_equal(moat__eval_warm_refusal(&c), "MOAT_EVAL_WARM=0");
	setenv("MOAT_EVAL_WARM", "1", 1);
	assert_null(moat__eval_warm_refusal(&c));
	unsetenv("MOAT_EVAL_WARM");
	moat_bind binds[2] = {{.src = "/a", .dst = "/a", .flags = 0}, {.src = "/b", .dst = "/b", .flags = MOAT_BIND_RW}};
	c.binds = binds;
	c.n_binds = 1;
	assert_null(moat__eval_warm_refusal(&c));
	c.n_binds = 2;
	assert_non_null(moat__eval_warm_refusal(&c));
	c.n_binds = 0;
	c.out_dir = "/out";
	assert_non_null(moat__eval_warm_refusal(&c));
	c.out_dir = NULL;
	c.audit_files = true;
	assert_non_null(moat__eval_warm_refusal(&c));
	c.audit_files = false;
	c.net = MOAT_NET_PROXY;
	assert_non_null(moat__eval_warm_refusal(&c));
}

/* A cgroup.procs of any length: its pids exactly, or -E2BIG for more than
 * the caller takes, never an error about the file's size. */
static void test_read_procs(void **state)
{
	(void)state;
	char path[] = "/tmp/moat-test-procs-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("1\n4194304\n77\n", f);
	fflush(f);
	pid_t p[12];
	size_t n = 99;
	assert_int_equal(moat__eval_read_procs(path, p, 12, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[1], 4194304);
	assert_int_equal(moat__eval_read_procs(path, p, 2, &n), -E2BIG);
	/* 700 pids of 7 digits: 5600 bytes, more than a page. */
	for (int i = 0; i < 700; i++)
		fprintf(f, "%d\n", 1000000 + i);
	fflush(f);
	assert_int_equal(moat__eval_read_procs(path, p, 12, &n), -E2BIG);
	/* 12 pids of 7 digits fill the list exactly. */
	assert_int_equal(ftruncate(fd, 0), 0);
	rewind(f);
	for (int i = 0; i < 12; i++)
		fprintf(f, "%d\n", 4000000 + i);
	fflush(f);
	assert_int_equal(moat__eval_read_procs(path, p, 12, &n), 0);
	assert_int_equal(n, 12);
	assert_int_equal(p[11], 4000011);
	fclose(f);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_problems_layouts),
		cmocka_unit_test(test_problems_errors),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_program_and_request),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_pass_at_k),
		cmocka_unit_test(test_parse_ks),
		cmocka_unit_test(test_result_and_summary),
		cmocka_unit_test(test_warm_refusal),
		cmocka_unit_test(test_read_procs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
