/* ATTACK: unload a kernel module | LAYER: seccomp (delete_module) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("delete_module", syscall(SYS_delete_module, "nonexistent_moat_module", O_NONBLOCK));
}
