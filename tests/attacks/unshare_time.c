/* ATTACK: create a nested time namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(0x00000080)", unshare(0x00000080 /* CLONE_NEWTIME */));
}
