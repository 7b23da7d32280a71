/* ATTACK: GET through the proxy to the EKS Pod Identity Agent (169.254.170.23), which hands out credentials | LAYER: gateway SSRF guard: the cloud endpoint table (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("169.254.170.23");
}
