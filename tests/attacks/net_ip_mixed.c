/* ATTACK: GET through the proxy to loopback mixing hexadecimal and shorthand (0x7f.1) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0x7f.1");
}
