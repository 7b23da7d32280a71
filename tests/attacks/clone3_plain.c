/* ATTACK: clone3 without namespace flags (it must fail with ENOSYS so libc falls back) | LAYER: seccomp (clone3) | REF: - */
#include "attack.h"

int main(void)
{
	struct attack_clone_args args = {.exit_signal = SIGCHLD};
	errno = 0;
	long r = syscall(SYS_clone3, &args, sizeof(args));
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		ESCAPED("clone3 reached the kernel (child %ld)", r);
	}
	if (errno != ENOSYS)
		ESCAPED("clone3 failed with %s, not ENOSYS: libc would not fall back", strerror(errno));
	pid_t kid = fork();
	if (kid == 0)
		_exit(0);
	if (kid < 0)
		BROKEN("fork after clone3: %s", strerror(errno));
	waitpid(kid, NULL, 0);
	BLOCKED("clone3 answers ENOSYS and fork still works");
}
