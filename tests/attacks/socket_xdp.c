/* ATTACK: open an AF_XDP socket | LAYER: seccomp (socket families) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(xdp)", syscall(SYS_socket, AF_XDP, SOCK_RAW, 0));
}
