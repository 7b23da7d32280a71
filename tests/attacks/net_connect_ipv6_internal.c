/* ATTACK: CONNECT tunnel to [::ffff:127.0.0.1] | LAYER: gateway SSRF guard for tunnels | REF: - */
#include "netattack.h"

int main(void)
{
	char auth[64];
	snprintf(auth, sizeof(auth), "[::ffff:127.0.0.1]:%u", na_secret_port());
	const char *probe = "GET / HTTP/1.0\r\n\r\n";
	return na_connect("CONNECT [::ffff:127.0.0.1]", auth, probe, strlen(probe));
}
