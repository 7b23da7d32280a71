/* ATTACK: reach the sandbox keeper's control socket from inside (by its path, through /proc/1/root, in every runtime folder, through an inherited descriptor) to spawn outside the policy | LAYER: mount namespace (the host's /run and /tmp are not in the root), descriptors closed at exec, socket folder 0700 | REF: CVE-2019-5736 (a runtime's host side reached from a container) */
#include "keeper_probe.h"

int main(void)
{
	int tried = 0;
	const char *given = getenv("MOAT_KEEPER_SOCKET");
	if (given) {
		if (keeper_try_path(given))
			ESCAPED("connected to the keeper's socket %s", given);
		char via[4200];
		snprintf(via, sizeof(via), "/proc/1/root%s", given);
		if (keeper_try_path(via))
			ESCAPED("connected to the keeper's socket through %s", via);
		tried += 2;
	}
	keeper_try_folders(&tried);
	/* A descriptor of the keeper's that crossed into the sandbox. */
	keeper_try_descriptors(3, &tried);
	BLOCKED("no keeper socket reachable (%d tried)", tried);
}
