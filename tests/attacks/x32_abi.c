/* ATTACK: call mount through the x32 ABI, where a native-only filter does not look | LAYER: seccomp (foreign ABIs answer ENOSYS) | REF: - */
#include "attack.h"

int main(void)
{
	errno = 0;
	long r = syscall(0x40000000 | SYS_getpid);
	if (r == getpid())
		ESCAPED("x32 getpid answered %ld", r);
	MUST_FAIL("x32 mount", syscall(0x40000000 | 165 /* mount */, "none", "/tmp", "tmpfs", 0, NULL));
	BLOCKED("x32 system calls refused: %s", strerror(errno));
}
