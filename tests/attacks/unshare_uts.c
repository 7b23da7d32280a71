/* ATTACK: create a nested uts namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWUTS)", unshare(CLONE_NEWUTS));
}
