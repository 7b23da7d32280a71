/* Shared by the exec_gate_* attacks: each runs in a session whose policy
 * holds `$MOAT_GATE_PROGRAM push ...` for a person (exec.approve) and lets
 * `status` go on. The program records each run's arguments in
 * $MOAT_GATE_LOG. An attack makes execve read "status" when the gate looks
 * and "push" when the kernel runs it, many times; it has escaped when a
 * push ran that no one approved (no one approves during the attack). */
#pragma once
#include "attack.h"
#include <sys/wait.h>

#define GATE_TRIES 200

/* Whether the log names a push. */
static int gate_push_ran(const char *log)
{
	char buf[65536];
	if (slurp(log, buf, sizeof(buf)) < 0)
		return 0;
	return strstr(buf, "push") != NULL;
}

/* Waits for one try's child; its exit code says what execve did: 100 +
 * errno when it failed, else what the program returned (0). */
static int gate_wait(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0)
		BROKEN("waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

/* The verdict after the tries: every racing exec must have been refused
 * (EPERM, the gate's "deny on doubt"), and no push may have run. */
__attribute__((noreturn, unused)) static void gate_verdict(const char *log, int eperm, int ran, int other)
{
	printf("# %d refused with EPERM, %d ran, %d other\n", eperm, ran, other);
	if (gate_push_ran(log))
		ESCAPED("a push ran that no one approved (the kernel read other arguments than the gate)");
	if (ran)
		ESCAPED("%d racing execs went on unchecked", ran);
	if (eperm == 0)
		BROKEN("no exec was refused: did the race run at all?");
	BLOCKED("all %d racing execs refused before the kernel read them again", eperm);
}
