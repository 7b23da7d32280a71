/* What the keeper-socket attacks share (keeper_socket.c, session_socket.c):
 * the ways a process inside might reach a keeper's control socket. Each
 * ends the attack with ESCAPED on success and counts what it tried. */
#pragma once

#include "attack.h"
#include <glob.h>
#include <stddef.h>
#include <sys/un.h>

static const char keeper_hello[] = "{\"type\":\"hello\",\"versions\":[1]}";

/* Whether path is a socket that accepts us. */
static int keeper_try_path(const char *path)
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

/* Every folder a keeper's socket lives in, whoever's. */
static void keeper_try_folders(int *tried)
{
	const char *patterns[] = {"/run/moat/sandboxes/*/ctl", "/run/user/*/moat/sandboxes/*/ctl",
				  "/tmp/moat-*/sandboxes/*/ctl", "/proc/1/root/run/moat/sandboxes/*/ctl"};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++, (*tried)++)
			if (keeper_try_path(g.gl_pathv[j]))
				ESCAPED("connected to a keeper's socket %s", g.gl_pathv[j]);
		globfree(&g);
	}
}

/* A descriptor of the host side's that crossed into the sandbox: any
 * socket among ours from first on that answers a hello. */
static void keeper_try_descriptors(int first, int *tried)
{
	for (int fd = first; fd < 1024; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		(*tried)++;
		if (send(fd, keeper_hello, sizeof(keeper_hello) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			continue;
		char buf[256];
		usleep(200000);
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			ESCAPED("descriptor %d answered a hello", fd);
	}
}
