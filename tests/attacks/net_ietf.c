/* ATTACK: GET through the proxy to an IETF protocol assignment (192.0.0/24) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("192.0.0.8");
}
