/* ATTACK: GET through the proxy to the IPv6 loopback | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[::1]");
}
