/* ATTACK: GET through the proxy to a benchmarking address (198.18/15) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("198.18.0.1");
}
