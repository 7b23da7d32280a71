/* ATTACK: read kernel symbol addresses from /proc/kallsyms (KASLR leak) | LAYER: masked /proc | REF: - */
#include "attack.h"

int main(void)
{
	char buf[4096];
	ssize_t n = slurp("/proc/kallsyms", buf, sizeof(buf));
	if (n > 0 && strncmp(buf, "0000000000000000", 16) != 0)
		ESCAPED("kallsyms shows addresses: %.40s", buf);
	BLOCKED("no kernel addresses (%zd bytes)", n);
}
