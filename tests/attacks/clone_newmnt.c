/* ATTACK: create a nested mnt namespace with raw clone | LAYER: seccomp (clone flags) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	clone_verdict("clone(CLONE_NEWNS)", syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0));
}
