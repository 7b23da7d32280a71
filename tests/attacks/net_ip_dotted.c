/* ATTACK: GET through the proxy to the internal server by its dotted-decimal loopback address | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("127.0.0.1");
}
