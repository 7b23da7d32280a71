/* ATTACK: see or signal host processes by scanning /proc | LAYER: PID namespace | REF: - */
#include "attack.h"

int main(void)
{
	const char *canary = need_env("MOAT_CANARY_PID");
	char p[64], buf[4096];
	int seen = 0;
	for (int pid = 1; pid < 4096; pid++) {
		snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
		if (slurp(p, buf, sizeof(buf)) < 0)
			continue;
		seen++;
		if (strstr(buf, "moat-canary"))
			ESCAPED("host canary process visible as pid %d", pid);
	}
	(void)canary;
	if (seen > 32)
		ESCAPED("%d processes visible", seen);
	BLOCKED("only %d sandbox processes visible", seen);
}
