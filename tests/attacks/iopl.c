/* ATTACK: raise the I/O privilege level to touch hardware ports | LAYER: seccomp (iopl, ioperm) | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
	EXPECT_FAIL("iopl(3)", syscall(SYS_iopl, 3));
}
