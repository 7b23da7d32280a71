/* ATTACK: reach the host root through /proc/1/root and /proc/1/cwd of the sandbox init | LAYER: pivot_root before init runs, init not dumpable | REF: CVE-2024-21626 */
#include "attack.h"

int main(void)
{
	const char *canary = need_env("MOAT_CANARY_PATH");
	char p[4200];
	static const char *const bases[] = {"/proc/1/root", "/proc/1/cwd/../../../../../..", "/proc/self/root"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", bases[i], canary);
		if (access(p, F_OK) == 0)
			ESCAPED("host file visible at %s", p);
	}
	BLOCKED("host canary not reachable through /proc/1");
}
