/* ATTACK: a host held for approval without ports, reached on a port a broader wildcard allow lists | LAYER: gateway rules: a port-less approve holds on every port | REF: - */
#include "netattack.h"

int main(void)
{
	char hp[128], what[160];
	snprintf(hp, sizeof(hp), "held.wild.test:%u", na_up_port());
	snprintf(what, sizeof(what), "GET http://%s/ (approve: [held.wild.test])", hp);
	return na_get(what, hp);
}
