/* ATTACK: read and write the sandbox init's memory through /proc/1/mem | LAYER: init not dumpable, seccomp (ptrace) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open /proc/1/mem O_RDWR", open("/proc/1/mem", O_RDWR | O_CLOEXEC));
}
