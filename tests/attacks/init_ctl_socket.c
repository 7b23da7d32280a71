/* ATTACK: reach the init's control socket (through /proc/1/fd, pidfd_getfd or a descriptor left open) to make it start a process | LAYER: init not dumpable, seccomp (pidfd_getfd), only fds 0-2 cross execve | REF: CVE-2016-9962 */
#include "attack.h"

#include <dirent.h>
#include <stdbool.h>

/* The control socket is a SOCK_SEQPACKET unix socket: with one in hand, a
 * SPAWN message would have the init start anything. */
static bool is_seqpacket(int fd)
{
	struct stat st;
	int type = 0;
	socklen_t len = sizeof(type);
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_SEQPACKET;
}

int main(void)
{
	char p[64], target[256];

	/* The init's descriptor table, listed or opened by number. */
	DIR *d = opendir("/proc/1/fd");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				ESCAPED("/proc/1/fd lists descriptor %s", e->d_name);
		closedir(d);
	}
	for (int fd = 0; fd < 64; fd++) {
		snprintf(p, sizeof(p), "/proc/1/fd/%d", fd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n >= 0)
			ESCAPED("readlink %s: %.*s", p, (int)n, target);
		int o = open(p, O_RDWR | O_CLOEXEC);
		if (o < 0)
			o = open(p, O_RDONLY | O_CLOEXEC);
		if (o >= 0)
			ESCAPED("opened %s (fd %d%s)", p, o, is_seqpacket(o) ? ", the control socket" : "");
		snprintf(p, sizeof(p), "/proc/1/fdinfo/%d", fd);
		o = open(p, O_RDONLY | O_CLOEXEC);
		if (o >= 0)
			ESCAPED("opened %s", p);
	}

	/* Its descriptors copied out with pidfd_getfd. */
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	for (int fd = 0; pfd >= 0 && fd < 64; fd++) {
		int got = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
		if (got >= 0)
			ESCAPED("pidfd_getfd(1, %d) gave fd %d%s", fd, got, is_seqpacket(got) ? ", the control socket" : "");
	}

	/* A copy left open in this process by the init that started it. */
	for (int fd = 0; fd < 4096; fd++)
		if (is_seqpacket(fd))
			ESCAPED("fd %d is a SOCK_SEQPACKET socket left open", fd);

	BLOCKED("the init's control socket is out of reach");
}
