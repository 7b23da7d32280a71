/* ATTACK: write into init's memory with process_vm_writev | LAYER: seccomp (process_vm_writev) | REF: - */
#include "attack.h"
#include <sys/uio.h>

int main(void)
{
	char buf[16] = {0};
	struct iovec l = {buf, sizeof(buf)}, r = {(void *)0x400000, sizeof(buf)};
	EXPECT_FAIL("process_vm_writev(1)", syscall(SYS_process_vm_writev, 1, &l, 1, &r, 1, 0));
}
