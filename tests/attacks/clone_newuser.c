/* ATTACK: create a nested user namespace with raw clone | LAYER: seccomp (clone flags) | REF: CVE-2022-0185 */
#include "attack.h"
#include <sched.h>

int main(void)
{
	errno = 0;
	clone_verdict("clone(CLONE_NEWUSER)", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}
