/* ATTACK: SOCKS5 domain-name request whose name is a hex loopback literal (0x7f.1) | LAYER: hostname normaliser turns literal names into addresses | REF: - */
#include "netattack.h"

int main(void)
{
	const char *h = "0x7f.1";
	unsigned p = na_secret_port();
	unsigned char req[64] = {5, 1, 0, 3, (unsigned char)strlen(h)};
	memcpy(req + 5, h, strlen(h));
	req[5 + strlen(h)] = (unsigned char)(p >> 8), req[6 + strlen(h)] = (unsigned char)p;
	return na_socks_judge("SOCKS5 to name 0x7f.1", req, 7 + strlen(h));
}
