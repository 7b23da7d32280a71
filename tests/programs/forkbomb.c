/* A fork bomb whose first process stays alive: every process forks again
 * and again, retrying when fork fails, so only a pids limit (or the end of
 * the run) stops it. Run it only under a pids limit. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	for (;;) {
		if (fork() < 0) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
}
