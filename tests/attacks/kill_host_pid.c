/* ATTACK: kill a host process by its host pid | LAYER: PID namespace, Landlock signal scope | REF: - */
#include "attack.h"

int main(void)
{
	int pid = atoi(need_env("MOAT_CANARY_PID"));
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
	if (slurp(p, buf, sizeof(buf)) > 0 && strstr(buf, "moat-canary")) {
		if (kill(pid, SIGKILL) == 0)
			ESCAPED("killed host pid %d", pid);
	}
	/* Signalling a pid that exists only on the host must not work; if the
	 * number is taken inside, it is a sandbox process, not the host's. */
	errno = 0;
	if (kill(pid, 0) == 0 && slurp(p, buf, sizeof(buf)) > 0 && strstr(buf, "moat-canary"))
		ESCAPED("host pid %d can be signalled", pid);
	BLOCKED("host pid %d out of reach", pid);
}
