/* ATTACK: GET through the proxy to loopback as one hexadecimal integer | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0x7f000001");
}
