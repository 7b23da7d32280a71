/* ATTACK: steal a file descriptor from pid 1 with pidfd_getfd | LAYER: seccomp (pidfd_getfd) | REF: - */
#include "attack.h"

int main(void)
{
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	if (pfd < 0)
		BLOCKED("pidfd_open(1) refused: %s", strerror(errno));
	for (int fd = 0; fd < 16; fd++)
		MUST_FAIL("pidfd_getfd", syscall(SYS_pidfd_getfd, pfd, fd, 0));
	BLOCKED("pidfd_getfd refused: %s", strerror(errno));
}
