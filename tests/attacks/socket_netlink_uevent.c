/* ATTACK: listen to host device events over NETLINK_KOBJECT_UEVENT | LAYER: seccomp (socket families) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(netlink_uevent)", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 15 /* NETLINK_KOBJECT_UEVENT */));
}
