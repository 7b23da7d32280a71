/* ATTACK: 1,100 idle connections to the gateway, to use up the supervisor's descriptors and leave the listener disabled for every later request | LAYER: gateway: a connection cap per sandbox, a raised soft descriptor limit, the listener re-armed after accept errors | REF: - */
#include "netattack.h"

int main(void)
{
	static int fds[1100];
	int n = 0;
	for (int i = 0; i < 1100; i++) {
		int fd = na_proxy_connect();
		if (fd < 0)
			break;
		fds[n++] = fd;
	}
	/* Let the gateway see them all, then let them go. */
	sleep(1);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	sleep(1);
	if (n == 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	char hp[64], what[160];
	snprintf(hp, sizeof(hp), "up.test:%u", na_up_port());
	int fd = na_proxy_connect();
	if (fd < 0) {
		snprintf(what, sizeof(what), "after %d idle connections the gateway accepts no more", n);
		return na_escaped(what);
	}
	char req[256];
	int rl = snprintf(req, sizeof(req), "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hp, hp);
	na_send(fd, req, (size_t)rl);
	static char resp[4096];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (na_status(resp) == 200 && memmem(resp, len, "upstream-ok", 11)) {
		snprintf(what, sizeof(what), "after %d idle connections the gateway still serves", n);
		return na_blocked(what);
	}
	snprintf(what, sizeof(what), "after %d idle connections a request got no answer (%zu bytes): the gateway is starved", n, len);
	return na_escaped(what);
}
