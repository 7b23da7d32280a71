/* ATTACK: GET through the proxy to an IPv4 multicast address | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("224.0.0.1");
}
