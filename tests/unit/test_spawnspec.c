/* The spawn spec's encoding (spawnspec.c): what the init accepts from the
 * control socket, with a cap on every size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spawnspec.h"

static void test_round_trip(void **state)
{
	(void)state;
	char *argv[] = {"sh", "-c", "echo $A", NULL};
	char *envp[] = {"A=1", "PATH=/bin", "EMPTY=", NULL};
	moat_error err = {0};
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(moat__spawnspec_encode(argv, envp, "/tmp", MOAT_SPAWNSPEC_TTY, 40, 132, &buf, &len, &err), 0);
	moat_spawnspec s = {0};
	assert_int_equal(moat__spawnspec_decode(buf, len, &s, &err), 0);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(s.argv[i], argv[i]);
		assert_string_equal(s.envp[i], envp[i]);
	}
	assert_null(s.argv[3]);
	assert_null(s.envp[3]);
	assert_string_equal(s.cwd, "/tmp");
	assert_int_equal(s.flags, MOAT_SPAWNSPEC_TTY);
	/* The terminal's size comes along, so the init sets it before the
	 * command starts. */
	assert_int_equal(s.rows, 40);
	assert_int_equal(s.cols, 132);
	moat__spawnspec_done(&s);
	free(buf);

	/* No env, default cwd. */
	assert_int_equal(moat__spawnspec_encode(argv, NULL, NULL, 0, 0, 0, &buf, &len, &err), 0);
	assert_int_equal(moat__spawnspec_decode(buf, len, &s, &err), 0);
	assert_null(s.envp[0]);
	assert_null(s.cwd);
	assert_int_equal(s.rows, 0);
	assert_int_equal(s.cols, 0);
	moat__spawnspec_done(&s);
	free(buf);
}

static void test_encode_refuses(void **state)
{
	(void)state;
	moat_error err = {0};
	char *buf = NULL;
	size_t len = 0;
	char *none[] = {NULL};
	char *empty[] = {"", NULL};
	char *argv[] = {"true", NULL};
	char *bad_env[] = {"NOEQUALS", NULL};
	char *bad_env2[] = {"=value", NULL};
	assert_int_equal(moat__spawnspec_encode(none, NULL, NULL, 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(empty, NULL, NULL, 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(argv, bad_env, NULL, 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(argv, bad_env2, NULL, 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(argv, NULL, "tmp", 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(argv, NULL, "/a/../b", 0, 0, 0, &buf, &len, &err), -EINVAL);
	assert_int_equal(moat__spawnspec_encode(argv, NULL, NULL, 2, 0, 0, &buf, &len, &err), -EINVAL);
	/* A size without a terminal. */
	assert_int_equal(moat__spawnspec_encode(argv, NULL, NULL, 0, 24, 80, &buf, &len, &err), -EINVAL);
	/* Over the byte cap: one argument of 5 MiB. */
	size_t big = 5u << 20;
	char *huge = malloc(big + 1);
	assert_non_null(huge);
	memset(huge, 'x', big);
	huge[big] = '\0';
	char *hv[] = {huge, NULL};
	assert_int_equal(moat__spawnspec_encode(hv, NULL, NULL, 0, 0, 0, &buf, &len, &err), -E2BIG);
	free(huge);
}

/* Every byte of a valid spec cut off, and every kind of corruption, is
 * refused: nothing is read past the buffer (ASan would say). */
static void test_decode_refuses(void **state)
{
	(void)state;
	char *argv[] = {"sh", "-c", "true", NULL};
	char *envp[] = {"A=1", NULL};
	moat_error err = {0};
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(moat__spawnspec_encode(argv, envp, "/out", 0, 0, 0, &buf, &len, &err), 0);
	moat_spawnspec s = {0};
	for (size_t cut = 0; cut < len; cut++) {
		char *copy = malloc(cut ? cut : 1);
		memcpy(copy, buf, cut);
		assert_int_equal(moat__spawnspec_decode(copy, cut, &s, &err), -EBADMSG);
		free(copy);
	}
	/* A byte too many. */
	char *longer = malloc(len + 1);
	memcpy(longer, buf, len);
	longer[len] = 'x';
	assert_int_equal(moat__spawnspec_decode(longer, len + 1, &s, &err), -EBADMSG);
	free(longer);
	/* Counts beyond the caps, a wrong magic, unknown flags. */
	uint32_t h[5];
	memcpy(h, buf, sizeof(h));
	uint32_t orig[5];
	memcpy(orig, h, sizeof(h));
	const struct {
		int field;
		uint32_t value;
	} bad[] = {{0, 0x12345678}, {1, 1}, {1, 3}, {2, 4}, {3, 0}, {3, MOAT_SPAWNSPEC_MAX_ARGS + 1}, {3, 100},
		   {4, MOAT_SPAWNSPEC_MAX_ENV + 1}, {4, 5}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(h, orig, sizeof(h));
		h[bad[i].field] = bad[i].value;
		memcpy(buf, h, sizeof(h));
		assert_int_equal(moat__spawnspec_decode(buf, len, &s, &err), -EBADMSG);
	}
	free(buf);
	/* An env entry that is not NAME=VALUE, made by hand. */
	char raw[64];
	uint32_t hh[6] = {MOAT_SPAWNSPEC_MAGIC, MOAT_SPAWNSPEC_VERSION, 0, 1, 1, 0};
	memcpy(raw, hh, sizeof(hh));
	memcpy(raw + sizeof(hh), "true\0NOEQ\0\0", 11);
	assert_int_equal(moat__spawnspec_decode(raw, sizeof(hh) + 11, &s, &err), -EBADMSG);
	/* A relative working directory. */
	memcpy(raw + sizeof(hh), "true\0A=1\0tmp\0", 13);
	assert_int_equal(moat__spawnspec_decode(raw, sizeof(hh) + 13, &s, &err), -EBADMSG);
	memcpy(raw + sizeof(hh), "true\0A=1\0/tmp\0", 14);
	assert_int_equal(moat__spawnspec_decode(raw, sizeof(hh) + 14, &s, &err), 0);
	moat__spawnspec_done(&s);
	/* A terminal size without a terminal. */
	hh[5] = 24u | 80u << 16;
	memcpy(raw, hh, sizeof(hh));
	assert_int_equal(moat__spawnspec_decode(raw, sizeof(hh) + 14, &s, &err), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_decode_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
