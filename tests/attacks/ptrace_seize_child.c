/* ATTACK: seize its own child with PTRACE_SEIZE | LAYER: seccomp (ptrace) | REF: - */
#include "attack.h"

int main(void)
{
	pid_t kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	errno = 0;
	long r = syscall(SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, kid, 0, 0);
	int e = errno;
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	if (r == 0)
		ESCAPED("seized child %d", kid);
	BLOCKED("PTRACE_SEIZE failed: %s", strerror(e));
}
