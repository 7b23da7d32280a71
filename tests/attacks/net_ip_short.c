/* ATTACK: GET through the proxy to loopback in two-part shorthand (127.1) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("127.1");
}
