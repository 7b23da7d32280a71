/* Fuzz target: the judge's cases file and harness reply parsers. Every
 * input that parses holds the caps, every case matches its own expected
 * output in every comparison mode, a reply built the way the harness builds
 * it reads back whole, and a failure says why. */
#include "fuzz.h"

#include <string.h>

#include "judge.h"

#define NONCE "0123456789abcdef0123456789abcdef"

static void check_case(const moat_judge_case *c)
{
	char why[256];
	FUZZ_CHECK(c->name && strlen(c->name) <= MOAT_JUDGE_MAX_NAME);
	for (int m = 0; m < _MOAT_JUDGE_COMPARE_MAX; m++) {
		/* A value always equals itself. */
		if (c->is_call)
			FUZZ_CHECK(moat_judge_compare_json((moat_judge_compare)m, c->tolerance, c->expected,
							   c->expected, why, sizeof(why)));
		else
			FUZZ_CHECK(moat_judge_compare_text((moat_judge_compare)m, c->tolerance, c->expected_stdout,
							   c->expected_len, c->expected_stdout, c->expected_len, why,
							   sizeof(why)));
	}
	if (c->is_call) {
		_cleanup_free_ char *req = moat_judge_call_request(c, NONCE, NULL);
		FUZZ_CHECK(req);
		/* A reply built the way the harness builds it is read back whole. */
		_cleanup_free_ char *value = json_dumps(c->expected, JSON_COMPACT | JSON_ENCODE_ANY);
		_cleanup_free_ char *line = NULL;
		FUZZ_CHECK(value && asprintf(&line, "noise\nmoat-result:%s {\"value\":%s}\n", NONCE, value) >= 0);
		moat_judge_reply r;
		moat_judge_reply_parse(line, strlen(line), NONCE, &r);
		/* A value that itself holds the nonce reads as a second tag, as it
		 * must: only a submission that found the nonce can return one. */
		bool tagged_twice = strstr(value, NONCE) != NULL;
		FUZZ_CHECK(tagged_twice ? r.kind == MOAT_JUDGE_REPLY_INVALID
					: (r.kind == MOAT_JUDGE_REPLY_VALUE && json_equal(r.value, c->expected)));
		moat_judge_reply_done(&r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = {0};
	moat_judge_suite *s = NULL;
	if (moat_judge_suite_parse((const char *)data, size, "fuzz", &s, &err) < 0) {
		/* Every failure says why, and returns nothing. */
		FUZZ_CHECK(err.code != 0 && err.msg[0] && !s);
	} else {
		FUZZ_CHECK(s->n_cases > 0 && s->n_cases <= MOAT_JUDGE_MAX_CASES);
		for (size_t i = 0; i < s->n_cases; i++)
			check_case(&s->cases[i]);
		moat_judge_suite_free(s);
	}
	/* The same bytes as harness output must never crash the reader. */
	moat_judge_reply r;
	moat_judge_reply_parse((const char *)data, size, NONCE, &r);
	FUZZ_CHECK(r.kind >= 0 && r.kind < _MOAT_JUDGE_REPLY_MAX);
	FUZZ_CHECK((r.kind == MOAT_JUDGE_REPLY_VALUE) == (r.value != NULL));
	moat_judge_reply_done(&r);
	return 0;
}
