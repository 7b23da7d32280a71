/* ATTACK: GET through the proxy to a deprecated IPv6 site-local address | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[fec0::1]");
}
