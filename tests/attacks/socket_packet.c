/* ATTACK: sniff and inject raw frames (AF_PACKET) | LAYER: seccomp (socket families) | REF: CVE-2020-14386 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(packet)", syscall(SYS_socket, AF_PACKET, SOCK_RAW, 0));
}
