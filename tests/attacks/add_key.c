/* ATTACK: add a key to the kernel keyring | LAYER: seccomp (add_key) | REF: CVE-2016-0728 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("add_key", syscall(SYS_add_key, "user", "moat", "x", 1, -3 /* KEY_SPEC_SESSION_KEYRING */));
}
