/* ATTACK: GET through the proxy to a private address in 192.168/16 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("192.168.1.1");
}
