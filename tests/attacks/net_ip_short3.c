/* ATTACK: GET through the proxy to loopback in three-part shorthand (127.0.1) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("127.0.1");
}
