/* ATTACK: GET through the proxy to NAT64 well-known prefix wrapping 127.0.0.1 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[64:ff9b::7f00:1]");
}
