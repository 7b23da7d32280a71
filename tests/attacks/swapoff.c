/* ATTACK: disable the host's swap | LAYER: seccomp (swapoff) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("swapoff", syscall(SYS_swapoff, "/dev/vda"));
}
