/* ATTACK: load a new kernel with kexec_load | LAYER: seccomp (kexec_load) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
}
