/* ATTACK: transparent egress: connect to the address the stub gave an allowed name, with a Host header naming a host the rules deny (virtual-host fronting) | LAYER: gateway: a redirected request's Host must name the host its address was handed out for | REF: - */
#include "netattack.h"

int main(void)
{
	char name[256];
	snprintf(name, sizeof(name), "%s", na_up());
	*strchr(name, ':') = '\0';
	struct in_addr a;
	if (na_resolve4(name, &a) < 0)
		return na_blocked("the sandbox resolves no names (no transparent egress)");
	char host[64];
	snprintf(host, sizeof(host), "denied.test:%u", na_up_port());
	return na_direct_get("GET / to up.test's mapped address with Host denied.test", a, na_up_port(), host);
}
