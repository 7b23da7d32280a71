/* ATTACK: get a program an exec.approve rule holds run without approval: argv[1] lies in a MAP_SHARED memfd mapping that a child process rewrites from "status" to "push" while the caller, single-threaded, is stopped in execve | LAYER: exec gate: path and argv must lie in private anonymous memory (/proc/PID/maps), else the exec is refused (EPERM) | REF: seccomp_unotify(2) */
#include "exec_gate.h"
#include <signal.h>
#include <sys/mman.h>

int main(void)
{
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	int fd = memfd_create("argv", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		BROKEN("memfd: %s", strerror(errno));
	char *arg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (arg == MAP_FAILED)
		BROKEN("mmap: %s", strerror(errno));
	strcpy(arg, "status");
	pid_t writer = fork();
	if (writer < 0)
		BROKEN("fork: %s", strerror(errno));
	if (writer == 0) {
		/* The other process's view of the same pages. */
		char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		for (;;) {
			memcpy(w, "push\0\0", 6);
			memcpy(w, "status", 6);
		}
	}
	int eperm = 0, ran = 0, other = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		pid_t pid = fork();
		if (pid < 0)
			BROKEN("fork: %s", strerror(errno));
		if (pid == 0) {
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
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	gate_verdict(log, eperm, ran, other);
}
