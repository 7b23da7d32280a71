/* ATTACK: create a nested pid namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWPID)", unshare(CLONE_NEWPID));
}
