/* ATTACK: load a new kernel with kexec_file_load | LAYER: seccomp (kexec_file_load) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
}
