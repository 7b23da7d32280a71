/* ATTACK: watch the host's shared /usr inodes with inotify, to see live which programs host users run | LAYER: seccomp (inotify, code profile), per-namespace inotify limits | REF: - */
#include "attack.h"

#include <sys/inotify.h>

int main(void)
{
	/* /usr/bin is the host's own directory, bound read-only: an IN_OPEN
	 * watch on it reports every program any host user starts. */
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		BLOCKED("inotify_init1: %s", strerror(errno));
	int wd = inotify_add_watch(fd, "/usr/bin", IN_OPEN | IN_ACCESS);
	if (wd < 0)
		BLOCKED("inotify_add_watch /usr/bin: %s", strerror(errno));
	ESCAPED("watching the host's /usr/bin (wd %d): every program host users run shows here", wd);
}
