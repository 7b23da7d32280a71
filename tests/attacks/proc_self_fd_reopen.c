/* ATTACK: reopen stdout through /proc/self/fd/1 for reading to reach the host end | LAYER: pipes, not host files, on fds 0-2 | REF: CVE-2024-21626 class */
#include "attack.h"

int main(void)
{
	char p[64], target[512] = "";
	for (int fd = 0; fd < 3; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (target[0] == '/' && strncmp(target, "/dev/", 5) != 0)
			ESCAPED("fd %d is the host file %s", fd, target);
	}
	BLOCKED("standard streams are pipes or sandbox devices");
}
