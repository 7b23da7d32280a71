/* ATTACK: open a Bluetooth socket | LAYER: seccomp (socket families) | REF: CVE-2020-12351 */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("socket(bluetooth)", syscall(SYS_socket, AF_BLUETOOTH, SOCK_STREAM, 0));
}
