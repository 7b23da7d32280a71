/* ATTACK: create a nested cgroup namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWCGROUP)", unshare(CLONE_NEWCGROUP));
}
