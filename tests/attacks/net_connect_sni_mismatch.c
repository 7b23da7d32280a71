/* ATTACK: domain fronting: CONNECT to the allowed host, ClientHello naming another | LAYER: gateway peeks the ClientHello; SNI must equal the CONNECT host | REF: domain fronting (Fifield et al. 2015) */
#include "netattack.h"

int main(void)
{
	unsigned char hello[512];
	size_t n = na_client_hello("evil.test", hello, sizeof(hello));
	return na_connect("CONNECT allowed host with SNI evil.test", na_up(), hello, n);
}
