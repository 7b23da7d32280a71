/* ATTACK: create a nested user namespace with raw clone | LAYER: seccomp (clone flags) | REF: CVE-2022-0185 */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		ESCAPED("clone(CLONE_NEWUSER) made child %ld", r);
	}
	BLOCKED("clone(CLONE_NEWUSER) failed: %s", strerror(errno));
}
