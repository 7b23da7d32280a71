/* ATTACK: GET through the proxy to loopback with a trailing dot | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("127.0.0.1.");
}
