/* Unit tests: the reviewed list of host /etc entries a sandbox carries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hostetc.h"

static void test_list_has_no_secret(void **state)
{
	(void)state;
	for (size_t i = 0; i < moat__host_etc_n_paths + moat__host_etc_n_copied; i++) {
		const char *p = i < moat__host_etc_n_paths ? moat__host_etc_paths[i]
							    : moat__host_etc_copied[i - moat__host_etc_n_paths];
		assert_int_equal(strncmp(p, "/etc/", 5), 0);
		assert_false(moat__host_etc_secret(p));
		/* No climbing out of /etc, no whole-/etc bind. */
		assert_null(strstr(p, ".."));
		assert_true(strlen(p) > 5);
	}
}

static void test_secret_guard(void **state)
{
	(void)state;
	static const char *const secrets[] = {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/passwd-",
					      "/etc/ssh", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssl/private",
					      "/etc/sudoers", "/etc/sudoers.d", "/etc/krb5.keytab",
					      "/etc/java-17-openjdk/management/jmxremote.password"};
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		assert_true(moat__host_etc_secret(secrets[i]));
	assert_false(moat__host_etc_secret("/etc/services"));
	assert_false(moat__host_etc_secret("/etc/java-17-openjdk"));
}

static void test_families(void **state)
{
	(void)state;
	assert_true(moat__host_etc_family("java-17-openjdk"));
	assert_true(moat__host_etc_family("java-21-openjdk"));
	assert_false(moat__host_etc_family("python3.11"));
	assert_false(moat__host_etc_family("java-"));
	assert_false(moat__host_etc_family("java"));
	assert_false(moat__host_etc_family("python2.7"));
	assert_false(moat__host_etc_family("shadow"));
	assert_false(moat__host_etc_family("java-17/../../shadow"));
	assert_false(moat__host_etc_family("python3 x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_has_no_secret),
		cmocka_unit_test(test_secret_guard),
		cmocka_unit_test(test_families),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
