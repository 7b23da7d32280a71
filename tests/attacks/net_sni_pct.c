/* ATTACK: a TLS server name "up%2etest" in a tunnel to up.test: equal once decoded, but sent to the server as spelt | LAYER: gateway: the SNI must be spelt as it is judged | REF: - */
#include "netattack.h"

int main(void)
{
	char auth[64], what[160];
	snprintf(auth, sizeof(auth), "up.test:%u", na_up_port());
	snprintf(what, sizeof(what), "CONNECT %s, SNI up%%2etest", auth);
	return na_connect_hello(what, auth, "up%2etest");
}
