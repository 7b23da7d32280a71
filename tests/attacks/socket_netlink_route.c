/* ATTACK: open NETLINK_ROUTE in the code profile (no interfaces to see) | LAYER: seccomp (socket families) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(netlink_route)", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */));
}
