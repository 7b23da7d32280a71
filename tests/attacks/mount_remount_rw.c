/* ATTACK: remount the read-only root filesystem read-write | LAYER: seccomp (mount), locked mount flags in the user namespace | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("remount / read-write", mount(NULL, "/", NULL, MS_REMOUNT, NULL));
}
