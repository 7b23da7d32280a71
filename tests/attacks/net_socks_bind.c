/* ATTACK: SOCKS5 BIND to accept inbound connections | LAYER: gateway serves SOCKS5 CONNECT only | REF: - */
#include "netattack.h"

int main(void)
{
	const unsigned char req[] = {5, 2, 0, 1, 0, 0, 0, 0, 0, 0};
	return na_socks_judge("SOCKS5 BIND", req, sizeof(req));
}
