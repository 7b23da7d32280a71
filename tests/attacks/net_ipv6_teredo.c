/* ATTACK: GET through the proxy to Teredo address whose XOR-ed client is 127.0.0.1 | LAYER: gateway SSRF guard (netaddr) | REF: - */
#include "netattack.h"

int main(void)
{
	return na_get_literal("[2001:0:4136:e378:8000:63bf:80ff:fffe]");
}
