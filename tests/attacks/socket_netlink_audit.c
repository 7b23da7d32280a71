/* ATTACK: talk to the kernel audit subsystem over NETLINK_AUDIT | LAYER: seccomp (socket families) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(netlink_audit)", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */));
}
