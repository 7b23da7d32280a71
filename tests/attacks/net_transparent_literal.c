/* ATTACK: transparent egress: connect straight to a private address that a rule names (10.0.0.1 on the internal port), as a program with its own resolver would | LAYER: gateway judges the redirected connection's original address as a literal: the SSRF guard refuses private ranges | REF: CWE-918 */
#include "netattack.h"

int main(void)
{
	struct in_addr a;
	inet_pton(AF_INET, "10.0.0.1", &a);
	char host[64];
	snprintf(host, sizeof(host), "10.0.0.1:%u", na_secret_port());
	return na_direct_get("GET / straight to 10.0.0.1", a, na_secret_port(), host);
}
