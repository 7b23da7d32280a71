/* ATTACK: a moat eval sample signals the warm interpreter it was forked from (and every other process of the sandbox outside its session) | LAYER: the sample's own Landlock domain, scoped against signals to processes outside it | REF: - */
#include "eval_warm.h"

int main(void)
{
	pid_t pids[256];
	size_t n = outsiders(pids, 256);
	if (n == 0)
		BROKEN("no process outside this session to aim at");
	/* SIGURG is ignored by default: one that arrived would change
	 * nothing, but its delivery alone is the escape. */
	for (size_t i = 0; i < n; i++)
		MUST_FAIL("kill(outsider, SIGURG)", kill(pids[i], SIGURG));
	for (size_t i = 0; i < n; i++)
		MUST_FAIL("kill(outsider, 0)", kill(pids[i], 0));
	BLOCKED("no signal reached any of %zu processes outside the sample", n);
}
