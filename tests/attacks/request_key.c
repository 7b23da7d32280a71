/* ATTACK: request a key (may call out to /sbin/request-key on the host) | LAYER: seccomp (request_key) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("request_key", syscall(SYS_request_key, "user", "moat", NULL, -3));
}
