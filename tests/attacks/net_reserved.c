/* ATTACK: GET through the proxy to a reserved address (240/4) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("240.0.0.1");
}
