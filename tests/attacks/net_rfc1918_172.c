/* ATTACK: GET through the proxy to a private address in 172.16/12 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("172.16.0.1");
}
