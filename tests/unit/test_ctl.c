/* The control channel (ctl.c): descriptors riding along with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox-internal.h"

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* SPAWN carries the command's three streams in one message. */
static void test_three_fds_in_one_message(void **state)
{
	(void)state;
	int sp[2], p1[2], p2[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(p1, O_CLOEXEC), 0);
	assert_int_equal(pipe2(p2, O_CLOEXEC), 0);
	int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int fds[3] = {dn, p1[1], p2[1]};
	assert_int_equal(moat__ctl_send_fds(sp[0], MOAT_CTL_SPAWN, 7, fds, 3), 0);
	moat_ctl_msg m;
	int got[3] = {-1, -1, -1};
	size_t n = 0;
	assert_int_equal(moat__ctl_recv_fds(sp[1], &m, got, 3, &n), 0);
	assert_int_equal(m.type, MOAT_CTL_SPAWN);
	assert_int_equal(m.a, 7);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_true(same_file(got[i], fds[i]));
		assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
		close(got[i]);
	}
	close(dn);
	close(p1[0]);
	close(p1[1]);
	close(p2[0]);
	close(p2[1]);
	close(sp[0]);
	close(sp[1]);
}

/* A receiver that takes fewer than were sent keeps none of the rest, and
 * the one-descriptor receive still works on a message of several. */
static void test_extra_fds_are_closed(void **state)
{
	(void)state;
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int fds[3] = {dn, dn, dn};
	int before = open_fds();
	assert_int_equal(moat__ctl_send_fds(sp[0], MOAT_CTL_SPAWN, 0, fds, 3), 0);
	moat_ctl_msg m;
	int got = -1;
	assert_int_equal(moat__ctl_recv(sp[1], &m, &got), 0);
	assert_true(got >= 0 && same_file(got, dn));
	close(got);
	assert_int_equal(open_fds(), before);
	assert_int_equal(moat__ctl_send_fds(sp[0], MOAT_CTL_SPAWN, 0, fds, 3), 0);
	assert_int_equal(moat__ctl_recv(sp[1], &m, NULL), 0);
	assert_int_equal(open_fds(), before);
	/* More than a message may carry is refused before anything is sent. */
	int five[MOAT_CTL_MAX_FDS + 1];
	for (size_t i = 0; i < MOAT_CTL_MAX_FDS + 1; i++)
		five[i] = dn;
	assert_int_equal(moat__ctl_send_fds(sp[0], MOAT_CTL_SPAWN, 0, five, MOAT_CTL_MAX_FDS + 1), -EINVAL);
	close(dn);
	close(sp[0]);
	close(sp[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_fds_in_one_message),
		cmocka_unit_test(test_extra_fds_are_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
