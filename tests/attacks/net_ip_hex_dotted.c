/* ATTACK: GET through the proxy to loopback with every part in hexadecimal | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0x7f.0x0.0x0.0x1");
}
