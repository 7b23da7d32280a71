/* ATTACK: create a user namespace with clone3, whose flags seccomp cannot read | LAYER: seccomp (clone3 answers ENOSYS) | REF: CVE-2022-0185 */
#include "attack.h"

int main(void)
{
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} args = {.flags = 0x10000000 /* CLONE_NEWUSER */, .exit_signal = SIGCHLD};
	errno = 0;
	long r = syscall(SYS_clone3, &args, sizeof(args));
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		ESCAPED("clone3(CLONE_NEWUSER) made child %ld", r);
	}
	BLOCKED("clone3 failed: %s", strerror(errno));
}
