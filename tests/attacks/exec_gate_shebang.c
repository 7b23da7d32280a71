/* ATTACK: get a program an exec.approve rule holds run without approval: write a script whose "#!" line is the held program with the held argument ("#!/usr/bin/git push") and exec the script, so that the kernel, not the caller, puts "push" in the held program's argv | LAYER: exec gate: the first line of each file an exec names is read as binfmt_script reads it, and a script whose interpreter with its arguments is held is refused (EPERM) | REF: execve(2) "Interpreter scripts" */
#include "exec_gate.h"

int main(void)
{
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	char path[64], line[512];
	snprintf(path, sizeof(path), "/tmp/shebang.%d", (int)getpid());
	snprintf(line, sizeof(line), "#!%s push\n", prog);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) || close(fd) < 0)
		BROKEN("write %s: %s", path, strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		BROKEN("fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = {path, "origin", NULL};
		execv(path, argv);
		_exit(100 + errno);
	}
	int rc = gate_wait(pid);
	unlink(path);
	if (gate_push_ran(log))
		ESCAPED("a push ran that no one approved (the script's interpreter line asked for it)");
	if (rc == 0)
		ESCAPED("the script ran");
	if (rc != 100 + EPERM)
		BROKEN("the exec ended with %d, not EPERM", rc);
	BLOCKED("the script whose interpreter line is \"%s push\" was refused with EPERM", prog);
}
