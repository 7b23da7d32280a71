/* ATTACK: create a nested user namespace with unshare | LAYER: seccomp (unshare) | REF: CVE-2022-0185 */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
}
