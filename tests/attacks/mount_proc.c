/* ATTACK: mount a fresh, unmasked procfs | LAYER: seccomp (mount), masked /proc | REF: CVE-2019-16884 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("mount proc on /tmp", mount("proc", "/tmp", "proc", 0, NULL));
}
