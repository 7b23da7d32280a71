/* ATTACK: GET through the proxy to IPv4-mapped IPv6 loopback in hexadecimal | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[::ffff:7f00:1]");
}
