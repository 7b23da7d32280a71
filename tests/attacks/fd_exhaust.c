/* ATTACK: open descriptors until the host runs out (bounded at 1 M) | LAYER: RLIMIT_NOFILE | REF: - */
#include "attack.h"

int main(void)
{
	for (int i = 0; i < (1 << 20); i++)
		if (dup(1) < 0)
			BLOCKED("dup failed after %d: %s", i, strerror(errno));
	ESCAPED("opened a million descriptors");
}
