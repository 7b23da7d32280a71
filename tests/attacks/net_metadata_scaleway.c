/* ATTACK: GET through the proxy to the Scaleway metadata API (169.254.42.42) | LAYER: gateway SSRF guard: the cloud endpoint table (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("169.254.42.42");
}
