/* ATTACK: GET through the proxy to 0 as a one-part address (0.0.0.0) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0");
}
