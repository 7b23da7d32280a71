/* ATTACK: an allowed name whose network.hosts answer is the internal server (internal.test -> 127.0.0.1) | LAYER: gateway SSRF guard on resolved addresses | REF: - */
#include "netattack.h"

int main(void)
{
	char hp[64];
	snprintf(hp, sizeof(hp), "internal.test:%u", na_secret_port());
	return na_get("GET http://internal.test/ (resolves to 127.0.0.1)", hp);
}
