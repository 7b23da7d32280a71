/* ATTACK: open an RDS socket | LAYER: seccomp (socket families) | REF: CVE-2010-3904 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(rds)", syscall(SYS_socket, AF_RDS, SOCK_SEQPACKET, 0));
}
