/* ATTACK: pivot_root to a directory of the attacker's choosing | LAYER: seccomp (pivot_root) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
}
