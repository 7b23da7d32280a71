/* ATTACK: read the kernel log with syslog(2) (dmesg) | LAYER: seccomp (syslog), kernel.dmesg_restrict | REF: - */
#include "attack.h"

int main(void)
{
	char buf[256];
	EXPECT_FAIL("syslog(READ_ALL)", syscall(SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf)));
}
