/* ATTACK: point kernel.modprobe at an attacker program | LAYER: read-only /proc/sys | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open /proc/sys/kernel/modprobe for writing", open("/proc/sys/kernel/modprobe", O_WRONLY | O_CLOEXEC));
}
