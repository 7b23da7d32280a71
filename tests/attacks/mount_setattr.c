/* ATTACK: clear MOUNT_ATTR_RDONLY on / with mount_setattr | LAYER: seccomp (mount_setattr) | REF: - */
#include "attack.h"

int main(void)
{
	uint64_t attr[4] = {0, 1 /* MOUNT_ATTR_RDONLY to clear */, 0, 0};
	EXPECT_FAIL("mount_setattr /", syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, attr, sizeof(attr)));
}
