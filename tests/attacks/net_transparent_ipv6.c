/* ATTACK: transparent egress: connect to an IPv6 address (no name, no redirect for IPv6) | LAYER: no IPv6 route in the sandbox's namespace, and its output filter drops IPv6 not bound for ::1 | REF: - */
#include "netattack.h"

int main(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in6 sin = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)na_up_port())};
	inet_pton(AF_INET6, "2001:db8::1", &sin.sin6_addr);
	char line[160];
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "connect to [2001:db8::1]: %s", strerror(errno));
		return errno == ENETUNREACH || errno == EHOSTUNREACH || errno == EACCES || errno == EPERM
			       ? na_blocked(line)
			       : na_unexpected(line);
	}
	return na_escaped("connected to [2001:db8::1]");
}
