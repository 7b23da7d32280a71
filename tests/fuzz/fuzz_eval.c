/* Fuzz target: moat eval's problems and samples parsers and the harness
 * report reader. Every input that parses holds the caps and finds each of
 * its problems by task_id; the same bytes read as samples against the
 * fixture's problems never crash; a report built the way the harness builds
 * it reads back; a failure says why. */
#include "fuzz.h"

#include <string.h>

#include "eval.h"

#define NONCE "0123456789abcdef0123456789abcdef"

static const char fixed_problems[] =
	"{\"task_id\":\"a\",\"prompt\":\"def f():\\n\",\"test\":\"def check(c):\\n    pass\\n\",\"entry_point\":\"f\"}\n"
	"{\"task_id\":\"fixture/add\",\"prompt\":\"p\",\"test\":\"t\"}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = {0};
	moat_eval_problems *p = NULL;
	if (moat_eval_problems_parse("fuzz", (const char *)data, size, &p, &err) < 0) {
		FUZZ_CHECK(err.code != 0 && err.msg[0] && !p);
	} else {
		FUZZ_CHECK(p->n > 0 && p->n <= MOAT_EVAL_MAX_PROBLEMS);
		for (size_t i = 0; i < p->n; i++) {
			FUZZ_CHECK(p->v[i].task_id && strlen(p->v[i].task_id) <= MOAT_EVAL_MAX_TASK_ID);
			FUZZ_CHECK(moat_eval_problems_find(p, p->v[i].task_id) == (ssize_t)i);
			moat_eval_sample s = {.problem = i, .code = (char *)"x"};
			size_t n, rn;
			_cleanup_free_ char *code = moat_eval_code(&p->v[i], &s, &n);
			_cleanup_free_ char *req = code ? moat_eval_request(NONCE, &p->v[i], code, n, &rn) : NULL;
			FUZZ_CHECK(req && rn > n);
		}
		moat_eval_problems_free(p);
	}

	moat_eval_problems *fixed = NULL;
	FUZZ_CHECK(moat_eval_problems_parse("fixed", fixed_problems, strlen(fixed_problems), &fixed, &err) == 0);
	moat_eval_samples *s = NULL;
	if (moat_eval_samples_parse("fuzz", (const char *)data, size, fixed, &s, &err) < 0) {
		FUZZ_CHECK(err.code != 0 && err.msg[0] && !s);
	} else {
		for (size_t i = 0; i < s->n; i++)
			FUZZ_CHECK(s->v[i].problem < fixed->n && s->v[i].code);
		moat_eval_samples_free(s);
	}
	moat_eval_problems_free(fixed);

	char detail[MOAT_EVAL_DETAIL_MAX];
	moat_eval_report r = moat_eval_report_parse((const char *)data, size, NONCE, detail, sizeof(detail));
	FUZZ_CHECK(r >= MOAT_EVAL_REPORT_NONE && r <= MOAT_EVAL_REPORT_COMPILE && strlen(detail) < sizeof(detail));
	/* A report written after the bytes, as the harness writes it, wins. */
	_cleanup_free_ char *out = malloc(size + 64);
	FUZZ_CHECK(out);
	memcpy(out, data, size);
	int k = snprintf(out + size, 64, "\n" MOAT_EVAL_REPORT_PREFIX "%s pass\n", NONCE);
	FUZZ_CHECK(moat_eval_report_parse(out, size + (size_t)k, NONCE, detail, sizeof(detail)) == MOAT_EVAL_REPORT_PASS);
	return 0;
}
