/* ATTACK: transparent egress: connect to the address the stub gave an allowed name and open TLS naming another host in the SNI | LAYER: gateway peeks the ClientHello of a redirected connection; the SNI must name the host its address was handed out for | REF: domain fronting (Fifield et al. 2015) */
#include "netattack.h"

int main(void)
{
	char name[256];
	snprintf(name, sizeof(name), "%s", na_up());
	*strchr(name, ':') = '\0';
	struct in_addr a;
	if (na_resolve4(name, &a) < 0)
		return na_blocked("the sandbox resolves no names (no transparent egress)");
	unsigned char hello[512];
	size_t n = na_client_hello("evil.test", hello, sizeof(hello));
	/* The suite's upstream speaks plain HTTP: any byte back means the
	 * hello reached it. */
	return na_direct("ClientHello naming evil.test to up.test's mapped address", a, na_up_port(), hello, n);
}
