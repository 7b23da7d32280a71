/* ATTACK: set up an io_uring (its own syscall path around seccomp and many CVEs) | LAYER: seccomp (io_uring_setup) | REF: CVE-2023-2598 */
#include "attack.h"

int main(void)
{
	uint32_t params[30] = {0};
	EXPECT_FAIL("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
}
