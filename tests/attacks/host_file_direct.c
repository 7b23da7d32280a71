/* ATTACK: open the host canary file by its host path | LAYER: mount namespace, pivot_root | REF: - */
#include "attack.h"

int main(void)
{
	const char *canary = need_env("MOAT_CANARY_PATH");
	if (access(canary, F_OK) == 0)
		ESCAPED("host file %s is visible", canary);
	BLOCKED("host path %s does not exist inside", canary);
}
