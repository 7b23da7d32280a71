/* ATTACK: paste into a virtual console with TIOCLINUX | LAYER: seccomp (ioctl TIOCLINUX) | REF: CVE-2023-1523 class */
/* RUN: -t */
#include "attack.h"

int main(void)
{
	char sub[2] = {3 /* TIOCL_PASTESEL */, 0};
	errno = 0;
	long r = syscall(SYS_ioctl, 0, 0x541CUL, sub);
	if (r == 0)
		ESCAPED("TIOCLINUX worked");
	if (errno != EPERM)
		ESCAPED("TIOCLINUX reached the kernel (%s)", strerror(errno));
	BLOCKED("refused by the filter");
}
