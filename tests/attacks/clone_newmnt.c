/* ATTACK: create a nested mnt namespace with raw clone | LAYER: seccomp (clone flags) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	long r = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		ESCAPED("clone(CLONE_NEWNS) made child %ld", r);
	}
	BLOCKED("clone(CLONE_NEWNS) failed: %s", strerror(errno));
}
