/* Unit tests: the audit hash chain, its writer, and verify against each kind
 * of tampering (edit, removal, reordering, truncation, forged append). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/stat.h>

#include "audit.h"

static char path[] = "/tmp/moat-audit-test.XXXXXX";

/* Writes a fresh log of 6 lines (header + 5 events) and returns its bytes. */
static char *fresh_log(size_t *len)
{
	moat_error err = {0};
	unlink(path);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, "s1", &a, &err), 0);
	for (int i = 1; i <= 5; i++)
		assert_int_equal(moat_audit_event(a, "test.event", json_pack("{si s:s}", "n", i, "word", "hello"),
						  i == 5 ? MOAT_AUDIT_SYNC : 0, &err),
				 0);
	moat_audit_close(TAKE_PTR(a));
	char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_true(n > 0);
	*len = (size_t)n;
	return buf;
}

/* Returns a pointer to the start of line k (1-based) and its length. */
static char *line_at(char *buf, int k, size_t *len)
{
	char *p = buf;
	for (int i = 1; i < k; i++)
		p = strchr(p, '\n') + 1;
	*len = (size_t)(strchr(p, '\n') - p);
	return p;
}

static void verify(const char *buf, size_t len, moat_audit_problem want, size_t want_line)
{
	moat_audit_verdict v;
	int r = moat_audit_verify_buffer(buf, len, 0, &v);
	if (v.problem != want || v.line != want_line)
		fail_msg("verify: got %s at line %zu (%s), want %s at line %zu", moat_audit_problem_to_string(v.problem),
			 v.line, v.reason, moat_audit_problem_to_string(want), want_line);
	assert_int_equal(r, want == MOAT_AUDIT_INTACT ? 0 : 1);
}

static void test_hash_and_time(void **state)
{
	(void)state;
	char h[MOAT_AUDIT_HASH_HEX];
	moat_audit_hash("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	char t[40];
	moat_audit_format_time(1714564800123456ull, t, sizeof(t));
	assert_string_equal(t, "2024-05-01T12:00:00.123456Z");
	uint64_t us = 0;
	assert_int_equal(moat_audit_parse_time(t, &us), 0);
	assert_int_equal(us, 1714564800123456ull);
	assert_int_equal(moat_audit_parse_time("2024-05-01T14:00:00.5+02:00", &us), 0);
	assert_int_equal(us, 1714564800500000ull);
	assert_true(moat_audit_parse_time("2024-05-01 12:00", &us) < 0);
	assert_true(moat_audit_parse_time("2024-13-01T12:00:00Z", &us) < 0);
	assert_true(moat_audit_parse_time("2024-05-01T12:00:00Zjunk", &us) < 0);
}

static void test_format_line(void **state)
{
	(void)state;
	moat_error err = {0};
	char *s = NULL;
	json_t *f = json_pack("{s:s}", "path", "/etc/passwd");
	assert_int_equal(moat_audit_format_line(7, "2024-05-01T12:00:00.000000Z", "abc", "file.open", f,
						"00", NULL, &s, &err),
			 0);
	assert_string_equal(s, "{\"seq\":7,\"time\":\"2024-05-01T12:00:00.000000Z\",\"session\":\"abc\","
			       "\"type\":\"file.open\",\"path\":\"/etc/passwd\",\"prev\":\"00\"}");
	free(s);
	json_decref(f);
	f = json_pack("{s:i}", "seq", 1);
	assert_true(moat_audit_format_line(7, "t", "abc", "x", f, "00", NULL, &s, &err) < 0);
	assert_non_null(strstr(err.msg, "reserved"));
	json_decref(f);
}

static void test_intact(void **state)
{
	(void)state;
	size_t len;
	_cleanup_free_ char *buf = fresh_log(&len);
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 0);
	assert_int_equal(v.events, 6);
	assert_int_equal(v.last_seq, 5);
	/* The header is first and chained to its nonce. */
	assert_true(moat__startswith(buf, "{\"seq\":0,"));
	assert_non_null(strstr(buf, "\"type\":\"log.start\""));
	/* The head is the hash of the last line. */
	size_t l;
	char *last = line_at(buf, 6, &l);
	char h[MOAT_AUDIT_HASH_HEX];
	moat_audit_hash(last, l, h);
	assert_string_equal(h, v.head);
}

static void test_edit(void **state)
{
	(void)state;
	size_t len, l;
	_cleanup_free_ char *buf = fresh_log(&len);
	char *p = strstr(line_at(buf, 3, &l), "hello");
	memcpy(p, "jello", 5);
	verify(buf, len, MOAT_AUDIT_EDITED, 3);
	/* The header itself. */
	free(buf);
	buf = fresh_log(&len);
	p = strstr(buf, "moat ");
	p[0] = 'M';
	verify(buf, len, MOAT_AUDIT_EDITED, 1);
	/* An edit that breaks the JSON. */
	free(buf);
	buf = fresh_log(&len);
	p = line_at(buf, 4, &l);
	p[0] = '[';
	verify(buf, len, MOAT_AUDIT_MALFORMED, 4);
}

/* A log of 13 lines whose events carry strings, numbers and nested
 * values, for the edit-attribution tests below. */
static char *varied_log(size_t *len, int *ret_lines)
{
	moat_error err = {0};
	unlink(path);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, "s9", &a, &err), 0);
	for (int i = 1; i <= 12; i++)
		assert_int_equal(moat_audit_event(a, i % 2 ? "file.open" : "exec",
						  json_pack("{si s:s s:{s:[is]} s:b}", "n", i * 37, "word", "hello",
							    "obj", "a", 5, "x", "flag", i % 3 == 0),
						  0, &err),
				 0);
	moat_audit_close(TAKE_PTR(a));
	char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_true(n > 0);
	*len = (size_t)n;
	*ret_lines = 13;
	return buf;
}

/* A character that keeps c's class (digit, hex letter, letter) but is not c,
 * so that the edited line stays well-formed where it can. */
static char other_char(char c)
{
	if (c >= '0' && c <= '8')
		return (char)(c + 1);
	if (c == '9')
		return '1';
	if (c >= 'a' && c < 'f')
		return (char)(c + 1);
	if (c == 'f')
		return 'a';
	if (c >= 'g' && c < 'z')
		return (char)(c + 1);
	return c == 'z' ? 'y' : 'q';
}

/* Every field of every line but the last two, edited by one character of
 * its value, is blamed on that line: the line that no longer links to it is
 * the next one, and the verdict says so. (An edit of the last two lines
 * cannot be told from a forged last line by the chain alone; the head,
 * kept elsewhere, protects those: docs/audit.md.) */
static void test_edit_every_field(void **state)
{
	(void)state;
	static const char *const keys[] = {"\"seq\":", "\"time\":\"", "\"session\":\"", "\"type\":\"", "\"n\":",
					   "\"word\":\"", "\"a\":[", "\"flag\":", "\"prev\":\"", "\"nonce\":\"",
					   "\"writer\":\"", "\"version\":"};
	size_t len;
	int nl;
	_cleanup_free_ char *orig = varied_log(&len, &nl);
	_cleanup_free_ char *buf = malloc(len);
	int tried = 0;
	for (int k = 1; k <= nl - 2; k++)
		for (size_t f = 0; f < ELEMENTSOF(keys); f++) {
			memcpy(buf, orig, len);
			size_t l;
			char *p = line_at(buf, k, &l);
			char *at = memmem(p, l, keys[f], strlen(keys[f]));
			if (!at)
				continue;
			char *c = at + strlen(keys[f]);
			if (f == 7) /* the boolean: another JSON value in its place */
				memcpy(c, *c == 't' ? "null" : "0    ", *c == 't' ? 4 : 5);
			else
				*c = other_char(*c);
			moat_audit_verdict v;
			assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 1);
			if (v.line != (size_t)k)
				fail_msg("line %d, field %s: blamed line %zu (%s: %s)", k, keys[f], v.line,
					 moat_audit_problem_to_string(v.problem), v.reason);
			/* The header's nonce and seq have verdicts of their own;
			 * everything else is an edit. */
			if (!(k == 1 && (f == 0 || f == 9)) && v.problem != MOAT_AUDIT_EDITED)
				fail_msg("line %d, field %s: %.*s: %s: %s", k, keys[f], (int)l, p, moat_audit_problem_to_string(v.problem),
					 v.reason);
			tried++;
		}
	assert_int_equal(tried, 8 + 10 * 9); /* the header's 8 fields, 9 for each event */
}

/* Random one-byte edits anywhere in a line but the last two: each is blamed
 * on the line that was edited. The seed is fixed, so a failure replays. */
static void test_random_edits(void **state)
{
	(void)state;
	size_t len;
	int nl;
	_cleanup_free_ char *orig = varied_log(&len, &nl);
	_cleanup_free_ char *buf = malloc(len);
	size_t end_lines;
	char *last2 = line_at(orig, nl - 1, &end_lines);
	size_t editable = (size_t)(last2 - orig);
	unsigned seed = 20240501;
	for (int t = 0; t < 2000; t++) {
		memcpy(buf, orig, len);
		size_t pos = (size_t)rand_r(&seed) % editable;
		if (buf[pos] == '\n')
			continue;
		unsigned char b;
		do
			b = (unsigned char)rand_r(&seed);
		while (b == (unsigned char)buf[pos] || b == '\n');
		buf[pos] = (char)b;
		size_t k = 1;
		for (size_t i = 0; i < pos; i++)
			k += orig[i] == '\n';
		moat_audit_verdict v;
		assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 1);
		if (v.line != k)
			fail_msg("byte %zu (line %zu) set to 0x%02x: blamed line %zu (%s: %s)", pos, k, b, v.line,
				 moat_audit_problem_to_string(v.problem), v.reason);
	}
}

/* The verdict says which line fails to link to which. */
static void test_blame_names_both_lines(void **state)
{
	(void)state;
	size_t len, l;
	int nl;
	_cleanup_free_ char *buf = varied_log(&len, &nl);
	/* One hex digit of line 8's prev: line 8 is blamed, not line 7. */
	char *p = line_at(buf, 8, &l);
	p = (char *)memmem(p, l, "\"prev\":\"", 8) + 8;
	*p = other_char(*p);
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 1);
	assert_int_equal(v.line, 8);
	assert_int_equal(v.problem, MOAT_AUDIT_EDITED);
	assert_non_null(strstr(v.reason, "does not link to line 7"));
	assert_non_null(strstr(v.reason, "line 9 does not link to it"));
	/* Line 5's word: line 6 no longer links to it. */
	free(buf);
	buf = varied_log(&len, &nl);
	p = line_at(buf, 5, &l);
	p = memmem(p, l, "hello", 5);
	*p = 'j';
	assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 1);
	assert_int_equal(v.line, 5);
	assert_non_null(strstr(v.reason, "line 6 does not link to this line"));
	/* The last line's prev, one digit off: that line, not the one before. */
	free(buf);
	buf = varied_log(&len, &nl);
	p = line_at(buf, nl, &l);
	p = (char *)memmem(p, l, "\"prev\":\"", 8) + 8;
	*p = other_char(*p);
	assert_int_equal(moat_audit_verify_buffer(buf, len, 0, &v), 1);
	assert_int_equal(v.line, (size_t)nl);
	assert_int_equal(v.problem, MOAT_AUDIT_EDITED);
}

static void test_remove(void **state)
{
	(void)state;
	size_t len, l;
	_cleanup_free_ char *buf = fresh_log(&len);
	char *p = line_at(buf, 3, &l);
	memmove(p, p + l + 1, len - (size_t)(p - buf) - l - 1);
	len -= l + 1;
	verify(buf, len, MOAT_AUDIT_REMOVED, 3);
}

static void test_swap(void **state)
{
	(void)state;
	size_t len, l3, l4;
	_cleanup_free_ char *buf = fresh_log(&len);
	char *p3 = line_at(buf, 3, &l3);
	line_at(buf, 4, &l4);
	_cleanup_free_ char *tmp = malloc(l3 + l4 + 2);
	memcpy(tmp, p3 + l3 + 1, l4 + 1);
	memcpy(tmp + l4 + 1, p3, l3 + 1);
	memcpy(p3, tmp, l3 + l4 + 2);
	verify(buf, len, MOAT_AUDIT_REORDERED, 3);
}

static void test_truncate(void **state)
{
	(void)state;
	size_t len, l;
	_cleanup_free_ char *buf = fresh_log(&len);
	char *p = line_at(buf, 6, &l);
	verify(buf, (size_t)(p - buf) + l / 2, MOAT_AUDIT_TRUNCATED, 6);
	/* Only the newline missing: still a partial line. */
	verify(buf, len - 1, MOAT_AUDIT_TRUNCATED, 6);
	verify(buf, 0, MOAT_AUDIT_MALFORMED, 1);
}

static void test_forged_append(void **state)
{
	(void)state;
	size_t len;
	_cleanup_free_ char *buf = fresh_log(&len);
	const char *forged = "{\"seq\":6,\"time\":\"2024-05-01T12:00:00.000000Z\",\"session\":\"s1\",\"type\":"
			     "\"exec\",\"path\":\"/bin/true\",\"prev\":"
			     "\"0000000000000000000000000000000000000000000000000000000000000000\"}\n";
	_cleanup_free_ char *big = malloc(len + strlen(forged));
	memcpy(big, buf, len);
	memcpy(big + len, forged, strlen(forged));
	verify(big, len + strlen(forged), MOAT_AUDIT_FORGED, 7);
}

static void test_append_continues(void **state)
{
	(void)state;
	moat_error err = {0};
	size_t len;
	free(fresh_log(&len));
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, NULL, &a, &err), 0);
	assert_int_equal(strlen(moat_audit_session(a)), 32);
	assert_int_equal(moat_audit_event(a, "test.more", NULL, MOAT_AUDIT_SYNC, &err), 0);
	/* A second writer is refused while the first holds the log. */
	moat_audit *b = NULL;
	assert_true(moat_audit_open(path, NULL, &b, &err) < 0);
	assert_non_null(strstr(err.msg, "another writer"));
	char head[MOAT_AUDIT_HASH_HEX];
	moat_audit_head(a, head);
	moat_audit_close(TAKE_PTR(a));
	_cleanup_free_ char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	assert_int_equal(v.events, 7);
	assert_string_equal(v.head, head);
	assert_null(strstr(buf + len, "log.start"));

	/* A log that ends mid-line is not continued. */
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"seq\":7", 8), 8);
	close(fd);
	assert_true(moat_audit_open(path, NULL, &a, &err) < 0);
	assert_non_null(strstr(err.msg, "partial line"));
	/* Nor is one whose last line was forged. */
	unlink(path);
	free(fresh_log(&len));
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	const char *forged = "{\"seq\":6,\"time\":\"2024-05-01T12:00:00.000000Z\",\"session\":\"s1\",\"type\":"
			     "\"exec\",\"prev\":"
			     "\"0000000000000000000000000000000000000000000000000000000000000000\"}\n";
	assert_int_equal(write(fd, forged, strlen(forged)), (ssize_t)strlen(forged));
	close(fd);
	assert_true(moat_audit_open(path, NULL, &a, &err) < 0);
	assert_non_null(strstr(err.msg, "forged"));
	/* Nor a symlink. */
	unlink(path);
	assert_int_equal(symlink("/dev/null", path), 0);
	assert_true(moat_audit_open(path, NULL, &a, &err) < 0);
	unlink(path);
}

/* A long-lived writer restarted after a SIGKILL that cut its last write
 * short: the partial tail is set aside byte for byte, the log cut back to
 * its last newline, an audit.partial_tail event names both, and the whole
 * file verifies. A log that ends whole is left as it is; a "tail" longer
 * than a line can be is refused, as moat_audit_open refuses it. */
static void test_open_recover(void **state)
{
	(void)state;
	moat_error err = {0};
	size_t len;
	free(fresh_log(&len));
	static const char part[] = "{\"seq\":6,\"time\":\"2024-05";
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, part, strlen(part)), (ssize_t)strlen(part));
	close(fd);
	char moved[PATH_MAX], want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s.partial-%zu", path, len);
	unlink(want);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open_recover(path, NULL, &a, moved, &err), 0);
	assert_string_equal(moved, want);
	assert_int_equal(moat_audit_event(a, "test.after", NULL, MOAT_AUDIT_SYNC, &err), 0);
	moat_audit_close(TAKE_PTR(a));
	_cleanup_free_ char *aside = NULL;
	assert_int_equal(moat__read_file_at(AT_FDCWD, moved, 1 << 20, &aside), (int)strlen(part));
	assert_memory_equal(aside, part, strlen(part));
	_cleanup_free_ char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	assert_int_equal(v.events, 8);
	assert_memory_equal(buf + len, "{\"seq\":6,", 9);
	char *ev = strstr(buf + len, "\"type\":\"audit.partial_tail\"");
	assert_non_null(ev);
	char field[64];
	snprintf(field, sizeof(field), "\"offset\":%zu", len);
	assert_non_null(strstr(buf + len, field));
	snprintf(field, sizeof(field), "\"bytes\":%zu", strlen(part));
	assert_non_null(strstr(buf + len, field));
	assert_non_null(strstr(buf + len, moved));
	unlink(moved);

	/* Whole: nothing set aside, nothing logged about it. */
	assert_int_equal(moat_audit_open_recover(path, NULL, &a, moved, &err), 0);
	assert_string_equal(moved, "");
	moat_audit_close(TAKE_PTR(a));
	free(buf);
	buf = NULL;
	n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	assert_int_equal(v.events, 8);

	/* Only a partial first line: the log starts afresh after it. */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_int_equal(write(fd, part, 10), 10);
	close(fd);
	snprintf(want, sizeof(want), "%s.partial-0", path);
	unlink(want);
	assert_int_equal(moat_audit_open_recover(path, NULL, &a, moved, &err), 0);
	assert_string_equal(moved, want);
	moat_audit_close(TAKE_PTR(a));
	free(buf);
	buf = NULL;
	n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	assert_int_equal(v.events, 2);
	assert_non_null(strstr(buf, "\"type\":\"log.start\""));
	assert_non_null(strstr(buf, "\"type\":\"audit.partial_tail\""));
	/* The name is taken by the same bytes: a recovery killed after it
	 * set the tail aside and before its event was written. Its copy is
	 * this one's, and the writer starts again (it was refused for good,
	 * each restart the same). */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_int_equal(write(fd, part, 10), 10);
	close(fd);
	assert_int_equal(moat_audit_open_recover(path, NULL, &a, moved, &err), 0);
	assert_string_equal(moved, want);
	moat_audit_close(TAKE_PTR(a));
	free(buf);
	buf = NULL;
	n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	assert_non_null(strstr(buf, "\"type\":\"audit.partial_tail\""));
	free(aside);
	aside = NULL;
	assert_int_equal(moat__read_file_at(AT_FDCWD, want, 1 << 20, &aside), 10);
	assert_memory_equal(aside, part, 10);
	/* Taken by other bytes, or a link: refused rather than overwritten,
	 * naming the file. */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_int_equal(write(fd, part + 1, 10), 10);
	close(fd);
	assert_true(moat_audit_open_recover(path, NULL, &a, moved, &err) < 0);
	assert_non_null(strstr(err.msg, "is not a copy of its partial line"));
	unlink(want);
	assert_int_equal(symlink("/dev/null", want), 0);
	assert_true(moat_audit_open_recover(path, NULL, &a, moved, &err) < 0);
	unlink(want);

	/* More than a line can be, without a newline: no cut write. */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_int_equal(write(fd, "{}\n", 3), 3);
	assert_int_equal(ftruncate(fd, 3 + MOAT_AUDIT_MAX_LINE + 10), 0);
	close(fd);
	memset(&err, 0, sizeof(err));
	assert_true(moat_audit_open_recover(path, NULL, &a, moved, &err) < 0);
	assert_non_null(strstr(err.msg, "without a newline"));
	unlink(path);
}

static void test_redaction_in_log(void **state)
{
	(void)state;
	moat_error err = {0};
	unlink(path);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, "s2", &a, &err), 0);
	assert_int_equal(moat_audit_add_secret(a, "API_KEY", "sk-live-42424242", &err), 0);
	assert_int_equal(moat_audit_event(a, "net.request",
					  json_pack("{s:s s:[s]}", "url", "https://x/?k=sk-live-42424242", "argv",
						    "--key=sk-live-42424242"),
					  0, &err),
			 0);
	moat_audit_close(TAKE_PTR(a));
	_cleanup_free_ char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 20, &buf);
	assert_true(n > 0);
	assert_null(strstr(buf, "sk-live"));
	assert_non_null(strstr(buf, "https://x/?k=[REDACTED:API_KEY]"));
	assert_non_null(strstr(buf, "--key=[REDACTED:API_KEY]"));
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
}

static void test_oversize(void **state)
{
	(void)state;
	moat_error err = {0};
	unlink(path);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, "s3", &a, &err), 0);
	_cleanup_free_ char *huge = malloc(MOAT_AUDIT_MAX_LINE + 10);
	memset(huge, 'a', MOAT_AUDIT_MAX_LINE + 9);
	huge[MOAT_AUDIT_MAX_LINE + 9] = '\0';
	assert_int_equal(moat_audit_event(a, "exec", json_pack("{s:s}", "path", huge), 0, &err), 0);
	moat_audit_close(TAKE_PTR(a));
	_cleanup_free_ char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 22, &buf);
	assert_true(n > 0 && n < 4096);
	assert_non_null(strstr(buf, "\"oversize\":"));
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	unlink(path);
}

/* The cap: one audit.overflow event, then only counting; the session's
 * own events still go in, and the log verifies. */
static void test_max_size(void **state)
{
	(void)state;
	moat_error err = {0};
	unlink(path);
	_cleanup_audit_ moat_audit *a = NULL;
	assert_int_equal(moat_audit_open(path, "s4", &a, &err), 0);
	assert_true(moat_audit_set_max_size(a, MOAT_AUDIT_MIN_MAX_SIZE - 1, &err) < 0);
	assert_non_null(strstr(err.msg, "audit.max_size"));
	assert_true(moat_audit_set_max_size(a, MOAT_AUDIT_MAX_MAX_SIZE + 1, &err) < 0);
	assert_int_equal(moat_audit_set_max_size(a, MOAT_AUDIT_MIN_MAX_SIZE, &err), 0);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(moat_audit_event(a, "file.open", json_pack("{s:s s:i}", "path", "/etc/hostname", "i", i),
						  0, &err),
				 0);
	assert_true(moat_audit_dropped(a) > 4000);
	assert_int_equal(moat_audit_event(a, "session.stop", NULL, MOAT_AUDIT_ALWAYS, &err), 0);
	assert_false(moat_audit_failed(a));
	moat_audit_close(TAKE_PTR(a));
	_cleanup_free_ char *buf = NULL;
	int n = moat__read_file_at(AT_FDCWD, path, 1 << 22, &buf);
	assert_true(n > (int)MOAT_AUDIT_MIN_MAX_SIZE - 200 && n < (int)MOAT_AUDIT_MIN_MAX_SIZE + 1024);
	int overflows = 0;
	for (const char *p = buf; (p = strstr(p, "\"type\":\"audit.overflow\"")); p++)
		overflows++;
	assert_int_equal(overflows, 1);
	assert_non_null(strstr(buf, "\"max_size\":65536"));
	/* The session's end is the last line, past the cap. */
	assert_non_null(strstr(buf, "\"type\":\"session.stop\""));
	moat_audit_verdict v;
	assert_int_equal(moat_audit_verify_buffer(buf, (size_t)n, 0, &v), 0);
	unlink(path);
}

static void test_readable(void **state)
{
	(void)state;
	json_t *e = json_pack("{s:i s:s s:s s:s s:s s:i s:s}", "seq", 3, "time", "2024-05-01T12:00:00.000000Z",
			      "session", "x", "type", "file.open", "path", "/etc/my file", "pid", 7, "prev", "00");
	char *s = moat_audit_format_readable(e);
	assert_string_equal(s, "2024-05-01T12:00:00.000000Z file.open     path=\"/etc/my file\" pid=7");
	free(s);
	json_decref(e);
}

/* File names from the sandbox reach the auditor's terminal as text. */
static void test_readable_escapes_controls(void **state)
{
	(void)state;
	json_t *e = json_pack("{s:s s:s s:s s:[s]}", "time", "2024-05-01T12:00:00.000000Z", "type", "file.write",
			      "path", "/out/\x1b[2J\x1b]0;owned\x07x", "argv", "a\xc2\x9b" "b\x7f");
	char *s = moat_audit_format_readable(e);
	assert_string_equal(s, "2024-05-01T12:00:00.000000Z file.write    path=/out/\\x1b[2J\\x1b]0;owned\\x07x "
			       "argv=[\"a\\xc2\\x9bb\\x7f\"]");
	assert_false(moat__has_controls(s, strlen(s)));
	free(s);
	json_decref(e);
	/* --json: a clean line as it is, one with controls re-encoded. */
	const char *clean = "{\"seq\":1,\"path\":\"/caf\xc3\xa9\"}";
	s = moat_audit_format_json_line(clean, strlen(clean));
	assert_string_equal(s, clean);
	free(s);
	const char *dirty = "{\"seq\":1,\"path\":\"/a\xc2\x9b" "b\x7f\",\"n\":\t2}";
	s = moat_audit_format_json_line(dirty, strlen(dirty));
	assert_string_equal(s, "{\"seq\":1,\"path\":\"/a\\u009Bb\\u007f\",\"n\":2}");
	free(s);
	assert_null(moat_audit_format_json_line("{\x1b", 2));
}

static void test_bytes_json(void **state)
{
	(void)state;
	json_t *j = moat_audit_bytes_json("/data/caf\xc3\xa9");
	assert_string_equal(json_string_value(j), "/data/caf\xc3\xa9");
	json_decref(j);
	j = moat_audit_bytes_json("/data/\xff\\x");
	assert_string_equal(json_string_value(j), "/data/\\xff\\x5cx");
	json_decref(j);
}

static int setup(void **state)
{
	(void)state;
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_and_time),
		cmocka_unit_test(test_format_line),
		cmocka_unit_test(test_intact),
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_edit_every_field),
		cmocka_unit_test(test_random_edits),
		cmocka_unit_test(test_blame_names_both_lines),
		cmocka_unit_test(test_readable_escapes_controls),
		cmocka_unit_test(test_max_size),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_swap),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_forged_append),
		cmocka_unit_test(test_append_continues),
		cmocka_unit_test(test_open_recover),
		cmocka_unit_test(test_redaction_in_log),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_readable),
		cmocka_unit_test(test_bytes_json),
	};
	return cmocka_run_group_tests_name("audit", tests, setup, teardown);
}
