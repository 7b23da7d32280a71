/* ATTACK: clear the host kernel log (covering tracks) | LAYER: seccomp (syslog) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("syslog(CLEAR)", syscall(SYS_syslog, 5 /* SYSLOG_ACTION_CLEAR */, NULL, 0));
}
