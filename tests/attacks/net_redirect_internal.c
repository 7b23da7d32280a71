/* ATTACK: follow a 302 from an allowed upstream to the internal server | LAYER: gateway checks every request, redirects included | REF: SSRF via open redirect (CVE-2023-24329 class) */
#include "netattack.h"

int main(void)
{
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	char req[512];
	int n = snprintf(req, sizeof(req),
			 "GET http://%s/redirect?to=http://127.0.0.1:%u/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			 na_up(), na_secret_port(), na_up());
	na_send(fd, req, (size_t)n);
	char resp[4096];
	na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (na_status(resp) != 302)
		return na_unexpected("the allowed upstream did not redirect");
	const char *loc = strstr(resp, "Location: ");
	if (!loc)
		return na_unexpected("no Location header");
	char url[256];
	snprintf(url, sizeof(url), "%.*s", (int)strcspn(loc + 10, "\r\n"), loc + 10);
	const char *hp = url + 7; /* after http:// */
	char host[128];
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(hp, "/"), hp);
	return na_http_raw("follow redirect to the internal server", "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", url, host);
}
