/* ATTACK: fork without end (bounded at 4096 children) to exhaust the host's process table | LAYER: pids limit (cgroup or RLIMIT_NPROC) | REF: - */
/* RUN: --pids 64 | EXPECT: pids_limit */
#include "attack.h"

int main(void)
{
	int made = 0;
	for (; made < 4096; made++) {
		pid_t k = fork();
		if (k == 0) {
			pause();
			_exit(0);
		}
		if (k < 0)
			break;
	}
	kill(0, SIGKILL);
	if (made >= 4096)
		ESCAPED("forked %d processes", made);
	BLOCKED("fork failed after %d children", made);
}
