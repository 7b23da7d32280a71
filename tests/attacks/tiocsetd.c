/* ATTACK: change the terminal line discipline (n_hdlc race) | LAYER: seccomp (ioctl TIOCSETD) | REF: CVE-2017-2636 */
/* RUN: -t */
#include "attack.h"

int main(void)
{
	int ldisc = 13; /* N_HDLC */
	errno = 0;
	long r = ioctl(0, TIOCSETD, &ldisc);
	if (r == 0)
		ESCAPED("TIOCSETD worked");
	if (errno != EPERM)
		ESCAPED("TIOCSETD reached the kernel (%s)", strerror(errno));
	BLOCKED("refused by the filter");
}
