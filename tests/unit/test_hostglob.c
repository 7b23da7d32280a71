/* Unit tests: host name patterns (matching and validation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hostglob.h"

static void test_exact(void **state)
{
	(void)state;
	assert_true(moat_host_glob_match("api.github.com", "api.github.com"));
	assert_false(moat_host_glob_match("api.github.com", "github.com"));
	assert_false(moat_host_glob_match("api.github.com", "xapi.github.com"));
	assert_false(moat_host_glob_match("api.github.com", "api.github.com.evil.net"));
	assert_false(moat_host_glob_match("github.com", "evilgithub.com"));
	assert_true(moat_host_glob_match("localhost", "localhost"));
	assert_true(moat_host_glob_match("10.0.0.1", "10.0.0.1"));
	assert_false(moat_host_glob_match("api.github.com", ""));
	assert_false(moat_host_glob_match("api.github.com", NULL));
}

static void test_wildcard(void **state)
{
	(void)state;
	assert_true(moat_host_glob_match("*.example.com", "a.example.com"));
	assert_true(moat_host_glob_match("*.example.com", "a.b.example.com"));
	assert_false(moat_host_glob_match("*.example.com", "example.com"));
	assert_false(moat_host_glob_match("*.example.com", "badexample.com"));
	assert_false(moat_host_glob_match("*.example.com", ".example.com"));
	assert_false(moat_host_glob_match("*.example.com", "a.example.com.evil.net"));
	assert_false(moat_host_glob_match("*.example.com", "a..example.com"));
	assert_false(moat_host_glob_match("*.example.com", "A.example.com"));
	assert_true(moat_host_glob_match("*.files.pythonhosted.org", "x.files.pythonhosted.org"));
}

static void test_malformed_matches_nothing(void **state)
{
	(void)state;
	static const char *const bad[] = {"*", "*.", "*.com", "**", "**.example.com", "a*b", "a*.example.com",
					  "foo.*.com", "example..com", ".example.com", "example.com.",
					  "Example.com", "exa mple.com", "exa$mple.com", "*.1.2.3.4", "",
					  "*example.com"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		moat_error err = {0};
		assert_false(moat_host_glob_match(bad[i], "a.example.com"));
		assert_false(moat_host_glob_match(bad[i], "com"));
		assert_int_equal(moat_host_glob_check(bad[i], &err), -MOAT_EINPUT);
		assert_int_equal(err.code, MOAT_EINPUT);
		assert_non_null(strstr(err.msg, "host pattern"));
	}
}

static void test_check_messages(void **state)
{
	(void)state;
	moat_error err = {0};
	assert_int_equal(moat_host_glob_check("*", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "every host"));
	assert_int_equal(moat_host_glob_check("*.com", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "single label"));
	assert_int_equal(moat_host_glob_check("a*b", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "first label"));
	assert_int_equal(moat_host_glob_check("a..b", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "empty label"));
	assert_int_equal(moat_host_glob_check("a$b.com", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "character"));
	assert_int_equal(moat_host_glob_check(NULL, &err), -MOAT_EINPUT);
	/* An IPv6 address in brackets is a host, as the rules take it. */
	assert_int_equal(moat_host_glob_check("[::1]", &err), 0);
	assert_int_equal(moat_host_glob_check("[2001:db8::1]", &err), 0);
	assert_int_equal(moat_host_glob_check("[zz]", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "not an IPv6 address"));
	assert_int_equal(moat_host_glob_check("[127.0.0.1]", &err), -MOAT_EINPUT);
	assert_int_equal(moat_host_glob_check("[::1", &err), -MOAT_EINPUT);
	assert_int_equal(moat_host_glob_check("[]", &err), -MOAT_EINPUT);
}

static void test_lengths(void **state)
{
	(void)state;
	moat_error err = {0};
	char label[80], name[300];
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.com", label);
	assert_int_equal(moat_host_glob_check(name, &err), 0);
	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(name, sizeof(name), "%s.com", label);
	assert_int_equal(moat_host_glob_check(name, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "63"));
	/* 4 labels of 63 plus 3 dots = 255 > 253. */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.%s.%s.%s", label, label, label, label);
	assert_int_equal(moat_host_glob_check(name, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "253"));
	assert_false(moat_host_glob_match(name, name));
}

static void test_valid_patterns(void **state)
{
	(void)state;
	static const char *const good[] = {"example.com", "*.example.com", "*.co.uk", "a-b.example.com",
					   "exa_mple.com", "-a.example.com", "a-.example.com", "*._tcp.example.com",
					   "xn--bcher-kva.example", "localhost", "127.0.0.1"};
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_int_equal(moat_host_glob_check(good[i], NULL), 0);
	assert_int_equal(moat_host_name_check("api.example.com", NULL), 0);
	assert_int_equal(moat_host_name_check("*.example.com", NULL), -MOAT_EINPUT);
}

/* The glob matcher and the normaliser share one idea of a valid name: every
 * name the normaliser hands the rules, below a pattern's suffix, is matched
 * by that pattern. Once "*.internal.example" missed "a_b.internal.example"
 * and "x-.internal.example", which requests could still carry. */
static void test_matches_every_normalised_name(void **state)
{
	(void)state;
	static const char *const names[] = {"a_b.internal.example", "x-.internal.example", "-x.internal.example",
					    "_dmarc.internal.example", "a--b.internal.example", "1.internal.example",
					    "A_B.Internal.Example.", "b%5fc.internal.example",
					    "b\xc3\xbc" "cher.internal.example"};
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		moat_host h;
		moat_error err = {0};
		if (moat_host_normalize(names[i], strlen(names[i]), &h, &err) < 0)
			fail_msg("%s refused: %s", names[i], err.msg);
		if (!moat_host_glob_match("*.internal.example", h.name))
			fail_msg("*.internal.example misses %s (from %s)", h.name, names[i]);
		assert_int_equal(moat_host_name_check(h.name, &err), 0);
	}
	/* Every byte in a label: what the normaliser accepts, the glob
	 * matches; what the glob refuses, the normaliser refused too. */
	for (unsigned c = 1; c < 256; c++) {
		char in[64];
		moat_host h;
		moat_error err = {0};
		int n = snprintf(in, sizeof(in), "a%cb.internal.example", (char)c);
		if (moat_host_normalize(in, (size_t)n, &h, &err) < 0 || h.is_literal)
			continue;
		size_t hl = strlen(h.name);
		if (hl > 17 && strcmp(h.name + hl - 17, ".internal.example") == 0 &&
		    !moat_host_glob_match("*.internal.example", h.name))
			fail_msg("byte 0x%02x: %s accepted by the normaliser, missed by the glob", c, h.name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_wildcard),
		cmocka_unit_test(test_malformed_matches_nothing),
		cmocka_unit_test(test_check_messages),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_valid_patterns),
		cmocka_unit_test(test_matches_every_normalised_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
