/* ATTACK: TIOCSTI with high bits set in the request, which a 64-bit comparison misses | LAYER: seccomp (ioctl compared on the low 32 bits) | REF: CVE-2019-10063 */
/* RUN: -t */
#include "attack.h"

int main(void)
{
	char c = '#';
	errno = 0;
	long r = syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c);
	if (r == 0)
		ESCAPED("TIOCSTI with high bits worked");
	if (errno != EPERM)
		ESCAPED("TIOCSTI with high bits reached the kernel (%s)", strerror(errno));
	BLOCKED("refused by the filter: %s", strerror(errno));
}
