/* ATTACK: connect to an IPv6 address outside, ignoring the proxy | LAYER: network namespace without routes | REF: - */
#include "netattack.h"

int main(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return na_blocked("no IPv6 sockets at all");
	struct sockaddr_in6 sin = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	inet_pton(AF_INET6, "2001:db8::1", &sin.sin6_addr); /* documentation range: never routed */
	char line[160];
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "connect to 2001:db8::1: %s", strerror(errno));
		return na_blocked(line);
	}
	return na_escaped("connected to 2001:db8::1 directly");
}
