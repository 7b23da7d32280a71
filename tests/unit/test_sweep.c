/* Unit tests: what the next moat sweeps of a killed one (sweep.h), on
 * folders made here in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sweep.h"

#include <sys/socket.h>
#include <sys/un.h>

/* A pid no process has: a child that has been reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

static void test_maker_gone(void **state)
{
	(void)state;
	time_t now = time(NULL);
	/* We are alive and started before now: we may have made it. */
	assert_false(moat__maker_gone(getpid(), now));
	/* Something made a day before we started was made by an earlier
	 * holder of our pid. */
	assert_true(moat__maker_gone(getpid(), now - 86400 * 365));
	assert_true(moat__maker_gone(dead_pid(), now));
	assert_false(moat__maker_gone(0, now));
}

/* The cached answer is the same for every object, each pid is looked up
 * once (one entry), and past the cache's size it still answers. */
static void test_maker_gone_cached(void **state)
{
	(void)state;
	time_t now = time(NULL);
	moat_maker_cache *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	pid_t dead = dead_pid();
	for (int round = 0; round < 2; round++) {
		assert_false(moat__maker_gone_cached(c, getpid(), now));
		assert_true(moat__maker_gone_cached(c, getpid(), now - 86400 * 365));
		assert_true(moat__maker_gone_cached(c, dead, now));
		assert_false(moat__maker_gone_cached(c, 0, now));
	}
	assert_int_equal(c->n, 2);
	c->n = MOAT_MAKER_CACHE_MAX;
	for (size_t i = 0; i < MOAT_MAKER_CACHE_MAX; i++)
		c->v[i].pid = -1;
	assert_false(moat__maker_gone_cached(c, getpid(), now));
	assert_true(moat__maker_gone_cached(c, dead, now));
	assert_int_equal(c->n, MOAT_MAKER_CACHE_MAX);
	free(c);
}

static void make_stage(const char *dir, const char *name, bool with_file)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(mkdir(p, 0711), 0);
	if (with_file) {
		snprintf(p, sizeof(p), "%s/%s/solution.py", dir, name);
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
}

static bool exists(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct stat st;
	return lstat(p, &st) == 0;
}

static void test_sweep_stages(void **state)
{
	(void)state;
	char tmp[] = "/tmp/moat-test-sweep.XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char dead[64], live[64], nested[64], link[64], other[64];
	pid_t d = dead_pid();
	snprintf(dead, sizeof(dead), MOAT_STAGE_PREFIX "%d-abc123", (int)d);
	snprintf(live, sizeof(live), MOAT_STAGE_PREFIX "%d-abc123", (int)getppid());
	snprintf(nested, sizeof(nested), MOAT_STAGE_PREFIX "%d-nested", (int)d);
	snprintf(link, sizeof(link), MOAT_STAGE_PREFIX "%d-link12", (int)d);
	snprintf(other, sizeof(other), "moat-judge.%d", (int)d);
	make_stage(tmp, dead, true);
	make_stage(tmp, live, true);
	make_stage(tmp, other, false);
	/* A folder moat did not fill the way it does is not moat's to empty. */
	make_stage(tmp, nested, false);
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s/sub", tmp, nested);
	assert_int_equal(mkdir(p, 0700), 0);
	/* A link is never followed, even one named like a stage. */
	snprintf(p, sizeof(p), "%s/%s", tmp, link);
	assert_int_equal(symlink(tmp, p), 0);

	assert_int_equal(moat__sweep_stages(tmp), 1);
	assert_false(exists(tmp, dead));
	assert_true(exists(tmp, live));
	assert_true(exists(tmp, nested));
	assert_true(exists(tmp, link));
	assert_true(exists(tmp, other));
	assert_int_equal(moat__sweep_stages(tmp), 0);

	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

/* A nested runs' folder a killed front left: its siblings' files and
 * sock/ with the socket in it. */
static void test_sweep_nest(void **state)
{
	(void)state;
	char tmp[] = "/tmp/moat-test-sweep.XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char dead[64], live[64], p[4096];
	pid_t d = dead_pid();
	snprintf(dead, sizeof(dead), MOAT_NEST_PREFIX "%d-abc123", (int)d);
	snprintf(live, sizeof(live), MOAT_NEST_PREFIX "%d-abc123", (int)getppid());
	make_stage(tmp, dead, true);
	make_stage(tmp, live, true);
	snprintf(p, sizeof(p), "%s/%s/sock", tmp, dead);
	assert_int_equal(mkdir(p, 0755), 0);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/sock/ctl", tmp, dead);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);

	assert_int_equal(moat__sweep_stages(tmp), 1);
	assert_false(exists(tmp, dead));
	assert_true(exists(tmp, live));

	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maker_gone),
		cmocka_unit_test(test_maker_gone_cached),
		cmocka_unit_test(test_sweep_stages),
		cmocka_unit_test(test_sweep_nest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
