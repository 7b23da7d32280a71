/* Unit tests: resolving host paths without following links a sandbox could
 * have planted (hostpath.h). The pure rule, then the resolver on a scratch
 * folder: links owned by anyone but root are refused in every component. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostpath.h"
#include "util.h"

static char base[256];

/* A link owned by someone other than root: as root, hand it to nobody. */
static void untrusted_link(const char *target, const char *path)
{
	assert_int_equal(symlink(target, path), 0);
	if (geteuid() == 0)
		assert_int_equal(lchown(path, 65534, 65534), 0);
}

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof(base), "%s/moat-hostpath-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base))
		return -1;
	char p[512];
	snprintf(p, sizeof(p), "%s/dir", base);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/dir/file", base);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs("data\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/target", base);
	mkdir(p, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_trust_rule(void **state)
{
	(void)state;
	assert_true(moat__hostpath_link_trusted(0));
	assert_false(moat__hostpath_link_trusted(1000));
	assert_false(moat__hostpath_link_trusted(65534));
	moat_error err = {0};
	assert_int_equal(moat__hostpath_refuse(&err, "filesystem.out:", "/a/b", "/a", 1000), -MOAT_EINPUT);
	assert_string_equal(err.msg, "filesystem.out: /a/b: /a is a symbolic link owned by uid 1000; moat follows only links "
				     "owned by root in host paths (give the real path)");
}

static void test_plain_paths(void **state)
{
	(void)state;
	char p[512];
	moat_error err = {0};
	snprintf(p, sizeof(p), "%s/dir/file", base);
	_cleanup_close_ int fd = moat__hostpath_open("x", p, O_RDONLY, 0, &err);
	assert_true(fd >= 0);
	char buf[8] = {0};
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 5);
	assert_string_equal(buf, "data\n");
	snprintf(p, sizeof(p), "%s/dir/", base);
	_cleanup_close_ int d = moat__hostpath_open("x", p, O_RDONLY | O_DIRECTORY, 0, &err);
	assert_true(d >= 0);
	snprintf(p, sizeof(p), "%s/target/../dir/./file", base);
	_cleanup_close_ int f2 = moat__hostpath_open("x", p, O_RDONLY, 0, &err);
	assert_true(f2 >= 0);
	snprintf(p, sizeof(p), "%s/dir/missing", base);
	assert_int_equal(moat__hostpath_open("x", p, O_RDONLY, 0, &err), -ENOENT);
	assert_int_equal(moat__hostpath_open("x", "", O_RDONLY, 0, &err), -MOAT_EINPUT);
}

static void test_untrusted_links_refused(void **state)
{
	(void)state;
	char p[512], t[512];
	moat_error err = {0};
	/* As the last component, and as a parent folder of a file to create. */
	snprintf(t, sizeof(t), "%s/target", base);
	snprintf(p, sizeof(p), "%s/planted", base);
	untrusted_link(t, p);
	assert_int_equal(moat__hostpath_open("--out", p, O_RDONLY | O_DIRECTORY, 0, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "is a symbolic link owned by uid"));
	assert_int_equal(moat__hostpath_open("--out", p, O_PATH, 0, &err), -MOAT_EINPUT);
	snprintf(p, sizeof(p), "%s/planted/new.json", base);
	assert_int_equal(moat__hostpath_open("--result", p, O_WRONLY | O_CREAT, 0644, &err), -MOAT_EINPUT);
	snprintf(p, sizeof(p), "%s/target/new.json", base);
	struct stat st;
	assert_int_equal(stat(p, &st), -1);
	/* A dangling one where a file would be created. */
	snprintf(t, sizeof(t), "%s/target/made", base);
	snprintf(p, sizeof(p), "%s/dangling", base);
	untrusted_link(t, p);
	assert_int_equal(moat__hostpath_open("--audit", p, O_RDWR | O_CREAT | O_APPEND, 0600, &err), -MOAT_EINPUT);
	assert_int_equal(stat(t, &st), -1);
}

/* Links root made are followed: only root can run this part. */
static void test_root_links_followed(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char p[512], t[512];
	moat_error err = {0};
	snprintf(t, sizeof(t), "%s/dir", base);
	snprintf(p, sizeof(p), "%s/rootlink", base);
	assert_int_equal(symlink(t, p), 0);
	snprintf(p, sizeof(p), "%s/rootlink/file", base);
	_cleanup_close_ int fd = moat__hostpath_open("x", p, O_RDONLY, 0, &err);
	assert_true(fd >= 0);
	/* Relative, and through a chain of two. */
	snprintf(p, sizeof(p), "%s/rel", base);
	assert_int_equal(symlink("dir", p), 0);
	snprintf(p, sizeof(p), "%s/chain", base);
	assert_int_equal(symlink("rel/file", p), 0);
	_cleanup_close_ int f2 = moat__hostpath_open("x", p, O_RDONLY, 0, &err);
	assert_true(f2 >= 0);
	/* With O_NOFOLLOW the last component is never a link, even root's. */
	snprintf(p, sizeof(p), "%s/rootlink", base);
	assert_int_equal(moat__hostpath_open("--audit", p, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW, 0600, &err),
			 -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "is a symbolic link"));
	/* A loop ends with ELOOP, not a hang. */
	snprintf(p, sizeof(p), "%s/loop", base);
	assert_int_equal(symlink("loop", p), 0);
	assert_int_equal(moat__hostpath_open("x", p, O_RDONLY, 0, &err), -ELOOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trust_rule),
		cmocka_unit_test(test_plain_paths),
		cmocka_unit_test(test_untrusted_links_refused),
		cmocka_unit_test(test_root_links_followed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
