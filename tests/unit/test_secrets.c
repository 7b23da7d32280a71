/* Placeholders: shape, length class, and recognising them (secrets.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "secrets.h"

static void test_placeholder_len(void **state)
{
	(void)state;
	/* "moat_ph_" + "github" + "_" + 32 digits. */
	assert_int_equal(moat_placeholder_len("github", 0), 47);
	assert_int_equal(moat_placeholder_len("github", 40), 47);
	/* A longer value: as long as it, so a client checking the length of
	 * its token accepts the placeholder. */
	assert_int_equal(moat_placeholder_len("github", 108), 108);
	assert_int_equal(moat_placeholder_len("github", 100000), MOAT_PLACEHOLDER_MAX);
}

static void test_placeholder_format(void **state)
{
	(void)state;
	uint8_t rnd[MOAT_PLACEHOLDER_MAX];
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 37 + 11);
	char out[MOAT_PLACEHOLDER_MAX + 1];
	assert_int_equal(moat_placeholder_format("Model-Key", rnd, 60, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), 60);
	/* Lower case, '-' as '_', then hex only. */
	assert_memory_equal(out, "moat_ph_model_key_", 18);
	for (size_t i = 18; i < 60; i++)
		assert_non_null(strchr("0123456789abcdef", out[i]));
	/* Too short for 32 random digits, too long, or no room: refused. */
	assert_int_equal(moat_placeholder_format("github", rnd, 46, out, sizeof(out)), -EINVAL);
	assert_int_equal(moat_placeholder_format("github", rnd, MOAT_PLACEHOLDER_MAX + 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(moat_placeholder_format("github", rnd, 47, out, 47), -EINVAL);
	/* Different randomness, different placeholder. */
	char other[MOAT_PLACEHOLDER_MAX + 1];
	rnd[20] ^= 1;
	assert_int_equal(moat_placeholder_format("Model-Key", rnd, 60, other, sizeof(other)), 0);
	assert_string_not_equal(out, other);
}

static void test_placeholder_seen(void **state)
{
	(void)state;
	size_t off = 99;
	const char *a = "GET /x?k=moat_ph_github_0123 HTTP/1.1";
	assert_true(moat_placeholder_seen(a, strlen(a), &off));
	assert_int_equal(off, 9);
	/* Any case, and percent-encoded as a URL would carry it. */
	const char *b = "Host: MOAT_PH_GITHUB_0123.evil.example";
	assert_true(moat_placeholder_seen(b, strlen(b), NULL));
	const char *c = "q=moat%5Fph%5Fgithub";
	assert_true(moat_placeholder_seen(c, strlen(c), &off));
	assert_int_equal(off, 2);
	const char *d = "moat_p";
	assert_false(moat_placeholder_seen(d, strlen(d), NULL));
	assert_false(moat_placeholder_seen("moat_ph_", 7, NULL));
	const char *e = "Authorization: Bearer ghp_real";
	assert_false(moat_placeholder_seen(e, strlen(e), NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder_len),
		cmocka_unit_test(test_placeholder_format),
		cmocka_unit_test(test_placeholder_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
