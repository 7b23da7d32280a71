/* ATTACK: SOCKS5 CONNECT to 127.0.0.1 by IPv4 address | LAYER: gateway SSRF guard for SOCKS5 | REF: - */
#include "netattack.h"

int main(void)
{
	unsigned p = na_secret_port();
	const unsigned char req[] = {5, 1, 0, 1, 127, 0, 0, 1, (unsigned char)(p >> 8), (unsigned char)p};
	return na_socks_judge("SOCKS5 to 127.0.0.1", req, sizeof(req));
}
