/* ATTACK: GET through the proxy to a private address in 10/8 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("10.0.0.1");
}
