/* ATTACK: reboot(2) the machine (CAD_OFF: harmless if it ever went through) | LAYER: seccomp (reboot), PID namespace | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("reboot(CAD_OFF)", syscall(SYS_reboot, 0xfee1dead, 672274793, 0 /* LINUX_REBOOT_CMD_CAD_OFF */, NULL));
}
