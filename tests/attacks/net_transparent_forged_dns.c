/* ATTACK: transparent egress: make up a DNS answer (an address of the stub's range that no name was given) and connect to it naming the allowed host | LAYER: gateway reads the name back from its own map only; an address it never handed out is cut | REF: - */
#include "netattack.h"

int main(void)
{
	/* 198.19.250.77: inside 198.18.0.0/15, far past any address the
	 * stub hands out in a run. */
	struct in_addr a;
	inet_pton(AF_INET, "198.19.250.77", &a);
	return na_direct_get("GET / to a forged mapped address with Host up.test", a, na_up_port(), na_up());
}
