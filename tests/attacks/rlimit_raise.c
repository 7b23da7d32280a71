/* ATTACK: raise the hard RLIMIT_NOFILE and RLIMIT_CORE moat set | LAYER: caps dropped (CAP_SYS_RESOURCE) | REF: - */
#include "attack.h"
#include <sys/resource.h>

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max != RLIM_INFINITY) {
		rl.rlim_max = rl.rlim_max * 2 + 1;
		rl.rlim_cur = rl.rlim_max;
		MUST_FAIL("raise RLIMIT_NOFILE", setrlimit(RLIMIT_NOFILE, &rl));
	}
	struct rlimit core = {RLIM_INFINITY, RLIM_INFINITY};
	EXPECT_FAIL("raise RLIMIT_CORE", setrlimit(RLIMIT_CORE, &core));
}
