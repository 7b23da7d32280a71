/* ATTACK: GET through the proxy to loopback in zero-padded octal | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("00000177.000.000.001");
}
