/* ATTACK: set the host clock with settimeofday | LAYER: seccomp (settimeofday), no CAP_SYS_TIME | REF: - */
#include "attack.h"
#include <sys/time.h>

int main(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	EXPECT_FAIL("settimeofday", settimeofday(&tv, NULL));
}
