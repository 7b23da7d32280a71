/* ATTACK: call getpid and mount through int 0x80, the i386 ABI of a 64-bit kernel | LAYER: seccomp (foreign ABIs answer ENOSYS) or no IA32 emulation | REF: - */
#include "attack.h"

int main(void)
{
	fflush(stdout);
	pid_t kid = fork();
	if (kid == 0) {
		long ret;
		/* i386 getpid is 20. */
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11");
		if (ret == getpid())
			_exit(10);
		_exit(11);
	}
	int st = 0;
	waitpid(kid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 10)
		ESCAPED("int 0x80 getpid reached the kernel");
	if (WIFSIGNALED(st))
		BLOCKED("int 0x80 killed by signal %d (no IA32 emulation here)", WTERMSIG(st));
	BLOCKED("int 0x80 refused");
}
