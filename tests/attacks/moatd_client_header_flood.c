/* ATTACK: before any token or role is checked, send moatd a request head without end (a request line, one header line, or header lines by the thousand, 16 MiB each) so that it buffers all of it and the host runs out of memory | LAYER: moatd caps a request's head at 64 KiB on the unix socket and on TCP, and closes the connection past it (server.c) | REF: CWE-770 */
/* tests/integration/moatd_attacks.sh runs this on the host as moatd's
 * client (it is an attack on the daemon, not from a sandbox), with
 * unix:PATH or tcp:PORT. Each of the three heads is sent in 64 KiB
 * chunks, 16 MiB at most; the attack is blocked when moatd closes the
 * connection (or answers) each time, and still answers a fresh /v1/health
 * after all three. */
#include "attack.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/un.h>

#define FLOOD (16u << 20)
#define CHUNK (64u << 10)

static const char *target;

static int dial(void)
{
	int fd;
	if (strncmp(target, "unix:", 5) == 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", target + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			BROKEN("connect %s: %s", target, strerror(errno));
	} else if (strncmp(target, "tcp:", 4) == 0) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(target + 4)),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			BROKEN("connect %s: %s", target, strerror(errno));
	} else
		BROKEN("usage: attack_moatd_client_header_flood unix:PATH | tcp:PORT");
	struct timeval tv = {.tv_sec = 30};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Whether moatd said anything (an error answer) or closed. */
static bool peer_done(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Sends head, then fill (a chunk's worth at a time) until FLOOD bytes went
 * in or moatd answered or closed; then waits for moatd to do either. The
 * kernel's socket buffers may take megabytes whatever moatd does, so what
 * counts is whether moatd cut the connection, not how much went in. */
static bool flood(const char *what, const char *head, const char *fill)
{
	int fd = dial();
	static char buf[CHUNK];
	size_t fl = strlen(fill);
	for (size_t i = 0; i + fl <= sizeof(buf); i += fl)
		memcpy(buf + i, fill, fl);
	size_t sent = 0, step = sizeof(buf) - sizeof(buf) % fl;
	bool cut = send_all(fd, head, strlen(head)) < 0;
	while (!cut && sent < FLOOD && !(cut = peer_done(fd, 0))) {
		if (send_all(fd, buf, step) < 0)
			cut = true;
		else
			sent += step;
	}
	/* Generous: a loaded machine may take its time to read what the
	 * kernel holds. */
	if (!cut)
		cut = peer_done(fd, 30000);
	close(fd);
	printf("%s: %zu bytes went in, %s\n", what, sent, cut ? "then moatd cut it" : "and moatd still reads");
	return cut;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		BROKEN("usage: attack_moatd_client_header_flood unix:PATH | tcp:PORT");
	target = argv[1];
	signal(SIGPIPE, SIG_IGN);
	bool line = flood("request line", "GET /v1/health", "a");
	bool one = flood("one header line", "GET /v1/health HTTP/1.1\r\nHost: m\r\nX-Flood: ", "a");
	bool many = flood("many header lines", "GET /v1/health HTTP/1.1\r\nHost: m\r\n",
			  "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	/* moatd must still be there and answering. */
	int fd = dial();
	const char *req = "GET /v1/health HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n";
	char ans[256] = "";
	if (send_all(fd, req, strlen(req)) < 0 || recv(fd, ans, sizeof(ans) - 1, 0) <= 0)
		ESCAPED("moatd no longer answers after the floods (%s)", strerror(errno));
	if (strncmp(ans, "HTTP/1.1 200", 12) != 0)
		ESCAPED("moatd's health after the floods: %.40s", ans);
	if (!line || !one || !many)
		ESCAPED("moatd took a %u MiB request head and read on (request line %s, one header line %s, many "
			"header lines %s)",
			FLOOD >> 20, line ? "cut" : "taken", one ? "cut" : "taken", many ? "cut" : "taken");
	BLOCKED("moatd cut each %u MiB request head short and still answers", FLOOD >> 20);
}
