/* ATTACK: an allowed path carrying "X-Original-URL: /admin/secret" to a server that routes by it | LAYER: gateway: X-Original-URL and X-Rewrite-URL are never forwarded | REF: - */
#include "netattack.h"

int main(void)
{
	char req[512], what[160];
	int n = snprintf(req, sizeof(req), "GET http://paths.wild.test:%u/public HTTP/1.1\r\nHost: paths.wild.test:%u\r\nX-Original-URL: /admin/secret\r\nConnection: close\r\n\r\n",
			 na_up_port(), na_up_port());
	snprintf(what, sizeof(what), "GET http://paths.wild.test:%u/public with X-Original-URL: /admin/secret", na_up_port());
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	na_send(fd, req, (size_t)n);
	static char resp[65536];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	char line[400];
	if (memmem(resp, len, NA_SECRET, strlen(NA_SECRET))) {
		snprintf(line, sizeof(line), "%s: the server routed by the header", what);
		return na_escaped(line);
	}
	/* Served by the request line: the header never reached the server. */
	if (na_status(resp) == 200 && memmem(resp, len, "upstream-ok", 11)) {
		snprintf(line, sizeof(line), "%s: served by the request line; the header was not forwarded", what);
		return na_blocked(line);
	}
	return na_judge_http(what, resp, len);
}
