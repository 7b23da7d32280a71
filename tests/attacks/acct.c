/* ATTACK: turn on process accounting to a file of the attacker's choice | LAYER: seccomp (acct) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("acct", syscall(SYS_acct, "/tmp/acct"));
}
