/* Unit tests: the streaming redactor gives, whatever the cut, what
 * moat_redact gives for the whole stream, and holds back less than the
 * longest value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "redactstream.h"

static moat_redactor *make(const char *const *kv)
{
	moat_error err = {0};
	moat_redactor *r = moat_redactor_new();
	assert_non_null(r);
	for (; *kv; kv += 2)
		assert_int_equal(moat_redactor_add(r, kv[0], kv[1], &err), 0);
	return r;
}

/* Appends what the stream gives for one chunk to *acc. */
static void feed(moat_redact_stream *st, const char *buf, size_t len, char **acc, size_t *acc_len, size_t longest)
{
	char *o = NULL;
	size_t n = 0;
	assert_true(moat_redact_stream_feed(st, buf, len, &o, &n) >= 0);
	assert_non_null(o);
	*acc = realloc(*acc, *acc_len + n + 1);
	memcpy(*acc + *acc_len, o, n);
	*acc_len += n;
	free(o);
	assert_true(moat_redact_stream_held(st) < longest);
}

static void flush(moat_redact_stream *st, char **acc, size_t *acc_len)
{
	char *o = NULL;
	size_t n = 0;
	assert_true(moat_redact_stream_flush(st, &o, &n) >= 0);
	*acc = realloc(*acc, *acc_len + n + 1);
	memcpy(*acc + *acc_len, o, n);
	*acc_len += n;
	(*acc)[*acc_len] = '\0';
	free(o);
	assert_int_equal(moat_redact_stream_held(st), 0);
}

/* in, cut into chunks at the positions of cuts (ascending, ending with
 * len), must come out as moat_redact(in). */
static void check_cuts(const moat_redactor *r, const char *in, size_t len, const size_t *cuts, size_t ncuts,
		       size_t longest)
{
	char *want = NULL;
	size_t want_len = 0;
	assert_true(moat_redact(r, in, len, &want, &want_len) >= 0);
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	char *got = NULL;
	size_t got_len = 0, at = 0;
	for (size_t k = 0; k < ncuts; k++) {
		feed(&st, in + at, cuts[k] - at, &got, &got_len, longest);
		at = cuts[k];
	}
	flush(&st, &got, &got_len);
	assert_int_equal(got_len, want_len);
	assert_memory_equal(got, want, want_len);
	free(got);
	free(want);
	moat_redact_stream_done(&st);
}

static void test_split_everywhere(void **state)
{
	(void)state;
	static const char *const kv[] = {"TOKEN", "ghp_abc123", "LONG", "ghp_abc123XYZ", "PW", "hunter2", NULL};
	_cleanup_redactor_ moat_redactor *r = make(kv);
	const char *in = "a ghp_abc123 b ghp_abc123XYZ c hunter2hunter2 ghp_abc12 hunte";
	size_t len = strlen(in);
	/* Two chunks, cut at every position. */
	for (size_t c = 0; c <= len; c++) {
		size_t cuts[] = {c, len};
		check_cuts(r, in, len, cuts, 2, 13);
	}
	/* One byte at a time. */
	size_t cuts[128];
	for (size_t c = 0; c < len; c++)
		cuts[c] = c + 1;
	check_cuts(r, in, len, cuts, len, 13);
	/* And no value survives anywhere in the result. */
	char *o = NULL;
	size_t n = 0;
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	for (size_t c = 0; c < len; c++)
		feed(&st, in + c, 1, &o, &n, 13);
	flush(&st, &o, &n);
	assert_null(strstr(o, "ghp_abc123"));
	assert_null(strstr(o, "hunter2"));
	assert_non_null(strstr(o, "ghp_abc12 hunte")); /* prefixes are no values */
	free(o);
}

/* Two values where one's end is the other's start: holding back only the
 * longest suffix that begins a value ("bcd" of "abcd", for "bcdef") would
 * let "a" out and lose "abc". */
static void test_overlap(void **state)
{
	(void)state;
	static const char *const kv[] = {"A", "abc", "B", "bcdef", NULL};
	_cleanup_redactor_ moat_redactor *r = make(kv);
	const char *in = "xabcdeX abcdef bcdef";
	size_t len = strlen(in);
	for (size_t c = 0; c <= len; c++)
		for (size_t d = c; d <= len; d++) {
			size_t cuts[] = {c, d, len};
			check_cuts(r, in, len, cuts, 3, 5);
		}
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	char *o = NULL;
	size_t n = 0;
	feed(&st, "xabcd", 5, &o, &n, 5);
	feed(&st, "eX", 2, &o, &n, 5);
	flush(&st, &o, &n);
	assert_string_equal(o, "x[REDACTED:A]deX");
	free(o);
}

/* A shorter value that matches waits while a longer one may still: the
 * longer wins when it completes, the shorter when it does not. */
static void test_longer_pending(void **state)
{
	(void)state;
	static const char *const kv[] = {"S", "key", "L", "keyring", NULL};
	_cleanup_redactor_ moat_redactor *r = make(kv);
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	char *o = NULL;
	size_t n = 0;
	feed(&st, "1 keyri", 7, &o, &n, 7);
	assert_int_equal(n, 2); /* "1 ", the rest undecided */
	assert_int_equal(moat_redact_stream_held(&st), 5);
	feed(&st, "ng 2 keyr", 9, &o, &n, 7);
	feed(&st, "x", 1, &o, &n, 7);
	flush(&st, &o, &n);
	assert_string_equal(o, "1 [REDACTED:L] 2 [REDACTED:S]rx");
	free(o);
}

/* Held back is never more than the longest value less one, whatever comes,
 * and only when a value could start. */
static void test_holdback_bound(void **state)
{
	(void)state;
	static const char *const kv[] = {"A", "aaab", "B", "abab", "C", "ba", NULL};
	_cleanup_redactor_ moat_redactor *r = make(kv);
	srand(1);
	for (int round = 0; round < 300; round++) {
		char in[200];
		size_t len = (size_t)(rand() % 199) + 1;
		for (size_t i = 0; i < len; i++)
			in[i] = "abx"[rand() % 3];
		size_t cuts[200], nc = 0, at = 0;
		while (at < len) {
			at += (size_t)(rand() % 6) + 1;
			cuts[nc++] = at < len ? at : len;
		}
		check_cuts(r, in, len, cuts, nc, 4);
	}
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	char *o = NULL;
	size_t n = 0;
	feed(&st, "xxxx", 4, &o, &n, 4);
	assert_int_equal(moat_redact_stream_held(&st), 0);
	assert_int_equal(n, 4);
	feed(&st, "aaa", 3, &o, &n, 4);
	assert_int_equal(moat_redact_stream_held(&st), 3);
	free(o);
	moat_redact_stream_done(&st);
}

/* The flush writes what is held as it is: a value cut short by the end of
 * the stream is no value. Without values (or a NULL redactor) nothing is
 * ever held. */
static void test_flush(void **state)
{
	(void)state;
	static const char *const kv[] = {"PW", "hunter2", NULL};
	_cleanup_redactor_ moat_redactor *r = make(kv);
	moat_redact_stream st = MOAT_REDACT_STREAM_INIT(r);
	char *o = NULL;
	size_t n = 0;
	feed(&st, "ok hunt", 7, &o, &n, 7);
	assert_int_equal(n, 3);
	flush(&st, &o, &n);
	assert_string_equal(o, "ok hunt");
	free(o);
	o = NULL;
	n = 0;
	/* Reused after a flush. */
	feed(&st, "hunter", 6, &o, &n, 7);
	feed(&st, "2!", 2, &o, &n, 7);
	flush(&st, &o, &n);
	assert_string_equal(o, "[REDACTED:PW]!");
	free(o);
	o = NULL;
	n = 0;
	moat_redact_stream plain = MOAT_REDACT_STREAM_INIT(NULL);
	feed(&plain, "hunt", 4, &o, &n, 1);
	flush(&plain, &o, &n);
	assert_string_equal(o, "hunt");
	free(o);
	/* Binary data, NULs included, passes untouched. */
	o = NULL;
	n = 0;
	feed(&st, "\0h\0", 3, &o, &n, 7);
	flush(&st, &o, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(o, "\0h\0", 3);
	free(o);
	moat_redact_stream_done(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_everywhere),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_longer_pending),
		cmocka_unit_test(test_holdback_bound),
		cmocka_unit_test(test_flush),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
