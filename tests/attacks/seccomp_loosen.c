/* ATTACK: install a second, allow-all seccomp filter to undo the first | LAYER: seccomp (filters only stack, the strictest wins) | REF: - */
#include "attack.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>

int main(void)
{
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {1, allow};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		BLOCKED("a second filter was refused: %s", strerror(errno));
	EXPECT_FAIL("unshare after the allow-all filter", unshare(0x10000000));
}
