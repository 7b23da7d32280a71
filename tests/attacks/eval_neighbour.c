/* ATTACK: one benchmark sample plants files and a lingering process for the samples run beside or after it, and looks for theirs | LAYER: a fresh sandbox per cold sample (own /tmp, /dev/shm, PID namespace), torn down with its processes; a sandbox per worker for warm ones, each sample's cgroup emptied and /tmp cleared before the next is forked | REF: - */
/* RUN: --time 20 */
#include "neighbour.h"

/* Run many at once (moat eval --parallel runs samples side by side, and
 * tests/integration/eval_attacks.sh runs this one as several samples): each
 * copy leaves a marker file named after a random tag in every writable
 * shared place and a child process that keeps it open, then looks for
 * markers and processes of any other copy. Finding one means two samples
 * shared a folder or a process table. */

#define MARK "moat-eval-neighbour-"
#define COMM "moat-neighbour"

int main(void)
{
	char tag[40];
	neighbour_tag(tag, sizeof(tag));
	static const char *const dirs[] = {"/tmp", "/dev/shm", "/var/tmp", "/out", "/"};
	const size_t n = sizeof(dirs) / sizeof(dirs[0]);
	neighbour_plant(dirs, n, MARK, tag);
	pid_t child = neighbour_linger(COMM);
	/* Look a few times, while other copies are still running. */
	for (int round = 0; round < 6; round++) {
		for (size_t i = 0; i < n; i++)
			if (neighbour_file(dirs[i], MARK, tag, false))
				ESCAPED("another sandbox's marker is in %s", dirs[i]);
		if (neighbour_process(child, COMM))
			ESCAPED("another sandbox's process is visible");
		usleep(250 * 1000);
	}
	BLOCKED("no other sandbox's files or processes seen");
}
