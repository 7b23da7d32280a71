/* ATTACK: unmount a masking bind over /proc/kallsyms to reveal it | LAYER: seccomp (umount2), locked mounts | REF: CVE-2019-16884 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("umount /proc/kallsyms", umount2("/proc/kallsyms", MNT_DETACH));
}
