/* ATTACK: a moat eval sample runs in the warm interpreter's cgroup, where its memory, processes and CPU would be counted against the sandbox instead of its own limits | LAYER: each sample is moved into a cgroup of its own, with its limits, before it starts | REF: - */
#include "eval_warm.h"

int main(void)
{
	/* Run as the sample itself (tests/integration/eval_warm_attacks.sh
	 * execs it from the sample): its parent is the warm interpreter, or
	 * the sandbox's init (pid 1) in a cold run, whose command shares the
	 * run's own cgroup by design. */
	pid_t parent = getppid();
	if (parent == 1)
		BLOCKED("a cold run: the command's cgroup is the run's own");
	char path[64], mine[1024], theirs[1024];
	if (slurp("/proc/self/cgroup", mine, sizeof(mine)) < 0)
		BROKEN("read /proc/self/cgroup: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)parent);
	if (slurp(path, theirs, sizeof(theirs)) < 0)
		BROKEN("read %s: %s", path, strerror(errno));
	if (strcmp(mine, theirs) == 0)
		ESCAPED("the sample shares the warm interpreter's cgroup: %s", mine);
	BLOCKED("the sample's cgroup is not the warm interpreter's");
}
