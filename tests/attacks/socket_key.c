/* ATTACK: open a PF_KEY socket | LAYER: seccomp (socket families) | REF: CVE-2022-1353 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(key)", syscall(SYS_socket, AF_KEY, SOCK_RAW, 0));
}
