/* ATTACK: make a socketpair of a foreign family (AF_TIPC) | LAYER: seccomp (socketpair families) | REF: - */
#include "attack.h"

int main(void)
{
	int sv[2];
	EXPECT_FAIL("socketpair(AF_TIPC)", socketpair(AF_TIPC, SOCK_SEQPACKET, 0, sv));
}
