/* ATTACK: GET through the proxy to IPv4-mapped IPv6 loopback | LAYER: gateway SSRF guard (netaddr) | REF: CVE-2024-24790 (Go IsPrivate on IPv4-mapped) */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[::ffff:127.0.0.1]");
}
