/* ATTACK: slew the host clock with clock_adjtime | LAYER: seccomp (clock_adjtime) | REF: - */
#include "attack.h"
#include <sys/timex.h>
#include <time.h>

int main(void)
{
	struct timex tx = {.modes = ADJ_OFFSET, .offset = 1};
	EXPECT_FAIL("clock_adjtime", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
}
