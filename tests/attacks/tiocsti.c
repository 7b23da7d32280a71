/* ATTACK: push a command into the terminal input with TIOCSTI, to run after the sandbox exits | LAYER: seccomp (ioctl TIOCSTI), new session | REF: CVE-2017-5226 */
/* RUN: -t */
#include "attack.h"

int main(void)
{
	int fds[] = {0, 1, 2, open("/dev/tty", O_RDWR | O_CLOEXEC)};
	for (size_t i = 0; i < 4; i++) {
		if (fds[i] < 0)
			continue;
		char c = '#';
		if (ioctl(fds[i], TIOCSTI, &c) == 0)
			ESCAPED("TIOCSTI on fd %d worked", fds[i]);
		if (errno != EPERM && isatty(fds[i]))
			ESCAPED("TIOCSTI on tty fd %d reached the kernel (%s)", fds[i], strerror(errno));
	}
	BLOCKED("TIOCSTI refused: %s", strerror(errno));
}
