/* The keepers' runtime directories (keeper-rundir.c): where they are, and
 * which ones a sweep removes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keeper.h"

static void test_base_path(void **state)
{
	(void)state;
	char p[PATH_MAX];
	assert_int_equal(moat__keeper_base_path(0, "/run/user/0", p, sizeof(p)), 0);
	assert_string_equal(p, "/run/moat/sandboxes");
	assert_int_equal(moat__keeper_base_path(1000, "/run/user/1000", p, sizeof(p)), 0);
	assert_string_equal(p, "/run/user/1000/moat/sandboxes");
	assert_int_equal(moat__keeper_base_path(1000, NULL, p, sizeof(p)), 0);
	assert_string_equal(p, "/tmp/moat-1000/sandboxes");
	/* A relative XDG_RUNTIME_DIR is no runtime directory at all. */
	assert_int_equal(moat__keeper_base_path(1000, "run/user", p, sizeof(p)), 0);
	assert_string_equal(p, "/tmp/moat-1000/sandboxes");
	assert_int_equal(moat__keeper_base_path(1000, "/x", p, 8), -ENAMETOOLONG);
}

static void test_socket_path(void **state)
{
	(void)state;
	char p[PATH_MAX];
	moat_error err = {0};
	assert_int_equal(moat_keeper_socket_path("../../etc/passwd", p, sizeof(p), &err), -EINVAL);
	assert_string_equal(err.msg, "sandbox id: not one moat makes (24 lower-case hex digits)");
	assert_int_equal(moat_keeper_socket_path("0123456789abcdef01234567", p, sizeof(p), &err), 0);
	assert_non_null(strstr(p, "/sandboxes/0123456789abcdef01234567/ctl"));
}

/* A runtime directory as a keeper leaves it: lock (with pid or empty),
 * socket. */
static void make_one(int base, const char *id, const char *lock_text)
{
	assert_int_equal(mkdirat(base, id, 0700), 0);
	int d = openat(base, id, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	if (lock_text) {
		int l = openat(d, "lock", O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(l >= 0);
		assert_int_equal(write(l, lock_text, strlen(lock_text)), (ssize_t)strlen(lock_text));
		close(l);
	}
	int s = openat(d, "ctl", O_WRONLY | O_CREAT | O_EXCL, 0600);
	close(s);
	close(d);
}

static bool exists(int base, const char *id)
{
	struct stat st;
	return fstatat(base, id, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_sweep(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/moat-test-rundir.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	int base = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(base >= 0);
	const char *dead = "aaaaaaaaaaaaaaaaaaaaaaaa", *live = "bbbbbbbbbbbbbbbbbbbbbbbb",
		   *young = "cccccccccccccccccccccccc", *nolock = "dddddddddddddddddddddddd",
		   *notid = "eeee", *extra = "ffffffffffffffffffffffff";
	make_one(base, dead, "123\n");
	make_one(base, live, "456\n");
	make_one(base, young, "");
	make_one(base, nolock, NULL);
	make_one(base, notid, "1\n");
	make_one(base, extra, "1\n");
	int x = openat(base, "ffffffffffffffffffffffff/planted", O_WRONLY | O_CREAT, 0600);
	close(x);
	/* A live keeper holds its lock (here: this process, through its own
	 * open file description). */
	int held = openat(base, "bbbbbbbbbbbbbbbbbbbbbbbb/lock", O_RDONLY | O_CLOEXEC);
	assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);

	assert_int_equal(moat__keeper_sweep(base), 1);
	assert_false(exists(base, dead));
	assert_true(exists(base, live));  /* its keeper lives */
	assert_true(exists(base, young)); /* between making its lock and writing its pid */
	assert_true(exists(base, nolock)); /* not a keeper's (yet) */
	assert_true(exists(base, notid));  /* not a name moat makes */
	assert_true(exists(base, extra));  /* holds what a keeper never makes */

	close(held);
	assert_int_equal(moat__keeper_sweep(base), 1);
	assert_false(exists(base, live));
	close(base);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_path),
		cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
