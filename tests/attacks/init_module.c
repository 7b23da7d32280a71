/* ATTACK: load a kernel module from memory | LAYER: seccomp (init_module) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("init_module", syscall(SYS_init_module, "", 0, ""));
}
