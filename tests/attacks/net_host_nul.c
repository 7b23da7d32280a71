/* ATTACK: a NUL byte in the URL host (up.test\\0.evil) | LAYER: hostname normaliser rejects NUL | REF: CVE-2009-2408 class (NUL in names) */
#include "netattack.h"

int main(void)
{
	char req[512];
	int n = snprintf(req, sizeof(req), "GET http://%s", "up.test");
	req[n++] = '\0';
	n += snprintf(req + n, sizeof(req) - (size_t)n, ".127.0.0.1:%u/ HTTP/1.1\r\nHost: x\r\n\r\n", na_secret_port());
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	na_send(fd, req, (size_t)n);
	static char resp[8192];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	return na_judge_http("NUL byte in the host", resp, len);
}
