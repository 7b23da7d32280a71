/* ATTACK: read and write the kernel log through /dev/kmsg | LAYER: minimal /dev | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("open /dev/kmsg for reading", open("/dev/kmsg", O_RDONLY | O_CLOEXEC));
	EXPECT_FAIL("open /dev/kmsg for writing", open("/dev/kmsg", O_WRONLY | O_CLOEXEC));
}
