/* ATTACK: set kernel.core_pattern to a pipe so the host runs a program on the next crash | LAYER: read-only /proc/sys | REF: CVE-2019-5736 class (core_pattern container escape) */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open /proc/sys/kernel/core_pattern for writing", open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC));
}
