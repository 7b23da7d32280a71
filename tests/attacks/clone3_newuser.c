/* ATTACK: create a user namespace with clone3, whose flags seccomp cannot read | LAYER: seccomp (clone3 answers ENOSYS) | REF: CVE-2022-0185 */
#include "attack.h"

int main(void)
{
	struct attack_clone_args args = {.flags = 0x10000000 /* CLONE_NEWUSER */, .exit_signal = SIGCHLD};
	errno = 0;
	clone_verdict("clone3(CLONE_NEWUSER)", syscall(SYS_clone3, &args, sizeof(args)));
}
