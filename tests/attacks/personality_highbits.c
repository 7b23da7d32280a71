/* ATTACK: personality(READ_IMPLIES_EXEC) with high bits set, which the kernel truncates away | LAYER: seccomp (personality, low 32 bits compared) | REF: CVE-2019-10063 class */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("personality(1<<32 | READ_IMPLIES_EXEC)", syscall(SYS_personality, (1UL << 32) | 0x0400000UL));
}
