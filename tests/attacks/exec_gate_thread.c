/* ATTACK: get a program an exec.approve rule holds run without approval: a second thread rewrites argv[1] from "status" to "push" between the gate's check and the kernel's own read | LAYER: exec gate: a caller with more than one thread is refused (EPERM) before its argv is trusted | REF: seccomp_unotify(2) */
#include "exec_gate.h"
#include <pthread.h>

static char arg[16] = "status";
static volatile int stop;

static void *flipper(void *p)
{
	(void)p;
	while (!stop) {
		memcpy(arg, "push\0\0", 6);
		memcpy(arg, "status", 6);
	}
	return NULL;
}

int main(void)
{
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	int eperm = 0, ran = 0, other = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		pid_t pid = fork();
		if (pid < 0)
			BROKEN("fork: %s", strerror(errno));
		if (pid == 0) {
			pthread_t t;
			if (pthread_create(&t, NULL, flipper, NULL) != 0)
				_exit(99);
			char *argv[] = {"git", arg, NULL};
			execv(prog, argv);
			_exit(100 + errno);
		}
		int rc = gate_wait(pid);
		if (rc == 100 + EPERM)
			eperm++;
		else if (rc == 0)
			ran++;
		else
			other++;
	}
	gate_verdict(log, eperm, ran, other);
}
