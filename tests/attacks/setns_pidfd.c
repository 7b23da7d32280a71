/* ATTACK: join the namespaces of pid 1 with setns on a pidfd | LAYER: seccomp (setns) | REF: - */
#include "attack.h"

int main(void)
{
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	if (pfd < 0)
		BLOCKED("pidfd_open(1) refused: %s", strerror(errno));
	EXPECT_FAIL("setns(pidfd of 1, mnt)", syscall(SYS_setns, pfd, 0x00020000 /* CLONE_NEWNS */));
}
