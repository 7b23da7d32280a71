/* ATTACK: GET through the proxy to 0.0.0.0, which Linux connects to the local host | LAYER: gateway SSRF guard (netaddr) | REF: CVE-2024-6387 class; 0.0.0.0-day (Oligo 2024) */
#include "netattack.h"

int main(void)
{
	return na_get_literal("0.0.0.0");
}
