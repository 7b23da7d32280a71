/* ATTACK: "CONNECT up%2etest:PORT", a percent-encoded tunnel name | LAYER: gateway: a host must be spelt on the wire as it is judged | REF: - */
#include "netattack.h"

int main(void)
{
	char auth[64], what[160];
	snprintf(auth, sizeof(auth), "up%%2etest:%u", na_up_port());
	snprintf(what, sizeof(what), "CONNECT %s", auth);
	return na_connect_hello(what, auth, "up.test");
}
