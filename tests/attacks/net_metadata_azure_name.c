/* ATTACK: a name allowed by a wildcard rule whose DNS answer is Azure's WireServer (168.63.129.16) | LAYER: gateway SSRF guard: every answer checked against the cloud endpoint table | REF: - */
#include "netattack.h"

int main(void)
{
	char hp[128], what[160];
	snprintf(hp, sizeof(hp), "azure.wild.test:%u", na_up_port());
	snprintf(what, sizeof(what), "GET http://%s/ (resolves to 168.63.129.16)", hp);
	return na_get(what, hp);
}
