/* ATTACK: GET through the proxy to the GCP metadata server of IPv6-only instances (fd20:ce::254) | LAYER: gateway SSRF guard: the cloud endpoint table (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[fd20:ce::254]");
}
