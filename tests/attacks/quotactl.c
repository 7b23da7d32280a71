/* ATTACK: query or change disk quotas of the host file system | LAYER: seccomp (quotactl) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("quotactl", syscall(SYS_quotactl, 0x800007 /* Q_SYNC */, NULL, 0, NULL));
}
