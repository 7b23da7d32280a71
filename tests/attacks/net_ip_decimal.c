/* ATTACK: GET through the proxy to loopback as one decimal integer (2130706433) | LAYER: gateway SSRF guard (netaddr) | REF: CVE-2021-22931 class (alternative IPv4 notations) */
#include "netattack.h"

int main(void)
{
	return na_get_literal("2130706433");
}
