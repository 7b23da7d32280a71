/* ATTACK: take every inotify instance and watch of the caller's host user (the sandbox's user namespace belongs to the caller) | LAYER: per-namespace limits in /proc/sys/user | REF: - */
/* RUN: --profile agent */
#include "attack.h"

#include <sys/inotify.h>

/* The host's defaults are 128 instances per user and a watch budget sized
 * to memory; the sandbox must get far fewer, so that the caller (host root,
 * when moat runs as root) keeps its own. The agent profile allows inotify
 * (the code profile refuses the call); its limits are what is tested. */
#define INSTANCES_TRIED 1024
#define FILES 20000
#define INSTANCES_BOUND 64
#define WATCHES_BOUND 16384

int main(void)
{
	static int fds[INSTANCES_TRIED];
	int got = 0;
	for (int i = 0; i < INSTANCES_TRIED; i++) {
		int fd = inotify_init1(IN_CLOEXEC);
		if (fd < 0)
			break;
		fds[got++] = fd;
	}
	if (got > INSTANCES_BOUND)
		ESCAPED("held %d inotify instances of the caller's user", got);
	if (got == 0)
		BLOCKED("no inotify instance at all: %s", strerror(errno));
	/* Watches: every instance watches the same files, each pair a watch
	 * of its own, until the kernel refuses. */
	char path[64];
	int files = 0;
	for (; files < FILES; files++) {
		snprintf(path, sizeof(path), "/tmp/w%d", files);
		int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (f < 0)
			break;
		close(f);
	}
	long watches = 0;
	for (int i = 0; i < got; i++)
		for (int k = 0; k < files; k++) {
			snprintf(path, sizeof(path), "/tmp/w%d", k);
			if (inotify_add_watch(fds[i], path, IN_MODIFY) < 0)
				goto done;
			if (++watches > WATCHES_BOUND)
				ESCAPED("held more than %d inotify watches of the caller's user", WATCHES_BOUND);
		}
done:
	BLOCKED("%d instances and %ld watches at most", got, watches);
}
