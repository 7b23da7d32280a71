/* ATTACK: attach to the sandbox init with ptrace | LAYER: seccomp (ptrace) | REF: CVE-2019-13272 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("PTRACE_ATTACH 1", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0));
}
