/* ATTACK: reach the kernel crypto API (AF_ALG) | LAYER: seccomp (socket families) | REF: CVE-2017-17806 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(alg)", syscall(SYS_socket, AF_ALG, SOCK_SEQPACKET, 0));
}
