/* ATTACK: remount the read-only /attacks bind writable | LAYER: seccomp (mount), locked mount flags | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("remount /attacks rw", mount(NULL, "/attacks", NULL, MS_REMOUNT | MS_BIND, NULL));
}
