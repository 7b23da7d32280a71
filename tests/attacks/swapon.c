/* ATTACK: enable a swap file (reads and writes host memory to a file) | LAYER: seccomp (swapon) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("swapon", syscall(SYS_swapon, "/tmp/swap", 0));
}
