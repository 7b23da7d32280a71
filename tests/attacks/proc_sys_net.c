/* ATTACK: turn on IP forwarding through /proc/sys/net | LAYER: read-only /proc/sys, network namespace | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open ip_forward for writing", open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC));
}
