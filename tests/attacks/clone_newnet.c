/* ATTACK: create a nested net namespace with raw clone | LAYER: seccomp (clone flags) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	clone_verdict("clone(CLONE_NEWNET)", syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0));
}
