/* ATTACK: a ClientHello with an ECH extension of draft 10 (0xfe0a), which hides the real server name behind the allowed one | LAYER: gateway: every ECH and ESNI code point is refused | REF: - */
#include "netattack.h"

int main(void)
{
	char auth[64], what[160];
	snprintf(auth, sizeof(auth), "up.test:%u", na_up_port());
	snprintf(what, sizeof(what), "CONNECT %s, ClientHello with ECH 0xfe0a", auth);
	return na_connect_hello_ext(what, auth, "up.test", 0xfe0a);
}
