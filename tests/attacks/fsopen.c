/* ATTACK: create a superblock with the new mount API (fsopen) | LAYER: seccomp (fsopen) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("fsopen tmpfs", syscall(SYS_fsopen, "tmpfs", 0));
}
