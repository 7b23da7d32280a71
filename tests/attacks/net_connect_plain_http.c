/* ATTACK: CONNECT to the allowed host, then plain HTTP inside the tunnel to dodge method and path rules | LAYER: gateway requires TLS in tunnels | REF: - */
#include "netattack.h"

int main(void)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "GET /admin HTTP/1.1\r\nHost: %s\r\n\r\n", na_up());
	return na_connect("plain HTTP inside a CONNECT tunnel", na_up(), req, (size_t)n);
}
