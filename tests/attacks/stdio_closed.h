/* The body of the stdio_closed_* attacks: each runs moat with one of its
 * standard descriptors closed (its CLOSE: line) and checks, from inside,
 * that the sandbox's 0, 1 and 2 hold nothing of the host's. */
#pragma once

#include "attack.h"

/* With one of moat's fds 0, 1, 2 closed around it, the verdict also goes
 * to the other stream, so the harness reads it wherever it arrives. */
#define SAY(code, tag, ...)                                                                        \
	do {                                                                                       \
		dprintf(2, tag ": " __VA_ARGS__);                                                  \
		dprintf(2, "\n");                                                                  \
		verdict(code, tag, __VA_ARGS__);                                                   \
	} while (0)

int main(void)
{
	/* Whatever took the free slot on the host side (as root, the audit
	 * log does) must not receive what the sandbox writes: the harness
	 * looks for this mark in every file of the host's test folder. */
	for (int fd = 0; fd <= 2; fd++)
		dprintf(fd, "MOAT-STDIO-MARK {\"type\":\"forged\"}\n");
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
