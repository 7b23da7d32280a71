/* ATTACK: make all readable memory executable with personality(READ_IMPLIES_EXEC) | LAYER: seccomp (personality) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("personality(READ_IMPLIES_EXEC)", syscall(SYS_personality, 0x0400000UL));
}
