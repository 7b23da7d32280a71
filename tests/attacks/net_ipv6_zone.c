/* ATTACK: GET through the proxy to IPv6 link-local with a zone id naming the host's interface | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[fe80::1%25lo]");
}
