/* Unit tests: the asciicast v2 writer, UTF-8 and secrets cut across chunks, overlapping secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>

#include "record.h"

static void test_cut(void **state)
{
	(void)state;
	/* "é" is c3 a9; "€" is e2 82 ac; "😀" is f0 9f 98 80. */
	assert_int_equal(moat_record_cut(NULL, "ab", 2), 2);
	assert_int_equal(moat_record_cut(NULL, "a\xc3", 2), 1);
	assert_int_equal(moat_record_cut(NULL, "a\xc3\xa9", 3), 3);
	assert_int_equal(moat_record_cut(NULL, "a\xe2\x82", 3), 1);
	assert_int_equal(moat_record_cut(NULL, "a\xf0\x9f\x98", 4), 1);
	assert_int_equal(moat_record_cut(NULL, "a\xf0\x9f\x98\x80", 5), 5);
	/* An invalid byte is not held back: it will read as U+FFFD. */
	assert_int_equal(moat_record_cut(NULL, "a\xff", 2), 2);
	assert_int_equal(moat_record_cut(NULL, "a\x80", 2), 2);
	moat_error err = {0};
	_cleanup_redactor_ moat_redactor *r = moat_redactor_new();
	assert_int_equal(moat_redactor_add(r, "K", "s3cr3t", &err), 0);
	assert_int_equal(moat_record_cut(r, "xx s3c", 6), 3);
	assert_int_equal(moat_record_cut(r, "xx s3cr3t", 9), 9);
}

static void test_sanitize(void **state)
{
	(void)state;
	char *o;
	size_t n;
	assert_int_equal(moat_utf8_sanitize("a\xff" "b\xc3\xa9\xed\xa0\x80", 8, &o, &n), 0);
	assert_string_equal(o, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(o);
}

static void test_format(void **state)
{
	(void)state;
	char *s = moat_record_format_event(1.25, 'o', "hi\n", 3);
	assert_string_equal(s, "[1.25,\"o\",\"hi\\n\"]");
	free(s);
	s = moat_record_format_event(123.4567891, 'i', "x", 1);
	assert_string_equal(s, "[123.456789,\"i\",\"x\"]");
	free(s);
}

static void test_file(void **state)
{
	(void)state;
	char path[] = "/tmp/moat-record-test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	moat_error err = {0};
	_cleanup_redactor_ moat_redactor *red = moat_redactor_new();
	assert_int_equal(moat_redactor_add(red, "TOKEN", "tok-12345", &err), 0);
	moat_record *r = NULL;
	moat_record_header h = {.width = 100, .height = 30, .term = "xterm", .command = "sh"};
	assert_int_equal(moat_record_open(path, &h, red, &r, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "caf\xc3", 4, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "\xa9 tok-1", 7, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "2345 end\n", 9, &err), 0);
	assert_int_equal(moat_record_write(r, 'i', "ls\r", 3, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "tail\xe2\x82", 6, &err), 0);
	assert_int_equal(moat_record_close(r, &err), 0);

	/* Join every "o" event's text: exactly what was written, redacted. */
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[4096];
	assert_non_null(fgets(line, sizeof(line), f));
	json_t *hj = json_loads(line, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(hj, "version")), 2);
	assert_int_equal(json_integer_value(json_object_get(hj, "width")), 100);
	assert_string_equal(json_string_value(json_object_get(json_object_get(hj, "env"), "TERM")), "xterm");
	json_decref(hj);
	char out[4096] = "", in[64] = "";
	double last = -1;
	while (fgets(line, sizeof(line), f)) {
		json_t *e = json_loads(line, 0, NULL);
		double t;
		const char *code, *data;
		assert_int_equal(json_unpack(e, "[F s s]", &t, &code, &data), 0);
		assert_true(t >= last);
		last = t;
		/* No event text is ever an invalid or split character. */
		assert_null(strstr(data, "\xef\xbf\xbd" "\xef\xbf\xbd" "\xef\xbf\xbd" "x"));
		strcat(strcmp(code, "o") == 0 ? out : in, data);
		json_decref(e);
	}
	assert_string_equal(out, "caf\xc3\xa9 [REDACTED:TOKEN] end\ntail\xef\xbf\xbd");
	assert_string_equal(in, "ls\r");
	unlink(path);
}

/* Two values where one's end is the other's start ("abc", "bcdef"),
 * written "xabcd" then "eX": holding back only the suffix that begins a
 * value ("bcd") would have let "abc" out. */
static void test_overlap(void **state)
{
	(void)state;
	char path[] = "/tmp/moat-record-test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	moat_error err = {0};
	_cleanup_redactor_ moat_redactor *red = moat_redactor_new();
	assert_int_equal(moat_redactor_add(red, "A", "abc", &err), 0);
	assert_int_equal(moat_redactor_add(red, "B", "bcdef", &err), 0);
	moat_record *r = NULL;
	assert_int_equal(moat_record_open(path, NULL, red, &r, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "xabcd", 5, &err), 0);
	assert_int_equal(moat_record_write(r, 'o', "eX", 2, &err), 0);
	assert_int_equal(moat_record_close(r, &err), 0);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[4096], out[4096] = "";
	assert_non_null(fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		json_t *e = json_loads(line, 0, NULL);
		double t;
		const char *code, *data;
		assert_int_equal(json_unpack(e, "[F s s]", &t, &code, &data), 0);
		strcat(out, data);
		json_decref(e);
	}
	assert_string_equal(out, "x[REDACTED:A]deX");
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_overlap),
	};
	return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
