/* ATTACK: GET through the proxy to the IPv6 cloud metadata service | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[fd00:ec2::254]");
}
