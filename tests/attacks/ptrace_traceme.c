/* ATTACK: PTRACE_TRACEME, the first step of the pkexec/ptrace credential bug | LAYER: seccomp (ptrace) | REF: CVE-2019-13272 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("PTRACE_TRACEME", syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
}
