/* ATTACK: join and read the kernel keyring, which is not namespaced | LAYER: seccomp (keyctl) | REF: CVE-2016-0728 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("keyctl(JOIN_SESSION_KEYRING)", syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, "moat"));
}
