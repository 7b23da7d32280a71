/* ATTACK: get a program an exec.approve rule holds run without approval: exec "push" through a link in /tmp (or in a read-only bind of a folder the sandbox writes through another mount) that another process swaps between a harmless program and the held one (a program, not a script, $MOAT_GATE_PROGRAM), so that the gate resolves the harmless one and the kernel, resolving again after the answer, the held one | LAYER: exec gate: an exec whose arguments a rule holds for another program is refused (EPERM) when its path goes through a folder or link the sandbox can change (not on a read-only mount, or on one that a writable mount of the same filesystem also shows) or starts from a working folder or descriptor | REF: seccomp_unotify(2) (SECCOMP_USER_NOTIF_FLAG_CONTINUE) */
#include "exec_gate.h"
#include <stdio.h>

/* The swapper: one rename in eight points the link at the held program,
 * the others at /bin/true; a rename replaces the link at once, so the
 * path always resolves. A try the gate sees as the held program is held
 * and waits out the session's short timeout. */
static void swapper(const char *dir, const char *prog)
{
	char n[256], g[256];
	snprintf(n, sizeof(n), "%s/n", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	for (unsigned k = 0;; k++) {
		unlink(n);
		if (symlink((k & 7) == 0 ? prog : "/bin/true", n) < 0 || rename(n, g) < 0)
			_exit(3);
	}
}

/* Run as the held program (a copy of this file's program): record the
 * arguments, as the stand-in for git does. A script would not do: its
 * interpreter opens the script by its path again, after the swap back. */
static int as_held(char **argv)
{
	FILE *f = fopen(need_env("MOAT_GATE_LOG"), "a");
	for (int i = 1; f && argv[i]; i++)
		fprintf(f, "%s%s", argv[i], argv[i + 1] ? " " : "\n");
	if (f)
		fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "push") == 0)
		return as_held(argv);
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	/* Where the links are made ($MOAT_GATE_SWAP_DIR, /tmp if unset),
	 * and the path the execs take to them ($MOAT_GATE_SWAP_VIA, the
	 * same if unset): a read-only bind of a folder the sandbox can
	 * write through another mount reaches the same links. */
	const char *base = getenv("MOAT_GATE_SWAP_DIR"), *via = getenv("MOAT_GATE_SWAP_VIA");
	base = base && *base ? base : "/tmp";
	via = via && *via ? via : base;
	char dir[256], g[300];
	snprintf(dir, sizeof(dir), "%s/linkswap.%d", base, (int)getpid());
	snprintf(g, sizeof(g), "%s/g", dir);
	if (mkdir(dir, 0700) < 0 || symlink("/bin/true", g) < 0)
		BROKEN("set up %s: %s", dir, strerror(errno));
	pid_t sw = fork();
	if (sw < 0)
		BROKEN("fork: %s", strerror(errno));
	if (sw == 0)
		swapper(dir, prog);
	snprintf(g, sizeof(g), "%s/linkswap.%d/g", via, (int)getpid());
	int eperm = 0, ran = 0, other = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		pid_t pid = fork();
		if (pid < 0)
			BROKEN("fork: %s", strerror(errno));
		if (pid == 0) {
			char *av[] = {"git", "push", "origin", NULL};
			execv(g, av);
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
	kill(sw, SIGKILL);
	waitpid(sw, NULL, 0);
	printf("# %d refused with EPERM, %d ran, %d other\n", eperm, ran, other);
	if (gate_push_ran(log))
		ESCAPED("a push ran that no one approved (the kernel resolved the swapped link after the gate's check)");
	if (ran)
		ESCAPED("%d execs of \"push\" through a link the sandbox can swap went on unchecked", ran);
	if (eperm == 0)
		BROKEN("no exec was refused: did the tries run at all?");
	BLOCKED("all %d execs of \"push\" through a link the sandbox can swap refused", eperm);
}
