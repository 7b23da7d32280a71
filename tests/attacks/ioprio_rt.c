/* ATTACK: take the disk with the real-time I/O class | LAYER: caps dropped (CAP_SYS_ADMIN) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("ioprio_set(RT)", syscall(SYS_ioprio_set, 1 /* WHO_PROCESS */, 0, (1 << 13) | 0 /* IOPRIO_CLASS_RT */));
}
