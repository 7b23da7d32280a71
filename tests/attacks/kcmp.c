/* ATTACK: compare kernel objects of other processes with kcmp (an ASLR and fd oracle) | LAYER: seccomp (kcmp) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("kcmp", syscall(SYS_kcmp, getpid(), 1, 0 /* KCMP_FILE */, 0, 0));
}
