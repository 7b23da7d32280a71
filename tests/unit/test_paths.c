/* Unit tests: resolving policy and command-line paths (units.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"
#include "units.h"

static void expect(const char *path, const char *base, const char *home, const char *want)
{
	moat_error err = {0};
	_cleanup_free_ char *got = NULL;
	int r = moat_path_resolve(path, base, home, &got, &err);
	if (r < 0)
		fail_msg("%s: %s", path, err.msg);
	assert_string_equal(got, want);
}

static void expect_fail(const char *path, const char *base, const char *home, const char *msg)
{
	moat_error err = {0};
	char *got = (char *)"untouched";
	assert_int_equal(moat_path_resolve(path, base, home, &got, &err), -MOAT_EINPUT);
	assert_string_equal(got, "untouched");
	assert_non_null(strstr(err.msg, msg));
}

static void test_absolute(void **state)
{
	(void)state;
	expect("/usr", "/srv", "/home/u", "/usr");
	expect("/usr/", NULL, NULL, "/usr");
	expect("//usr//lib/", NULL, NULL, "/usr/lib");
	expect("/usr/./lib/../share", NULL, NULL, "/usr/share");
	expect("/..", NULL, NULL, "/");
	expect("/../../etc", NULL, NULL, "/etc");
	expect("/", NULL, NULL, "/");
	expect("/.hidden/...", NULL, NULL, "/.hidden/...");
}

static void test_relative(void **state)
{
	(void)state;
	expect("./input", "/srv/proj", NULL, "/srv/proj/input");
	expect("input/", "/srv/proj", NULL, "/srv/proj/input");
	expect("../data", "/srv/proj", NULL, "/srv/data");
	expect(".", "/srv/proj", NULL, "/srv/proj");
	expect("../../../..", "/srv/proj", NULL, "/");
	expect_fail("input", NULL, NULL, "relative");
	expect_fail("input", "rel/base", NULL, "relative");
}

static void test_home(void **state)
{
	(void)state;
	expect("~", "/srv", "/home/u", "/home/u");
	expect("~/", "/srv", "/home/u", "/home/u");
	expect("~/work/../src", "/srv", "/home/u/", "/home/u/src");
	expect_fail("~root/x", "/srv", "/home/u", "~user");
	expect_fail("~/x", "/srv", NULL, "home");
	expect_fail("~/x", "/srv", "relative", "home");
	/* "~" only counts at the start. */
	expect("a/~/b", "/srv", "/home/u", "/srv/a/~/b");
}

static void test_limits(void **state)
{
	(void)state;
	expect_fail("", "/srv", NULL, "empty");
	char big[MOAT_MAX_PATH + 8];
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	expect_fail(big, NULL, NULL, "too long");
	/* Each part fits, together they do not. */
	char half[MOAT_MAX_PATH / 2 + 100];
	memset(half, 'b', sizeof(half) - 1);
	half[0] = '/';
	half[sizeof(half) - 1] = '\0';
	moat_error err = {0};
	char *got = NULL;
	assert_int_equal(moat_path_resolve(half + 1, half, NULL, &got, &err), -MOAT_EINPUT);
	assert_null(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_home),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
