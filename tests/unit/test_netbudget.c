/* Unit tests: egress budgets (connections, request rate, bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "netbudget.h"

#define SEC 1000000000ull

static void test_conns(void **state)
{
	(void)state;
	moat_budget_limits run = { .max_conns = 3 }, dest = { .max_conns = 2 };
	moat_budget *b = moat_budget_new(&run, &dest);
	char why[MOAT_BUDGET_REASON_MAX];
	moat_budget_usage u;
	assert_non_null(b);
	assert_true(moat_budget_conn_open(b, "a.test:443", why, sizeof(why)));
	assert_true(moat_budget_conn_open(b, "a.test:443", why, sizeof(why)));
	assert_false(moat_budget_conn_open(b, "a.test:443", why, sizeof(why)));
	assert_non_null(strstr(why, "a.test:443 already has 2 open connections"));
	assert_true(moat_budget_conn_open(b, "b.test:443", why, sizeof(why)));
	assert_false(moat_budget_conn_open(b, "c.test:443", why, sizeof(why)));
	assert_non_null(strstr(why, "this sandbox already has 3"));
	/* A refusal counted nothing. */
	assert_true(moat_budget_usage_get(b, NULL, &u));
	assert_int_equal(u.conns, 3);
	moat_budget_conn_close(b, "a.test:443");
	assert_true(moat_budget_conn_open(b, "c.test:443", why, sizeof(why)));
	assert_true(moat_budget_usage_get(b, "a.test:443", &u));
	assert_int_equal(u.conns, 1);
	/* Closing what was never opened changes nothing. */
	moat_budget_conn_close(b, "never.test:443");
	moat_budget_conn_close(b, "b.test:443");
	moat_budget_conn_close(b, "b.test:443");
	assert_true(moat_budget_usage_get(b, NULL, &u));
	assert_int_equal(u.conns, 2);
	assert_false(moat_budget_usage_get(b, "never.test:443", &u));
	moat_budget_free(b);
}

static void test_rate(void **state)
{
	(void)state;
	moat_budget_limits run = { .requests_per_minute = 100 }, dest = { .requests_per_minute = 60 };
	moat_budget *b = moat_budget_new(&run, &dest);
	char why[MOAT_BUDGET_REASON_MAX];
	moat_budget_usage u;
	uint64_t t = 1000 * SEC;
	/* The burst is one minute's worth. */
	for (int i = 0; i < 60; i++)
		assert_true(moat_budget_request(b, "a.test:443", t, why, sizeof(why)));
	assert_false(moat_budget_request(b, "a.test:443", t, why, sizeof(why)));
	assert_non_null(strstr(why, "a.test:443 is over its rate of 60 requests per minute"));
	/* One second later exactly one more token is there. */
	assert_true(moat_budget_request(b, "a.test:443", t + SEC, why, sizeof(why)));
	assert_false(moat_budget_request(b, "a.test:443", t + SEC, why, sizeof(why)));
	/* The run's own bucket: 100 per minute over all destinations. It held
	 * 100, lost 61 and regained 100/60 in that second: 40 more go to
	 * b.test, then the run is out. */
	for (int i = 0; i < 40; i++)
		assert_true(moat_budget_request(b, "b.test:443", t + SEC, why, sizeof(why)));
	assert_false(moat_budget_request(b, "b.test:443", t + SEC, why, sizeof(why)));
	assert_non_null(strstr(why, "this sandbox is over its rate of 100"));
	/* A clock that steps back refills nothing and breaks nothing. */
	assert_false(moat_budget_request(b, "b.test:443", t, why, sizeof(why)));
	/* After a long pause the buckets are full again, never fuller. */
	uint64_t later = t + 3600 * SEC;
	for (int i = 0; i < 60; i++)
		assert_true(moat_budget_request(b, "c.test:443", later, why, sizeof(why)));
	assert_false(moat_budget_request(b, "c.test:443", later, why, sizeof(why)));
	assert_true(moat_budget_usage_get(b, "a.test:443", &u));
	assert_int_equal(u.requests, 61);
	assert_true(moat_budget_usage_get(b, NULL, &u));
	assert_int_equal(u.requests, 61 + 40 + 60);
	moat_budget_free(b);

	/* Unlimited: no bucket at all. */
	b = moat_budget_new(NULL, NULL);
	for (int i = 0; i < 10000; i++)
		assert_true(moat_budget_request(b, "a.test:443", 0, why, sizeof(why)));
	moat_budget_free(b);
}

static void test_bytes(void **state)
{
	(void)state;
	moat_budget_limits run = { .max_bytes_up = 1000, .max_bytes_down = 5000 },
			   dest = { .max_bytes_down = 3000 };
	moat_budget *b = moat_budget_new(&run, &dest);
	char why[MOAT_BUDGET_REASON_MAX];
	moat_budget_usage u;
	assert_true(moat_budget_bytes(b, "a.test:443", 600, 2000, why, sizeof(why)));
	assert_false(moat_budget_bytes(b, "a.test:443", 401, 0, why, sizeof(why)));
	assert_non_null(strstr(why, "upload budget"));
	assert_true(moat_budget_bytes(b, "a.test:443", 400, 0, why, sizeof(why)));
	assert_false(moat_budget_bytes(b, "a.test:443", 1, 0, why, sizeof(why)));
	assert_false(moat_budget_bytes(b, "a.test:443", 0, 1001, why, sizeof(why)));
	assert_non_null(strstr(why, "a.test:443: download budget of 3000 bytes per destination"));
	assert_true(moat_budget_bytes(b, "a.test:443", 0, 1000, why, sizeof(why)));
	assert_true(moat_budget_bytes(b, "b.test:443", 0, 2000, why, sizeof(why)));
	assert_false(moat_budget_bytes(b, "c.test:443", 0, 1, why, sizeof(why)));
	assert_non_null(strstr(why, "download budget"));
	/* Overflow-sized counts are refused, not wrapped. */
	assert_false(moat_budget_bytes(b, "b.test:443", UINT64_MAX, 0, why, sizeof(why)));
	assert_true(moat_budget_usage_get(b, NULL, &u));
	assert_int_equal(u.bytes_up, 1000);
	assert_int_equal(u.bytes_down, 5000);
	moat_budget_free(b);
}

static void test_many_dests(void **state)
{
	(void)state;
	moat_budget *b = moat_budget_new(NULL, NULL);
	char why[MOAT_BUDGET_REASON_MAX], key[64];
	for (int i = 0; i < MOAT_BUDGET_MAX_DESTS; i++) {
		snprintf(key, sizeof(key), "h%d.test:443", i);
		assert_true(moat_budget_conn_open(b, key, why, sizeof(why)));
	}
	assert_false(moat_budget_conn_open(b, "one-more.test:443", why, sizeof(why)));
	assert_non_null(strstr(why, "distinct network destinations"));
	/* Known destinations still work. */
	assert_true(moat_budget_conn_open(b, "h7.test:443", why, sizeof(why)));
	char long_key[MOAT_BUDGET_DEST_MAX + 10];
	memset(long_key, 'x', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	assert_false(moat_budget_request(b, long_key, 0, why, sizeof(why)));
	assert_false(moat_budget_bytes(b, NULL, 1, 1, why, sizeof(why)));
	moat_budget_free(b);
	moat_budget_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conns),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_many_dests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
