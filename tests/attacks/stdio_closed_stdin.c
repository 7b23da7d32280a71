/* ATTACK: moat started with its stdin closed: look for a host descriptor (a cgroup folder, a policy file) that moat opened into the free slot and handed on as the sandbox's stdio | LAYER: moat opens 0, 1 and 2 on /dev/null before anything else (main.c) | REF: - */
/* CLOSE: 0 */
#include "attack.h"

/* With fd 0 closed around moat, the verdict also goes to the other
 * stream, so the harness reads it wherever it arrives. */
#define SAY(code, tag, ...)                                                                        \
	do {                                                                                       \
		dprintf(2, tag ": " __VA_ARGS__);                                                  \
		dprintf(2, "\n");                                                                  \
		verdict(code, tag, __VA_ARGS__);                                                   \
	} while (0)

int main(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		char proc[32], target[256];
		if (fstat(fd, &st) < 0)
			continue;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(proc, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = '\0';
		if (S_ISDIR(st.st_mode) || strncmp(target, "/sys/", 5) == 0 || strstr(target, "cgroup"))
			SAY(1, "ESCAPED", "fd %d is the host's %s", fd, target);
		if (S_ISREG(st.st_mode))
			SAY(1, "ESCAPED", "fd %d is a host file: %s", fd, target);
	}
	SAY(0, "BLOCKED", "stdio holds only /dev/null, pipes and terminals");
}
