/* ATTACK: before any token or role is checked, open connections to moatd that send one byte and nothing more, until it runs out of descriptors, so that it spins on accept() and floods its log with a warning a try, and stays unusable after the flood | LAYER: a listener whose accept fails pauses 250 ms and is re-armed, saying so once every 10 s; connections that stay silent are dropped at the timeout (server.c) | REF: CWE-400 */
/* tests/integration/moatd_attacks.sh runs this on the host as moatd's
 * client, against a moatd it started with few descriptors (prlimit), with
 * unix:PATH or tcp:PORT; the script judges moatd's log. The attack opens
 * 200 connections at most (more than the 128 descriptors, fewer than
 * what the listen backlog then holds), holds them 3 seconds, closes them, and is
 * blocked when moatd answers /v1/health again within 30 seconds. That
 * moatd cannot take new clients while its descriptors are all held is a
 * limit of a single process (docs/api.md); what must not happen is the
 * spin, the log flood, or moatd staying deaf after. */
#include "attack.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/un.h>
#include <time.h>

#define MAX_CONNS 200

static const char *target;

static int dial(void)
{
	int fd = -1;
	if (strncmp(target, "unix:", 5) == 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", target + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fd);
			fd = -1;
		}
	} else if (strncmp(target, "tcp:", 4) == 0) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(target + 4)),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fd);
			fd = -1;
		}
	} else
		BROKEN("usage: attack_moatd_client_conn_flood unix:PATH | tcp:PORT");
	if (fd >= 0) {
		struct timeval tv = {.tv_sec = 5};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static bool healthy(void)
{
	int fd = dial();
	if (fd < 0)
		return false;
	const char *req = "GET /v1/health HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n";
	char ans[64] = "";
	bool ok = send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req) &&
		  recv(fd, ans, sizeof(ans) - 1, 0) > 0 && strncmp(ans, "HTTP/1.1 200", 12) == 0;
	close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		BROKEN("usage: attack_moatd_client_conn_flood unix:PATH | tcp:PORT");
	target = argv[1];
	signal(SIGPIPE, SIG_IGN);
	if (!healthy())
		BROKEN("moatd does not answer before the flood");
	static int fds[MAX_CONNS];
	int n = 0;
	for (; n < MAX_CONNS; n++) {
		if ((fds[n] = dial()) < 0)
			break;
		(void)send(fds[n], "G", 1, MSG_NOSIGNAL);
	}
	printf("%d connections opened\n", n);
	fflush(stdout);
	sleep(3);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (int i = 0; i < 300; i++) {
		if (healthy())
			BLOCKED("moatd answers again after %d silent connections were closed", n);
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	ESCAPED("moatd still does not answer 30 s after the flood of %d connections ended", n);
}
