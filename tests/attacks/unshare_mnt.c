/* ATTACK: create a nested mnt namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
}
