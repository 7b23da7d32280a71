/* Unit tests: the file trail's pure parts (event types, path joining). The
 * trail itself is exercised end to end in tests/integration/audit.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>

#include "filetrail.h"

static void test_event_type(void **state)
{
	(void)state;
	assert_string_equal(moat__filetrail_event_type("execve", 0), "exec");
	assert_string_equal(moat__filetrail_event_type("execveat", 0), "exec");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY), "file.open");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "file.open");
	assert_string_equal(moat__filetrail_event_type("open", O_WRONLY), "file.write");
	assert_string_equal(moat__filetrail_event_type("openat2", O_RDWR), "file.write");
	/* Creating or truncating is a write even when opened read-only. */
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_CREAT), "file.write");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_TRUNC), "file.write");
	assert_string_equal(moat__filetrail_event_type("creat", 0), "file.write");
	assert_string_equal(moat__filetrail_event_type("unlinkat", 0), "file.unlink");
	assert_string_equal(moat__filetrail_event_type("rmdir", 0), "file.unlink");
	assert_string_equal(moat__filetrail_event_type("renameat2", 0), "file.rename");
	assert_null(moat__filetrail_event_type("read", 0));
	assert_null(moat__filetrail_event_type(NULL, 0));
}

static void test_join(void **state)
{
	(void)state;
	char *s = moat__filetrail_join("/out", "note.txt");
	assert_string_equal(s, "/out/note.txt");
	free(s);
	s = moat__filetrail_join("/", "etc/hostname");
	assert_string_equal(s, "/etc/hostname");
	free(s);
	s = moat__filetrail_join("/out", "/abs");
	assert_string_equal(s, "/abs");
	free(s);
	/* Unknown base: the path stays as asked. */
	s = moat__filetrail_join(NULL, "rel");
	assert_string_equal(s, "rel");
	free(s);
	/* Nothing is normalised: ".." is what the program asked for. */
	s = moat__filetrail_join("/out", "../etc/passwd");
	assert_string_equal(s, "/out/../etc/passwd");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_type),
		cmocka_unit_test(test_join),
	};
	return cmocka_run_group_tests_name("filetrail", tests, NULL, NULL);
}
