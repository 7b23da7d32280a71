/* ATTACK: GET through the proxy to the IPv4 broadcast address | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("255.255.255.255");
}
