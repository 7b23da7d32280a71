/* ATTACK: GET through the proxy to Azure's WireServer, 168.63.129.16, which sits in public address space | LAYER: gateway SSRF guard: the cloud endpoint table (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("168.63.129.16");
}
