/* ATTACK: mount a tmpfs over /usr to replace system binaries | LAYER: seccomp (mount), no CAP_SYS_ADMIN | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("mount tmpfs on /usr", mount("none", "/usr", "tmpfs", 0, NULL));
}
