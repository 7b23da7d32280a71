/* ATTACK: GET through the proxy to a carrier-grade NAT address (100.64/10) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("100.64.0.1");
}
