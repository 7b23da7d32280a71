/* ATTACK: GET through the proxy to 6to4 address wrapping 127.0.0.1 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[2002:7f00:1::]");
}
