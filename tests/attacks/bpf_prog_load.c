/* ATTACK: load an eBPF program (verifier bugs are a common way to kernel code execution) | LAYER: seccomp (bpf) | REF: CVE-2021-3490 */
#include "attack.h"

int main(void)
{
	uint64_t attr[16] = {0};
	EXPECT_FAIL("bpf(BPF_PROG_LOAD)", syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, attr, sizeof(attr)));
}
