/* ATTACK: SOCKS5 CONNECT to a host name that is not allowed | LAYER: gateway rules for SOCKS5 | REF: - */
#include "netattack.h"

int main(void)
{
	const char *h = "api.evil.test";
	unsigned char req[64] = {5, 1, 0, 3, (unsigned char)strlen(h)};
	memcpy(req + 5, h, strlen(h));
	req[5 + strlen(h)] = 1, req[6 + strlen(h)] = 187;
	return na_socks_judge("SOCKS5 to api.evil.test", req, 7 + strlen(h));
}
