/* ATTACK: open a TIPC socket | LAYER: seccomp (socket families) | REF: CVE-2022-0435 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(tipc)", syscall(SYS_socket, AF_TIPC, SOCK_RDM, 0));
}
