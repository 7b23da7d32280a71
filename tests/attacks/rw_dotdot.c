/* ATTACK: climb out of a --rw bind with .. to the host directory above it | LAYER: mount namespace (.. stops at the sandbox tree) | REF: - */
#include "attack.h"

int main(void)
{
	const char *canary = need_env("MOAT_CANARY_PATH");
	const char *base = strrchr(canary, '/');
	char p[4200];
	snprintf(p, sizeof(p), "/rw/..%s", base);
	if (access(p, F_OK) == 0)
		ESCAPED("%s exists", p);
	snprintf(p, sizeof(p), "/rw/../..%s", canary);
	if (access(p, F_OK) == 0)
		ESCAPED("%s exists", p);
	BLOCKED("no host file above /rw");
}
