/* moatd's warm pool, its pure half (src/moatd/poolplan.c): the `pool:`
 * configuration with its errors naming the field, and which run requests a
 * pooled sandbox may serve (only what is set per command may differ from
 * the profile; anything else gets a cold sandbox). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <string.h>

#include "moatd.h"

static int parse(const char *yaml, moatd_config *c, moat_error *err)
{
	moatd_config_init(c);
	memset(err, 0, sizeof(*err));
	return moatd_config_parse(yaml, strlen(yaml), c, err);
}

static void test_conf(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err;
	assert_int_equal(parse("pool: {code: 8, agent: 2}\n", &c, &err), 0);
	assert_int_equal(c.pool.n, 2);
	assert_string_equal(c.pool.e[0].profile, "code");
	assert_int_equal(c.pool.e[0].size, 8);
	assert_int_equal(c.pool.e[0].wall_ms, 10000); /* the code profile's wall */
	assert_int_equal(c.pool.e[0].output_bytes, 1u << 20);
	assert_string_equal(c.pool.e[1].profile, "agent");
	assert_int_equal(c.pool.e[1].size, 2);
	moatd_config_done(&c);

	assert_int_equal(parse("pool: {code: 0}\n", &c, &err), 0);
	moatd_config_done(&c);

	/* Each bad value is one error naming the field. */
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{"pool: {cod: 2}\n", "pool.cod: unknown profile 'cod'"},
		{"pool: {code: 65}\n", "pool.code: expected a count from 0 to 64"},
		{"pool: {code: -1}\n", "pool.code: expected a count from 0 to 64"},
		{"pool: {code: two}\n", "pool.code: expected a count from 0 to 64"},
		{"pool: {code: 1.5}\n", "pool.code: expected a count from 0 to 64"},
		{"pool: [code]\n", "pool: expected a mapping"},
		{"pool: 8\n", "pool: expected a mapping"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].yaml, &c, &err), -MOAT_EINPUT);
		if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
			fail_msg("%s: '%s', expected '%s...'", bad[i].yaml, err.msg, bad[i].msg);
		moatd_config_done(&c);
	}
}

static void test_plan(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err;
	assert_int_equal(parse("pool: {code: 2, agent: 0}\n", &c, &err), 0);
	moatd_pool_plan p;

	/* The profile alone, or with what is set per command. */
	char *none[] = {NULL};
	assert_true(moatd_pool_plan_run(&c.pool, none, false, 0, &p));
	assert_int_equal(p.profile, 0);
	assert_int_equal(p.time_ms, 10000);
	assert_int_equal(p.output_bytes, 1u << 20);
	assert_null(p.cwd);
	assert_int_equal(p.n_env, 0);
	char *some[] = {"--profile=code", "--env=A=1", "--env=B=x=y", "--cwd=/tmp", "--time=3s", NULL};
	assert_true(moatd_pool_plan_run(&c.pool, some, false, 0, &p));
	assert_int_equal(p.time_ms, 3000);
	assert_string_equal(p.cwd, "/tmp");
	assert_int_equal(p.n_env, 2);
	assert_string_equal(p.env[0], "A=1");
	assert_string_equal(p.env[1], "B=x=y");
	assert_null(p.env[2]);

	/* What a sandbox is made with cannot be narrowed after: cold. */
	static const struct {
		const char *opt, *why;
	} cold[] = {
		{"--mem=100M", "limits"}, {"--pids=8", "limits"}, {"--cpu=1s", "limits"}, {"--output=10", "limits"},
		{"--tmp-size=1M", "limits"}, {"--files=10", "limits"}, {"--cpus=0.5", "limits"},
		{"--time=0", "limits"}, {"--time=x", "limits"}, {"--allow-host=example.com", "options"},
		{"--env=HOME", "env"}, {"--profile=agent", "profile"}, {"--profile=nope", "profile"},
	};
	for (size_t i = 0; i < sizeof(cold) / sizeof(cold[0]); i++) {
		char *o[] = {(char *)cold[i].opt, NULL};
		assert_false(moatd_pool_plan_run(&c.pool, o, false, 0, &p));
		if (strcmp(p.why_cold, cold[i].why) != 0)
			fail_msg("%s: cold for '%s', expected '%s'", cold[i].opt, p.why_cold, cold[i].why);
		assert_int_equal(p.profile, -1);
	}
	assert_false(moatd_pool_plan_run(&c.pool, none, true, 0, &p));
	assert_string_equal(p.why_cold, "policy");
	assert_false(moatd_pool_plan_run(&c.pool, none, false, 1, &p));
	assert_string_equal(p.why_cold, "files");

	/* More variables than a plan holds: cold, never cut. */
	char *many[80];
	for (size_t i = 0; i < 79; i++)
		many[i] = "--env=A=1";
	many[79] = NULL;
	assert_false(moatd_pool_plan_run(&c.pool, many, false, 0, &p));
	assert_string_equal(p.why_cold, "env");
	moatd_config_done(&c);

	/* Without a pool, nothing is pooled. */
	moatd_config_init(&c);
	assert_false(moatd_pool_plan_run(&c.pool, none, false, 0, &p));
	assert_string_equal(p.why_cold, "profile");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
