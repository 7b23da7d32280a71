/* ATTACK: GET through the proxy to IPv4-translated IPv6 loopback (::ffff:0:0:0/96) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[::ffff:0:7f00:1]");
}
