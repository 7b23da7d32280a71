/* ATTACK: create a userfaultfd (used to win kernel races) | LAYER: seccomp (userfaultfd) | REF: CVE-2021-22555 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
}
