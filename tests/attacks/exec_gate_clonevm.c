/* ATTACK: get a program an exec.approve rule holds run without approval: a CLONE_VM sibling (another process, one thread each, sharing the caller's memory) rewrites argv[1] from "status" to "push" while the caller is stopped in execve | LAYER: exec gate: every task sharing the caller's mm (kcmp KCMP_VM) must be a vfork parent waiting for it, else the exec is refused (EPERM) | REF: kcmp(2) */
#include "exec_gate.h"
#include <sched.h>
#include <signal.h>

static char arg[16] = "status";
static char stack[65536] __attribute__((aligned(16)));

static int flipper(void *p)
{
	(void)p;
	for (;;) {
		memcpy(arg, "push\0\0", 6);
		memcpy(arg, "status", 6);
	}
	return 0;
}

static char child_stack[65536] __attribute__((aligned(16)));

/* One try, in a process of its own: a CLONE_VM sibling flips the argument
 * while this process execs. */
static int try_once(void *p)
{
	const char *prog = p;
	pid_t sib = clone(flipper, stack + sizeof(stack), CLONE_VM | SIGCHLD, NULL);
	if (sib < 0)
		_exit(98);
	char *argv[] = {"git", arg, NULL};
	execv(prog, argv);
	int e = errno;
	kill(sib, SIGKILL);
	_exit(100 + e);
}

int main(void)
{
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	int eperm = 0, ran = 0, other = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		/* A fresh memory per try (fork), shared within it. */
		pid_t pid = fork();
		if (pid < 0)
			BROKEN("fork: %s", strerror(errno));
		if (pid == 0)
			try_once((void *)prog);
		int rc = gate_wait(pid);
		if (rc == 100 + EPERM)
			eperm++;
		else if (rc == 0)
			ran++;
		else
			other++;
	}
	(void)child_stack;
	gate_verdict(log, eperm, ran, other);
}
