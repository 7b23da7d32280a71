/* ATTACK: load a kernel module from a file | LAYER: seccomp (finit_module) | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/attacks/attack_finit_module", O_RDONLY | O_CLOEXEC);
	EXPECT_FAIL("finit_module", syscall(SYS_finit_module, fd, "", 0));
}
