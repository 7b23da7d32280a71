/* ATTACK: from a command run with `moat session exec`, reach the session's keeper (or another session's) through its socket, the session records, /proc/1/root or a descriptor the exec passed in, to run commands outside the policy | LAYER: mount namespace (the host's /run, /tmp and $XDG_RUNTIME_DIR are not in the root), the keeper's init starts the command (no setns, no host descriptor but the three streams), socket folders 0700 | REF: CVE-2019-5736 (a runtime's host side reached from a container) */
#include "keeper_probe.h"

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
			if (keeper_try_path(p))
				ESCAPED("connected to a session's keeper socket %s", p);
			char via[4200];
			snprintf(via, sizeof(via), "/proc/1/root%s", p);
			if (keeper_try_path(via))
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
	keeper_try_folders(&tried);
	/* A descriptor of the exec client's or the keeper's that crossed with
	 * the streams: the three streams included. */
	keeper_try_descriptors(0, &tried);
	BLOCKED("no session's keeper reachable (%d tried)", tried);
}
