/* Unit tests: config parsing helpers (bind specs, env specs, path rules). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"
#include "units.h"

static void test_clean_absolute(void **state)
{
	(void)state;
	assert_true(moat_path_is_clean_absolute("/"));
	assert_true(moat_path_is_clean_absolute("/data"));
	assert_true(moat_path_is_clean_absolute("/a/b/c"));
	assert_true(moat_path_is_clean_absolute("/a/b/"));
	assert_false(moat_path_is_clean_absolute("a/b"));
	assert_false(moat_path_is_clean_absolute(""));
	assert_false(moat_path_is_clean_absolute("/a/../b"));
	assert_false(moat_path_is_clean_absolute("/a/./b"));
	assert_false(moat_path_is_clean_absolute("/a//b"));
	assert_false(moat_path_is_clean_absolute("/.."));
	assert_true(moat_path_is_clean_absolute("/..."));
	assert_true(moat_path_is_clean_absolute("/.hidden"));
}

static void test_reserved(void **state)
{
	(void)state;
	assert_true(moat_path_is_reserved_target("/"));
	assert_true(moat_path_is_reserved_target("/proc"));
	assert_true(moat_path_is_reserved_target("/proc/sys"));
	assert_true(moat_path_is_reserved_target("/dev"));
	assert_true(moat_path_is_reserved_target("/dev/shm"));
	assert_true(moat_path_is_reserved_target("/sys"));
	assert_false(moat_path_is_reserved_target("/process"));
	assert_false(moat_path_is_reserved_target("/devices"));
	assert_false(moat_path_is_reserved_target("/data"));
}

static void test_bind_spec(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_config_ moat_config *c = moat_config_new();
	assert_int_equal(moat_config_add_bind_spec(c, "/usr/share", 0, &err), 0);
	assert_string_equal(c->binds[0].src, "/usr/share");
	assert_string_equal(c->binds[0].dst, "/usr/share");
	assert_int_equal(moat_config_add_bind_spec(c, "/srv/data/:/data", MOAT_BIND_RW, &err), 0);
	assert_string_equal(c->binds[1].src, "/srv/data");
	assert_string_equal(c->binds[1].dst, "/data");
	assert_int_equal(c->binds[1].flags, MOAT_BIND_RW);
	assert_true(moat_config_add_bind_spec(c, "/a:/b:/c", 0, &err) < 0);
	assert_non_null(strstr(err.msg, "more than one"));
	assert_true(moat_config_add_bind_spec(c, ":/b", 0, &err) < 0);
}

static void test_validate_binds(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_config_ moat_config *c = moat_config_new();
	assert_int_equal(moat__strv_push(&c->argv, "true"), 0);
	assert_int_equal(moat_config_validate(c, &err), 0);

	assert_int_equal(moat_config_add_bind_spec(c, "/usr:/proc", 0, &err), 0);
	assert_true(moat_config_validate(c, &err) < 0);
	assert_non_null(strstr(err.msg, "/proc"));
	c->n_binds = 0;
	free(c->binds[0].src);
	free(c->binds[0].dst);

	assert_int_equal(moat_config_add_bind_spec(c, "usr:/x", 0, &err), 0);
	assert_true(moat_config_validate(c, &err) < 0);
	assert_non_null(strstr(err.msg, "absolute"));
	free(c->binds[0].src);
	free(c->binds[0].dst);
	c->n_binds = 0;

	assert_int_equal(moat_config_add_bind_spec(c, "/nonexistent-moat-test:/x", 0, &err), 0);
	assert_true(moat_config_validate(c, &err) < 0);
	assert_int_equal(err.code, ENOENT);
}

static void test_env(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_config_ moat_config *c = moat_config_new();
	assert_int_equal(moat_config_add_env(c, "FOO=bar=baz", &err), 0);
	assert_string_equal(c->env[0], "FOO=bar=baz");
	/* The library never reads the caller's environment: a bare name is
	 * refused, whether or not it is set here. */
	setenv("MOAT_TEST_PASS", "v", 1);
	assert_true(moat_config_add_env(c, "MOAT_TEST_PASS", &err) < 0);
	assert_string_equal(err.msg, "env: 'MOAT_TEST_PASS' has no value (expected NAME=VALUE)");
	assert_null(c->env[1]);
	assert_true(moat_config_add_env(c, "=x", &err) < 0);
	assert_true(moat_config_add_env(c, "1A=x", &err) < 0);
	assert_string_equal(err.msg, "env: '1A' is not a variable name (expected letters, digits and '_')");
	assert_true(moat_config_add_env(c, "A-B=x", &err) < 0);
}

/* Every limit has one range, with a message naming the field (never a
 * command-line flag) and the bound; unlimited always passes. */
static void expect_range_error(size_t off, uint64_t v, const char *want)
{
	moat_error err = {0};
	assert_true(moat_limit_check(off, v, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (!strstr(err.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
	if (strstr(err.msg, "--"))
		fail_msg("message \"%s\" names a flag", err.msg);
}

/* One form per value, wherever it is shown: a message, `policy show`
 * (hence the effective policy's hash) and `policy explain` agree. */
static void test_format_limit(void **state)
{
	(void)state;
	char buf[48];
	moat_format_limit(MOAT_UNIT_CPUS, 1000, buf, sizeof(buf));
	assert_string_equal(buf, "1.0");
	moat_format_limit(MOAT_UNIT_CPUS, 1500, buf, sizeof(buf));
	assert_string_equal(buf, "1.500");
	moat_format_limit(MOAT_UNIT_CPUS, 250, buf, sizeof(buf));
	assert_string_equal(buf, "0.250");
	moat_format_limit(MOAT_UNIT_SIZE, 256ull << 20, buf, sizeof(buf));
	assert_string_equal(buf, "256M");
	moat_format_limit(MOAT_UNIT_DURATION, 1500, buf, sizeof(buf));
	assert_string_equal(buf, "1500ms");
	moat_format_limit(MOAT_UNIT_COUNT, 64, buf, sizeof(buf));
	assert_string_equal(buf, "64");
	moat_format_limit(MOAT_UNIT_COUNT, MOAT_UNLIMITED, buf, sizeof(buf));
	assert_string_equal(buf, "unlimited");
	/* The message of a CPU limit out of range shows the value as
	 * `policy show` writes it. */
	moat_error err = {0};
	assert_true(moat_limit_check(offsetof(moat_limits, cpus_milli), 1000001, &err) < 0);
	assert_non_null(strstr(err.msg, "1000.001 is too large (at most 1000.0"));
}

static void test_limit_ranges(void **state)
{
	(void)state;
	moat_error err = {0};
	expect_range_error(offsetof(moat_limits, cpu_ms), 18446744073709551000ull,
			   "limits.cpu_time: 18446744073709551s is too large (at most 8760h");
	expect_range_error(offsetof(moat_limits, memory_bytes), 16000000ull << 40,
			   "limits.memory: 16000000T is too large (at most 1024T");
	expect_range_error(offsetof(moat_limits, pids), 4194305,
			   "limits.pids: 4194305 is too large (at most 4194304, the kernel's limit");
	expect_range_error(offsetof(moat_limits, files), 99999999999ull, "limits.files: 99999999999");
	expect_range_error(offsetof(moat_limits, files), 7, "7 is too small (at least 8");
	expect_range_error(offsetof(moat_limits, wall_ms), 0, "limits.wall: 0s is too small");
	expect_range_error(offsetof(moat_limits, cpus_milli), 5000000, "limits.cpu: 5000.0 is too large (at most 1000.0");
	expect_range_error(offsetof(moat_limits, memory_bytes), 1000, "at least 1M");
	expect_range_error(offsetof(moat_limits, cpus_milli), 0, "0.0 is too small (at least 0.001");
	/* At the bounds, and unlimited. */
	assert_int_equal(moat_limit_check(offsetof(moat_limits, pids), 4194304, &err), 0);
	assert_int_equal(moat_limit_check(offsetof(moat_limits, memory_bytes), 1ull << 50, &err), 0);
	assert_int_equal(moat_limit_check(offsetof(moat_limits, cpu_ms), MOAT_UNLIMITED, &err), 0);
	assert_int_equal(moat_limit_check(offsetof(moat_limits, files), 8, &err), 0);
	/* Every bound keeps a value exact as a signed 64-bit JSON integer. */
	moat_limits l;
	moat_limits_default_code(&l);
	assert_int_equal(moat_limits_check(&l, &err), 0);
	assert_true(MOAT_MAX_SIZE < (uint64_t)INT64_MAX && MOAT_MAX_DURATION_MS < (uint64_t)INT64_MAX);
	l.output_bytes = (1ull << 63) + 1;
	assert_true(moat_limits_check(&l, &err) < 0);
	assert_non_null(strstr(err.msg, "limits.output"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_absolute),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_bind_spec),
		cmocka_unit_test(test_validate_binds),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_limit_ranges),
		cmocka_unit_test(test_format_limit),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
