/* ATTACK: set CLOCK_REALTIME with clock_settime | LAYER: seccomp (clock_settime), no CAP_SYS_TIME | REF: - */
#include "attack.h"
#include <time.h>

int main(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	EXPECT_FAIL("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
}
