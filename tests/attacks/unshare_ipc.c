/* ATTACK: create a nested ipc namespace with unshare | LAYER: seccomp (unshare) | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWIPC)", unshare(CLONE_NEWIPC));
}
