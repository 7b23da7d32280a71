/* ATTACK: 2,000 refused requests with 8 KB paths, to flood the host's log and audit trail | LAYER: gateway: events rate-capped into net.flood, paths cut in the log | REF: - */
#include "netattack.h"

int main(void)
{
	static char path[8001];
	memset(path, 'a', 8000);
	path[0] = '/';
	int refused = 0;
	for (int i = 0; i < 2000; i++) {
		int fd = na_proxy_connect();
		if (fd < 0)
			break;
		static char req[8400];
		int n = snprintf(req, sizeof(req), "GET http://flood.test%s HTTP/1.1\r\nHost: flood.test\r\nConnection: close\r\n\r\n", path);
		na_send(fd, req, (size_t)n);
		char resp[512];
		size_t len = na_read_head(fd, resp, sizeof(resp));
		close(fd);
		if (na_status(resp) == 403)
			refused++;
		(void)len;
	}
	/* What this attack tries is judged by the test on the host side: the
	 * size of the gateway's log. Here, every request must be refused. */
	char what[128];
	snprintf(what, sizeof(what), "%d of 2000 flood requests refused", refused);
	return refused == 2000 ? na_blocked(what) : na_unexpected(what);
}
