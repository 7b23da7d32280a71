/* ATTACK: GET through the proxy to loopback with percent-encoded digits | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("%31%32%37.0.0.1");
}
