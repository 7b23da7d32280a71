/* ATTACK: a label ending in a hyphen below a denied wildcard (x-.internal.wild.test) | LAYER: gateway rules: glob and normaliser share one name check | REF: - */
#include "netattack.h"

int main(void)
{
	char hp[128], what[160];
	snprintf(hp, sizeof(hp), "x-.internal.wild.test:%u", na_up_port());
	snprintf(what, sizeof(what), "GET http://%s/ (deny: [\"*.internal.wild.test\"])", hp);
	return na_get(what, hp);
}
