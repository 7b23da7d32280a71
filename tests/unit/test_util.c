/* Unit tests: the shared helpers of util.h that are pure (escaping text
 * from outside for one line of a terminal), and the small-file reader's
 * cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

static void expect_escaped(const char *in, const char *want)
{
	char out[256];
	size_t n = moat__escape_controls(in, out, sizeof(out));
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
	_cleanup_free_ char *dup = moat__escape_controls_dup(in);
	assert_string_equal(dup, want);
	assert_int_equal(moat__has_controls(in, strlen(in)), strcmp(in, want) != 0);
}

static void test_plain_text_is_copied(void **state)
{
	(void)state;
	expect_escaped("", "");
	expect_escaped("5M", "5M");
	expect_escaped("a \\n b", "a \\n b"); /* a backslash is left as it is */
	expect_escaped("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x9f");
}

static void test_controls_are_escaped(void **state)
{
	(void)state;
	expect_escaped("5\n", "5\\n");
	expect_escaped("a\tb\rc", "a\\tb\\rc");
	expect_escaped("\x1b[31mred", "\\x1b[31mred");
	expect_escaped("\x01\x7f", "\\x01\\x7f");
	/* C1 controls in UTF-8: U+009B is CSI to some terminals. */
	expect_escaped("a\xc2\x9b" "b", "a\\xc2\\x9bb");
	expect_escaped("\xc2\x85", "\\xc2\\x85");
	/* U+00A0 is past the C1 range: copied. */
	expect_escaped("\xc2\xa0", "\xc2\xa0");
}

static void test_invalid_utf8_is_escaped(void **state)
{
	(void)state;
	expect_escaped("\x9b", "\\x9b");                 /* a lone C1 byte (8-bit CSI) */
	expect_escaped("\xff\xfe", "\\xff\\xfe");
	expect_escaped("\xc3", "\\xc3");                 /* a cut sequence */
	expect_escaped("\xc0\xaf", "\\xc0\\xaf");        /* overlong '/' */
	expect_escaped("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
	expect_escaped("\xe2\x82", "\\xe2\\x82");
}

static void test_cap_never_cuts_an_escape(void **state)
{
	(void)state;
	char out[5];
	/* "ab" fits, "\x1b" (4 bytes) would not with the NUL: stop before it. */
	assert_int_equal(moat__escape_controls("ab\x1b" "cd", out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	/* Nor a multi-byte character. */
	char out3[3];
	assert_int_equal(moat__escape_controls("a\xe2\x82\xac", out3, sizeof(out3)), 1);
	assert_string_equal(out3, "a");
	assert_int_equal(moat__escape_controls("abc", out, 0), 0);
}

static void test_error_messages_are_one_line(void **state)
{
	(void)state;
	moat_error err = {0};
	moat_error_set(&err, MOAT_EINPUT, "limits.memory: '%s' is not a size", "5\n\x1b]0;pwned\x07");
	assert_string_equal(err.msg, "limits.memory: '5\\n\\x1b]0;pwned\\x07' is not a size");
	moat_error_wrap(&err, "policy %s", "a\nb");
	assert_string_equal(err.msg, "policy a\\nb: limits.memory: '5\\n\\x1b]0;pwned\\x07' is not a size");
	char buf[MOAT_ERROR_MAX];
	assert_null(strchr(moat_error_format(&err, buf, sizeof(buf)), '\n'));
}

/* A message that already names its reason keeps its errno for callers
 * that act on it, without the errno text said twice; a plain one gets it. */
static void test_error_said_keeps_the_code(void **state)
{
	(void)state;
	moat_error err = {0};
	char buf[MOAT_ERROR_MAX + 64];
	moat_error_set_said(&err, -ENOENT, "mount /data: %s", strerror(ENOENT));
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(moat_error_format(&err, buf, sizeof(buf)), "mount /data: No such file or directory");
	moat_error_wrap(&err, "start");
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(moat_error_format(&err, buf, sizeof(buf)), "start: mount /data: No such file or directory");
	moat_error_set(&err, EACCES, "open /x");
	assert_string_equal(moat_error_format(&err, buf, sizeof(buf)), "open /x: Permission denied");
	moat_error_set_said(&err, EACCES, "open /x");
	moat_error_clear(&err);
	moat_error_set(&err, EPERM, "y");
	assert_string_equal(moat_error_format(&err, buf, sizeof(buf)), "y: Operation not permitted");
}

/* A file over the cap is an error (EFBIG), not its first max bytes taken
 * for the whole; one of exactly max bytes is read whole. The head reader
 * says how much it took of a longer file. */
static void test_read_file_cap(void **state)
{
	(void)state;
	char dir[] = "/tmp/moat-test-util.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(moat__write_file_at(dfd, "f", "0123456789", 0600), 0);

	char *s = NULL;
	assert_int_equal(moat__read_file_at(dfd, "f", 10, &s), 10);
	assert_string_equal(s, "0123456789");
	free(s);
	s = NULL;
	assert_int_equal(moat__read_file_at(dfd, "f", 9, &s), -EFBIG);
	assert_null(s);
	assert_int_equal(moat__read_file_at(dfd, "f", 0, &s), -EFBIG);
	assert_null(s);

	assert_int_equal(moat__read_file_head_at(dfd, "f", 4, &s), 4);
	assert_string_equal(s, "0123");
	free(s);
	s = NULL;
	assert_int_equal(moat__read_file_head_at(dfd, "f", 64, &s), 10);
	assert_string_equal(s, "0123456789");
	free(s);

	unlinkat(dfd, "f", 0);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_text_is_copied),
		cmocka_unit_test(test_controls_are_escaped),
		cmocka_unit_test(test_invalid_utf8_is_escaped),
		cmocka_unit_test(test_cap_never_cuts_an_escape),
		cmocka_unit_test(test_error_messages_are_one_line),
		cmocka_unit_test(test_error_said_keeps_the_code),
		cmocka_unit_test(test_read_file_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
