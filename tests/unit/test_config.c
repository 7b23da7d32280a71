/* Unit tests: config parsing helpers (bind specs, env specs, path rules). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"

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
	setenv("MOAT_TEST_PASS", "v", 1);
	assert_int_equal(moat_config_add_env(c, "MOAT_TEST_PASS", &err), 0);
	assert_string_equal(c->env[1], "MOAT_TEST_PASS=v");
	unsetenv("MOAT_TEST_UNSET");
	assert_int_equal(moat_config_add_env(c, "MOAT_TEST_UNSET", &err), 0);
	assert_null(c->env[2]);
	assert_true(moat_config_add_env(c, "=x", &err) < 0);
	assert_true(moat_config_add_env(c, "1A=x", &err) < 0);
	assert_true(moat_config_add_env(c, "A-B=x", &err) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_absolute),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_bind_spec),
		cmocka_unit_test(test_validate_binds),
		cmocka_unit_test(test_env),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
