/* ATTACK: reach the sandbox keeper's control socket from inside (by its path, through /proc/1/root, in every runtime folder, through an inherited descriptor) to spawn outside the policy | LAYER: mount namespace (the host's /run and /tmp are not in the root), descriptors closed at exec, socket folder 0700 | REF: CVE-2019-5736 (a runtime's host side reached from a container) */
#include "attack.h"
#include <glob.h>
#include <stddef.h>
#include <sys/un.h>

static const char hello[] = "{\"type\":\"hello\",\"versions\":[1]}";

/* Whether path is a socket that accepts us. */
static int try_path(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return 0;
	strcpy(a.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		BROKEN("socket: %s", strerror(errno));
	int r = connect(s, (struct sockaddr *)&a, sizeof(a));
	close(s);
	if (r == 0)
		return 1;
	printf("# %s: %s\n", path, strerror(errno));
	return 0;
}

int main(void)
{
	int tried = 0;
	const char *given = getenv("MOAT_KEEPER_SOCKET");
	if (given) {
		if (try_path(given))
			ESCAPED("connected to the keeper's socket %s", given);
		char via[4200];
		snprintf(via, sizeof(via), "/proc/1/root%s", given);
		if (try_path(via))
			ESCAPED("connected to the keeper's socket through %s", via);
		tried += 2;
	}
	/* Every folder a keeper's socket lives in, whoever's. */
	const char *patterns[] = {"/run/moat/sandboxes/*/ctl", "/run/user/*/moat/sandboxes/*/ctl",
				  "/tmp/moat-*/sandboxes/*/ctl", "/proc/1/root/run/moat/sandboxes/*/ctl"};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++, tried++)
			if (try_path(g.gl_pathv[j]))
				ESCAPED("connected to a keeper's socket %s", g.gl_pathv[j]);
		globfree(&g);
	}
	/* A descriptor of the keeper's that crossed into the sandbox: any
	 * socket among ours that answers a hello. */
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		tried++;
		if (send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			continue;
		char buf[256];
		usleep(200000);
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			ESCAPED("descriptor %d answered a hello", fd);
	}
	BLOCKED("no keeper socket reachable (%d tried)", tried);
}
