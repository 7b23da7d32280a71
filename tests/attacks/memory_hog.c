/* ATTACK: allocate and touch memory (bounded at 256 MiB, four times the limit it runs under) beyond the limit | LAYER: memory limit (cgroup, or RLIMIT_DATA without one) | REF: - */
/* RUN: --mem 64M --time 30 | EXPECT: oom */
#include "attack.h"

int main(void)
{
	size_t total = 0, chunk = 16u << 20;
	while (total < (256u << 20)) {
		char *p = malloc(chunk);
		if (!p)
			BLOCKED("allocation failed after %zu MiB", total >> 20);
		memset(p, 1, chunk);
		total += chunk;
	}
	ESCAPED("touched %zu MiB", total >> 20);
}
