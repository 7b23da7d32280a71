/* ATTACK: GET through the proxy to an IPv6 unique local address | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[fd00::1]");
}
