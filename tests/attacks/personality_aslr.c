/* ATTACK: switch off ASLR with personality(ADDR_NO_RANDOMIZE) | LAYER: seccomp (personality) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("personality(ADDR_NO_RANDOMIZE)", syscall(SYS_personality, 0x0040000UL));
}
