/* ATTACK: join the namespaces of pid 1 with setns on /proc/1/ns/... | LAYER: seccomp (setns) | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const ns[] = {"/proc/1/ns/mnt", "/proc/1/ns/user", "/proc/1/ns/net", "/proc/self/ns/mnt"};
	for (size_t i = 0; i < 4; i++) {
		int fd = open(ns[i], O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			MUST_FAIL(ns[i], syscall(SYS_setns, fd, 0));
	}
	BLOCKED("setns refused: %s", strerror(errno));
}
