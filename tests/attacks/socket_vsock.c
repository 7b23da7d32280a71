/* ATTACK: talk to the hypervisor over AF_VSOCK | LAYER: seccomp (socket families) | REF: CVE-2021-26708 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(vsock)", syscall(SYS_socket, AF_VSOCK, SOCK_STREAM, 0));
}
