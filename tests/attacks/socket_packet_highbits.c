/* ATTACK: open AF_PACKET with high bits set in the family argument | LAYER: seccomp (socket families) | REF: CVE-2019-10063 class */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(packet_highbits)", syscall(SYS_socket, (1UL << 32) | AF_PACKET, SOCK_RAW, 0));
}
