/* ATTACK: read a name's DNS answer from the gateway's refusal (private.wild.test resolves to 10.11.12.13) | LAYER: gateway: refusals name the class of an answer, never the address | REF: - */
#include "netattack.h"

int main(void)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "GET http://private.wild.test:%u/ HTTP/1.1\r\nHost: private.wild.test:%u\r\nConnection: close\r\n\r\n",
			 na_up_port(), na_up_port());
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	na_send(fd, req, (size_t)n);
	static char resp[65536];
	size_t len = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (memmem(resp, len, "10.11.12.13", 11)) {
		char line[512];
		const char *r = strstr(resp, "X-Moat-Reason: ");
		snprintf(line, sizeof(line), "the refusal told the DNS answer: %.300s", r ? r + 15 : resp);
		for (char *p = line; *p; p++)
			if (*p == '\r' || *p == '\n')
				*p = ' ';
		return na_escaped(line);
	}
	return na_judge_http("GET http://private.wild.test/ (resolves to 10.11.12.13)", resp, len);
}
