/* ATTACK: change the clock frequency with adjtimex | LAYER: seccomp (adjtimex) | REF: - */
#include "attack.h"
#include <sys/timex.h>

int main(void)
{
	struct timex tx = {.modes = ADJ_FREQUENCY, .freq = 1};
	EXPECT_FAIL("adjtimex", adjtimex(&tx));
}
