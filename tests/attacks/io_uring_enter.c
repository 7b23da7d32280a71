/* ATTACK: call io_uring_enter and io_uring_register on a made-up ring | LAYER: seccomp (io_uring_enter, io_uring_register) | REF: CVE-2023-2598 */
#include "attack.h"

int main(void)
{
	MUST_FAIL("io_uring_register", syscall(SYS_io_uring_register, 0, 0, NULL, 0) == -1 && errno == EPERM ? -1 : 0);
	errno = 0;
	long r = syscall(SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0);
	if (r == -1 && errno == EPERM)
		BLOCKED("io_uring_enter refused by the filter: %s", strerror(errno));
	ESCAPED("io_uring_enter reached the kernel (errno %s)", strerror(errno));
}
