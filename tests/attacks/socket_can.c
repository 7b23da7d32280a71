/* ATTACK: open a CAN bus socket | LAYER: seccomp (socket families) | REF: CVE-2021-3609 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(can)", syscall(SYS_socket, AF_CAN, SOCK_RAW, 0));
}
