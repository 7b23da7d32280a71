/* ATTACK: a second request pipelined after an allowed one, aimed at the internal server | LAYER: gateway forwards exactly the announced body, drops the rest | REF: - */
#include "netattack.h"

int main(void)
{
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\nGET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n",
			 na_up(), na_up(), na_secret_port(), na_secret_port());
	na_send(fd, req, (size_t)n);
	static char resp[65536];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (memmem(resp, len, NA_SECRET, strlen(NA_SECRET)))
		return na_escaped("the pipelined request reached the internal server");
	if (memmem(resp, len, "upstream-ok", 11))
		return na_blocked("only the allowed request was answered");
	return na_unexpected("the allowed request got no answer");
}
