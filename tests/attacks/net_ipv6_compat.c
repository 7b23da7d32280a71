/* ATTACK: GET through the proxy to IPv4-compatible IPv6 loopback (::/96) | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[::127.0.0.1]");
}
