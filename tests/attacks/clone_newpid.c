/* ATTACK: create a nested pid namespace with raw clone | LAYER: seccomp (clone flags) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	clone_verdict("clone(CLONE_NEWPID)", syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0));
}
