/* ATTACK: create a nested net namespace with unshare | LAYER: seccomp (unshare) | REF: CVE-2023-32233 */
#include "attack.h"
#include <sched.h>

int main(void)
{
	EXPECT_FAIL("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET));
}
