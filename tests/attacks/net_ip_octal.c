/* ATTACK: GET through the proxy to loopback with an octal first part | LAYER: gateway SSRF guard (netaddr) | REF: CVE-2021-29923 (Go net octal IP parsing) */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0177.0.0.1");
}
