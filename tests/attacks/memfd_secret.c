/* ATTACK: keep a path in memfd_secret memory, which /proc/PID/mem cannot read, to hide it from the file trail | LAYER: seccomp (memfd_secret) | REF: - */
#include "attack.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

int main(void)
{
	errno = 0;
	long fd = syscall(SYS_memfd_secret, 0);
	if (fd >= 0)
		ESCAPED("memfd_secret returned a descriptor (%ld)", fd);
	/* The filter answers EPERM whether or not the kernel has secret
	 * memory; any other answer means the call reached the kernel. */
	if (errno != EPERM)
		ESCAPED("memfd_secret reached the kernel: %s", strerror(errno));
	BLOCKED("memfd_secret failed: %s", strerror(errno));
}
