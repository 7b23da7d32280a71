/* ATTACK: reach moatd's API socket from a sandbox moatd started, to make sandboxes of its own or read others' sessions | LAYER: mount namespace (moatd's socket and state folder not bound in) | REF: - */
#include "attack.h"
#include <sys/un.h>

/* Run by tests/integration/moatd.sh through POST /v1/runs with moatd's own
 * socket path as argv[1]; alone, the default paths. */
int main(int argc, char **argv)
{
	char xdg[128];
	snprintf(xdg, sizeof(xdg), "/run/user/%u/moat/moatd.sock", (unsigned)getuid());
	const char *paths[] = {argc > 1 ? argv[1] : "/run/moat/moatd.sock", "/run/moat/moatd.sock", xdg};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", paths[i]);
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			ESCAPED("connected to moatd's socket %s", paths[i]);
		close(s);
	}
	BLOCKED("moatd's socket is not reachable from inside");
}
