/* ATTACK: create a device node in /out for the host to open | LAYER: no CAP_MKNOD, Landlock (no MAKE_CHAR/BLOCK), nodev | REF: - */
#include "attack.h"
#include <sys/sysmacros.h>

int main(void)
{
	EXPECT_FAIL("mknod /out/null", mknod("/out/null", S_IFCHR | 0666, makedev(1, 3)));
}
