/* ATTACK: mount sysfs to reach /sys/kernel and /sys/fs/cgroup | LAYER: seccomp (mount) | REF: - */
#include "attack.h"

int main(void)
{
	mkdir("/tmp/sys", 0755);
	EXPECT_FAIL("mount sysfs", mount("sysfs", "/tmp/sys", "sysfs", 0, NULL));
}
