/* ATTACK: set /sys/kernel/uevent_helper so the kernel runs a program on the next event | LAYER: no /sys in the sandbox | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open /sys/kernel/uevent_helper for writing", open("/sys/kernel/uevent_helper", O_WRONLY | O_CLOEXEC));
}
