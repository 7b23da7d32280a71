/* ATTACK: find the host's /dev/shm files from inside | LAYER: private /dev/shm (tmpfs) | REF: - */
#include "attack.h"

int main(void)
{
	const char *canary = need_env("MOAT_CANARY_SHM");
	char p[512];
	snprintf(p, sizeof(p), "/dev/shm/%s", canary);
	if (access(p, F_OK) == 0)
		ESCAPED("host /dev/shm file visible");
	BLOCKED("host /dev/shm is not there");
}
