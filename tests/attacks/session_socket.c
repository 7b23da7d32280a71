/* ATTACK: from a command run with `moat session exec`, reach the session's keeper (or another session's) through its socket, the session records, /proc/1/root or a descriptor the exec passed in, to run commands outside the policy | LAYER: mount namespace (the host's /run, /tmp and $XDG_RUNTIME_DIR are not in the root), the keeper's init starts the command (no setns, no host descriptor but the three streams), socket folders 0700 | REF: CVE-2019-5736 (a runtime's host side reached from a container) */
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
	/* The host side names the sockets (this session's and another's),
	 * separated by ':'; each is tried as it is and through /proc/1/root. */
	const char *given = getenv("MOAT_SESSION_SOCKETS");
	if (given) {
		char list[8192];
		snprintf(list, sizeof(list), "%s", given);
		for (char *save = NULL, *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
			if (try_path(p))
				ESCAPED("connected to a session's keeper socket %s", p);
			char via[4200];
			snprintf(via, sizeof(via), "/proc/1/root%s", p);
			if (try_path(via))
				ESCAPED("connected to a session's keeper socket through %s", via);
			tried += 2;
		}
	}
	/* The records: they name every session's socket. */
	const char *records[] = {"/run/moat/sessions/*/session.json", "/run/user/*/moat/sessions/*/session.json",
				 "/tmp/moat-*/sessions/*/session.json", "/proc/1/root/run/moat/sessions/*/session.json"};
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++) {
		glob_t g;
		if (glob(records[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++, tried++) {
			int fd = open(g.gl_pathv[j], O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				ESCAPED("read a session's record %s", g.gl_pathv[j]);
		}
		globfree(&g);
	}
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
	/* A descriptor of the exec client's or the keeper's that crossed with
	 * the streams: any socket among ours, the three streams included,
	 * that answers a hello. */
	for (int fd = 0; fd < 1024; fd++) {
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
	BLOCKED("no session's keeper reachable (%d tried)", tried);
}
