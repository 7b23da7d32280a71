/* ATTACK: connect to an address outside the sandbox (the test's network namespace or any route) | LAYER: network namespace without routes | REF: - */
#include "netattack.h"

int main(void)
{
	const char *addr = getenv("MOAT_T_OUTSIDE");
	if (!addr)
		addr = "192.0.2.1"; /* TEST-NET-1: no packet leaves without a route */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)na_up_port())};
	inet_pton(AF_INET, addr, &sin.sin_addr);
	char line[160];
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "connect to %s: %s", addr, strerror(errno));
		/* Landlock (ABI 4+) refuses the connect before routing does. */
		return errno == ENETUNREACH || errno == EHOSTUNREACH || errno == EACCES ? na_blocked(line)
											: na_unexpected(line);
	}
	snprintf(line, sizeof(line), "connected to %s directly", addr);
	return na_escaped(line);
}
