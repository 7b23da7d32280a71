/* ATTACK: resolve a name inside the sandbox (DNS tunnelling or discovery) | LAYER: no resolver inside: the gateway resolves names | REF: - */
#include "netattack.h"

#include <netdb.h>

int main(void)
{
	struct addrinfo *res = NULL;
	const char *up = na_up();
	char host[128];
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(up, ":"), up);
	int r = getaddrinfo(host, "80", NULL, &res);
	if (r == 0) {
		char a[64] = "";
		if (res->ai_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, a, sizeof(a));
		freeaddrinfo(res);
		char line[200];
		snprintf(line, sizeof(line), "%s resolved inside the sandbox to %s", host, a);
		return na_escaped(line);
	}
	char line[200];
	snprintf(line, sizeof(line), "getaddrinfo(%s): %s", host, gai_strerror(r));
	return na_blocked(line);
}
