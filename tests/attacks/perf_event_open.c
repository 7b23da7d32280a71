/* ATTACK: open a perf event (a long list of kernel bugs and side channels) | LAYER: seccomp (perf_event_open) | REF: CVE-2013-2094 */
#include "attack.h"

int main(void)
{
	uint32_t attr[32] = {0};
	attr[1] = sizeof(attr); /* size */
	attr[0] = 1; /* PERF_TYPE_SOFTWARE */
	EXPECT_FAIL("perf_event_open", syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
}
