/* ATTACK: fork without end (bounded at 1024 children) to exhaust the host's process table | LAYER: pids limit (cgroup or RLIMIT_NPROC) | REF: - */
/* RUN: --pids 64 --time 30 | EXPECT: pids_limit */
#include "attack.h"

int main(void)
{
	int made = 0;
	for (; made < 1024; made++) {
		pid_t k = fork();
		if (k == 0) {
			/* Bounded and self-cleaning: every child dies with us. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
		if (k < 0)
			break;
	}
	/* It runs with --pids 64: more children than that means no limit held. */
	if (made > 64)
		ESCAPED("forked %d processes under --pids 64", made);
	BLOCKED("fork failed after %d children", made);
}
