/* ATTACK: approve its own held request from inside the sandbox: reach the approval queue through the keeper's control socket (by its path, through /proc/1/root, in every runtime folder, through a descriptor) and send an approve for the held id | LAYER: the queue lives in the keeper, reachable only by its control socket: mount namespace (the host's /run, /tmp and $XDG_RUNTIME_DIR are not in the root), no keeper descriptor crosses into the sandbox, socket folders 0700, SO_PEERCRED | REF: - */
#include "attack.h"
#include <glob.h>
#include <stddef.h>
#include <sys/time.h>
#include <sys/un.h>

static const char hello[] = "{\"type\":\"hello\",\"versions\":[1]}";

/* Speaks to fd as a front would: hello, then approve id for the whole
 * session and the whole host. True when the keeper said yes. */
static int approve_on(int fd, const char *id)
{
	char buf[4096];
	/* A socket that is not a keeper's may never answer. */
	struct timeval tv = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL) < 0)
		return 0;
	if (recv(fd, buf, sizeof(buf) - 1, 0) <= 0)
		return 0;
	char req[512];
	snprintf(req, sizeof(req),
		 "{\"type\":\"approvals\",\"tag\":1,\"body\":{\"op\":\"approve\",\"id\":\"%s\",\"kind\":\"session\","
		 "\"scope\":\"host\"}}",
		 id);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		return 0;
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	printf("# answer: %s\n", buf);
	return strstr(buf, "\"lease\"") != NULL;
}

/* Whether path is a socket that accepts us (and then approves). */
static int try_path(const char *path, const char *id)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return 0;
	strcpy(a.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		BROKEN("socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		printf("# %s: %s\n", path, strerror(errno));
		close(s);
		return 0;
	}
	if (approve_on(s, id))
		ESCAPED("approved %s through %s", id, path);
	close(s);
	/* Connecting at all is reaching the queue's door. */
	return 1;
}

int main(void)
{
	int tried = 0;
	const char *id = getenv("MOAT_APPROVAL_ID");
	if (!id)
		id = "a00000000";
	const char *given = getenv("MOAT_KEEPER_SOCKET");
	if (given) {
		if (try_path(given, id))
			ESCAPED("connected to the keeper's socket %s", given);
		char via[4200];
		snprintf(via, sizeof(via), "/proc/1/root%s", given);
		if (try_path(via, id))
			ESCAPED("connected to the keeper's socket through %s", via);
		tried += 2;
	}
	const char *patterns[] = {"/run/moat/sandboxes/*/ctl", "/run/user/*/moat/sandboxes/*/ctl",
				  "/tmp/moat-*/sandboxes/*/ctl", "/proc/1/root/run/moat/sandboxes/*/ctl",
				  "/proc/*/root/run/moat/sandboxes/*/ctl"};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++, tried++)
			if (try_path(g.gl_pathv[j], id))
				ESCAPED("connected to a keeper's socket %s", g.gl_pathv[j]);
		globfree(&g);
	}
	/* A keeper's descriptor that crossed into the sandbox. */
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		tried++;
		if (approve_on(fd, id))
			ESCAPED("descriptor %d approved %s", fd, id);
	}
	BLOCKED("the approval queue is out of reach (%d tried)", tried);
}
