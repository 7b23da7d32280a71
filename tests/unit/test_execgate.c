/* The exec gate's pure logic: argument patterns and where in memory an
 * execve's strings may lie. */
#include "execgate.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#define ARGS(s) s, sizeof(s) - 1

static void test_args_match(void **state)
{
	(void)state;
	char *push[] = {"push", "*", NULL};
	assert_true(moat__exec_args_match(push, ARGS("git\0push\0origin\0main\0"), 4));
	assert_true(moat__exec_args_match(push, ARGS("git\0push\0"), 2));
	assert_false(moat__exec_args_match(push, ARGS("git\0status\0"), 2));
	assert_false(moat__exec_args_match(push, ARGS("git\0"), 1));
	assert_false(moat__exec_args_match(push, ARGS("git\0pushx\0"), 2));
	char *exact[] = {"-rf", "/out/*", NULL};
	assert_true(moat__exec_args_match(exact, ARGS("rm\0-rf\0/out/a\0"), 3));
	assert_false(moat__exec_args_match(exact, ARGS("rm\0-rf\0/out/a\0/x\0"), 4));
	assert_false(moat__exec_args_match(exact, ARGS("rm\0-rf\0"), 2));
	/* A "*" that is not last is one argument, any. */
	char *mid[] = {"*", "x", NULL};
	assert_true(moat__exec_args_match(mid, ARGS("p\0a\0x\0"), 3));
	assert_false(moat__exec_args_match(mid, ARGS("p\0x\0"), 2));
	assert_true(moat__exec_args_match(NULL, ARGS("p\0anything\0"), 2));
	char *none[] = {NULL};
	assert_true(moat__exec_args_match(none, ARGS("p\0"), 1));
	assert_false(moat__exec_args_match(none, ARGS("p\0a\0"), 2));
	/* An argv that claims more strings than it holds never matches. */
	assert_false(moat__exec_args_match(push, "git\0pu", 6, 3));
}

static const char maps[] = "00400000-00452000 r-xp 00000000 08:02 173521  /usr/bin/prog\n"
			   "00651000-00652000 rw-p 00051000 08:02 173521  /usr/bin/prog\n"
			   "00652000-00655000 rw-p 00000000 00:00 0       [heap]\n"
			   "7f0000000000-7f0000001000 rw-s 00000000 00:05 1234 /memfd:x (deleted)\n"
			   "7f0000001000-7f0000003000 rw-p 00000000 00:00 0 \n"
			   "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
			   "7f0000004000-7f0000005000 r--p 00000000 00:00 0 \n"
			   "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0       [stack]\n";

static bool file_ok(void *ud, const char *dev, uint64_t inode, const char *name)
{
	return strcmp(dev, "08:02") == 0 && inode == 173521 && strcmp(name, ud) == 0;
}

static void test_maps(void **state)
{
	(void)state;
	const char *why = NULL;
	assert_true(moat__maps_private(maps, 0x652010, 16, NULL, NULL, &why));
	assert_true(moat__maps_private(maps, 0x7ffc00000100, 64, NULL, NULL, &why));
	/* Spanning two adjacent private anonymous mappings. */
	assert_true(moat__maps_private(maps, 0x7f0000002ff0, 0x20, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x7f0000000010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "shared"));
	assert_false(moat__maps_private(maps, 0x651010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "a file the sandbox may write"));
	/* A file the caller vouches for (a read-only mount) is fine. */
	assert_true(moat__maps_private(maps, 0x651010, 8, file_ok, "/usr/bin/prog", &why));
	assert_false(moat__maps_private(maps, 0x651010, 8, file_ok, "/other", &why));
	/* A shared mapping never is, whatever the file. */
	assert_false(moat__maps_private(maps, 0x7f0000000010, 8, file_ok, "/memfd:x (deleted)", &why));
	assert_false(moat__maps_private(maps, 0x400010, 8, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x7f0000004010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "read-only anonymous"));
	/* Running off the end of a good mapping into a bad one. */
	assert_false(moat__maps_private(maps, 0x7f0000003ff0, 0x20, NULL, NULL, &why));
	/* A hole. */
	assert_false(moat__maps_private(maps, 0x10, 4, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x654ff0, 0x20, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, UINT64_MAX - 2, 8, NULL, NULL, &why));
}

/* The "#!" line as the kernel's binfmt_script reads it. */
static void test_script_line(void **state)
{
	(void)state;
	char i[64], a[64];
	const char *s = "#!/usr/bin/git push\nrest";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/usr/bin/git");
	assert_string_equal(a, "push");
	s = "#! \t/bin/sh\n";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/bin/sh");
	assert_string_equal(a, "");
	/* One argument: the rest of the line, blanks inside kept. */
	s = "#!/usr/bin/env  python3 -u  \n";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/usr/bin/env");
	assert_string_equal(a, "python3 -u");
	s = "#!/bin/sh"; /* no newline, the file's end */
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/bin/sh");
	assert_false(moat__exec_script_line("\x7f" "ELF", 4, i, sizeof(i), a, sizeof(a)));
	assert_false(moat__exec_script_line("#!\n", 3, i, sizeof(i), a, sizeof(a)));
	assert_false(moat__exec_script_line("#", 1, i, sizeof(i), a, sizeof(a)));
	/* An interpreter name longer than what the kernel reads: not run. */
	char big[300];
	memset(big, 'x', sizeof(big));
	memcpy(big, "#!/", 3);
	assert_false(moat__exec_script_line(big, sizeof(big), i, sizeof(i), a, sizeof(a)));
	/* A long argument is cut where the kernel stops reading. */
	big[10] = ' ';
	assert_true(moat__exec_script_line(big, sizeof(big), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/xxxxxxx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_line),
		cmocka_unit_test(test_args_match),
		cmocka_unit_test(test_maps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
