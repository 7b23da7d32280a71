/* ATTACK: move the /proc mount elsewhere with move_mount | LAYER: seccomp (move_mount) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("move_mount /proc", syscall(SYS_move_mount, AT_FDCWD, "/proc", AT_FDCWD, "/tmp", 0));
}
