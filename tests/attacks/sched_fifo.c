/* ATTACK: take a CPU with real-time scheduling (SCHED_FIFO) | LAYER: caps dropped (CAP_SYS_NICE), RLIMIT_RTPRIO 0 | REF: - */
#include "attack.h"
#include <sched.h>

int main(void)
{
	struct sched_param sp = {.sched_priority = 50};
	EXPECT_FAIL("sched_setscheduler(SCHED_FIFO)", sched_setscheduler(0, SCHED_FIFO, &sp));
}
