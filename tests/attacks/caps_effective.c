/* ATTACK: look for any capability in the effective, permitted, bounding or ambient set | LAYER: caps dropped | REF: - */
#include "attack.h"

int main(void)
{
	char buf[4096];
	if (slurp("/proc/self/status", buf, sizeof(buf)) < 0)
		BROKEN("read /proc/self/status: %s", strerror(errno));
	static const char *const sets[] = {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"};
	for (size_t i = 0; i < 5; i++) {
		char *l = strstr(buf, sets[i]);
		if (!l)
			BROKEN("no %s line", sets[i]);
		if (strtoull(l + strlen(sets[i]), NULL, 16) != 0)
			ESCAPED("%.40s", l);
	}
	BLOCKED("every capability set is empty");
}
