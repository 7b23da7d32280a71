/* ATTACK: SOCKS5 UDP ASSOCIATE to get a UDP relay out | LAYER: gateway serves SOCKS5 CONNECT only | REF: - */
#include "netattack.h"

int main(void)
{
	const unsigned char req[] = {5, 3, 0, 1, 0, 0, 0, 0, 0, 0};
	return na_socks_judge("SOCKS5 UDP ASSOCIATE", req, sizeof(req));
}
