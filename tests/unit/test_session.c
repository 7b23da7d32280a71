/* Sessions (session.c): which names a session may take, and the limits a
 * session gets where its policy set none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "session.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(moat__session_name_valid("a"));
	assert_true(moat__session_name_valid("build-1.2_x"));
	assert_true(moat__session_name_valid("9lives"));
	char longest[MOAT_SESSION_NAME_MAX + 2];
	memset(longest, 'x', sizeof(longest));
	longest[MOAT_SESSION_NAME_MAX] = '\0';
	assert_true(moat__session_name_valid(longest));
	longest[MOAT_SESSION_NAME_MAX] = 'x';
	longest[MOAT_SESSION_NAME_MAX + 1] = '\0';
	assert_false(moat__session_name_valid(longest));
	assert_false(moat__session_name_valid(NULL));
	assert_false(moat__session_name_valid(""));
	assert_false(moat__session_name_valid("-rf"));
	assert_false(moat__session_name_valid(".hidden"));
	assert_false(moat__session_name_valid("a/b"));
	assert_false(moat__session_name_valid("../x"));
	assert_false(moat__session_name_valid("a b"));
	assert_false(moat__session_name_valid("a\nb"));
	/* An id would make ID|NAME ambiguous. */
	assert_false(moat__session_name_valid("0123456789abcdef01234567"));
	assert_true(moat__session_name_valid("0123456789abcdef0123456"));
}

static void test_default_limits(void **state)
{
	(void)state;
	moat_policy p;
	memset(&p, 0, sizeof(p));
	p.limits.wall_ms = 10000;
	p.limits.cpu_ms = 10000;
	moat__session_default_limits(&p);
	assert_int_equal(p.limits.wall_ms, MOAT_SESSION_DEFAULT_WALL_MS);
	assert_int_equal(p.limits.cpu_ms, MOAT_SESSION_DEFAULT_CPU_MS);
	/* What the policy or the command line set stays. */
	p.limits.wall_ms = 5000;
	p.limits.cpu_ms = 7000;
	p.limits_set = MOAT_LIMIT_WALL | MOAT_LIMIT_CPU_TIME;
	moat__session_default_limits(&p);
	assert_int_equal(p.limits.wall_ms, 5000);
	assert_int_equal(p.limits.cpu_ms, 7000);
}

static void test_cp_split(void **state)
{
	(void)state;
	char key[MOAT_SESSION_NAME_MAX + 1];
	const char *path = NULL;
	assert_true(moat__session_cp_split("work:/tmp/x", key, sizeof(key), &path));
	assert_string_equal(key, "work");
	assert_string_equal(path, "/tmp/x");
	assert_true(moat__session_cp_split("0123456789abcdef01234567:/", key, sizeof(key), &path));
	assert_string_equal(path, "/");
	/* Host paths, whatever colons they hold. */
	assert_false(moat__session_cp_split("src/a", key, sizeof(key), &path));
	assert_false(moat__session_cp_split("./work:/tmp", key, sizeof(key), &path));
	assert_false(moat__session_cp_split("/abs:/tmp", key, sizeof(key), &path));
	assert_false(moat__session_cp_split(":/tmp", key, sizeof(key), &path));
	/* A session's path is absolute. */
	assert_false(moat__session_cp_split("work:tmp/x", key, sizeof(key), &path));
	assert_false(moat__session_cp_split("work:", key, sizeof(key), &path));
	/* A key longer than a name is not one. */
	char longk[100];
	memset(longk, 'a', 80);
	strcpy(longk + 80, ":/x");
	assert_false(moat__session_cp_split(longk, key, sizeof(key), &path));
}

static void test_cp_path_check(void **state)
{
	(void)state;
	moat_error err = {0};
	assert_int_equal(moat__session_cp_path_check("/tmp/x", &err), 0);
	assert_int_equal(moat__session_cp_path_check("/", &err), 0);
	assert_int_equal(moat__session_cp_path_check("/tmp/..x/y..", &err), 0);
	assert_true(moat__session_cp_path_check("tmp/x", &err) < 0);
	assert_true(moat__session_cp_path_check("/tmp/../etc", &err) < 0);
	assert_true(moat__session_cp_path_check("/..", &err) < 0);
	assert_true(moat__session_cp_path_check("/tmp//..//", &err) < 0);
	assert_true(moat__session_cp_path_check(NULL, &err) < 0);
	char big[PATH_MAX + 8];
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_true(moat__session_cp_path_check(big, &err) < 0);
}

static void test_log_type_matches(void **state)
{
	(void)state;
	assert_true(moat__session_log_type_matches("command.start", NULL));
	assert_true(moat__session_log_type_matches("command.start", "command"));
	assert_true(moat__session_log_type_matches("command.end", "command.end"));
	assert_true(moat__session_log_type_matches("session.end", "session"));
	assert_false(moat__session_log_type_matches("session.end", "session.e"));
	assert_false(moat__session_log_type_matches("commander", "command"));
	assert_false(moat__session_log_type_matches("exec", "command"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_default_limits),
		cmocka_unit_test(test_cp_split),
		cmocka_unit_test(test_cp_path_check),
		cmocka_unit_test(test_log_type_matches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
