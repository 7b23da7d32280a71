/* ATTACK: raise its priority above every host process (nice -20) | LAYER: caps dropped (CAP_SYS_NICE) | REF: - */
#include "attack.h"
#include <sys/resource.h>

int main(void)
{
	EXPECT_FAIL("setpriority(-20)", setpriority(PRIO_PROCESS, 0, -20));
}
