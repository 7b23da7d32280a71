/* ATTACK: rename the machine | LAYER: seccomp (sethostname), UTS namespace | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("sethostname", sethostname("pwned", 5));
}
