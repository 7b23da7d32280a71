/* ATTACK: find file descriptors leaked in from the host and reach the host through them | LAYER: init closes every fd above 2 at execve | REF: CVE-2024-21626 */
#include "attack.h"

int main(void)
{
	struct stat st;
	for (int fd = 3; fd < 4096; fd++) {
		if (fstat(fd, &st) < 0)
			continue;
		char p[64], target[512] = "";
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n > 0)
			target[n] = '\0';
		/* The attack's own fds (none are opened before this loop) would be a
		 * bug here too: nothing should be open above 2. */
		ESCAPED("fd %d is open at start (%s)", fd, target);
	}
	BLOCKED("only stdin, stdout and stderr are open");
}
