/* ATTACK: GET through the proxy to the cloud metadata service | LAYER: gateway SSRF guard (netaddr) | REF: Capital One breach 2019 (SSRF to 169.254.169.254) */
#include "netattack.h"

int main(void)
{
	return na_get_literal("169.254.169.254");
}
