/* ATTACK: create an eBPF map | LAYER: seccomp (bpf) | REF: CVE-2021-3490 */
#include "attack.h"

int main(void)
{
	uint32_t attr[16] = {2 /* BPF_MAP_TYPE_ARRAY */, 4, 4, 1};
	EXPECT_FAIL("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr)));
}
