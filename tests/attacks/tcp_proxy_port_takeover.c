/* ATTACK: take over the egress relay's port (127.0.0.1:3128) to intercept the proxy traffic of the sandbox's own programs | LAYER: the relay is bound and listening before the command starts, without SO_REUSEPORT | REF: - */
/* RUN: --net proxy */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define RELAY_PORT 3128

static int try_bind(int family, const char *addr, int v6only)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		BROKEN("socket: %s", strerror(errno));
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	int r;
	if (family == AF_INET) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(RELAY_PORT)};
		inet_pton(AF_INET, addr, &a.sin_addr);
		r = bind(s, (struct sockaddr *)&a, sizeof(a));
	} else {
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(RELAY_PORT)};
		inet_pton(AF_INET6, addr, &a.sin6_addr);
		r = bind(s, (struct sockaddr *)&a, sizeof(a));
	}
	if (r == 0 && listen(s, 4) == 0)
		ESCAPED("bind and listen on %s port %d", addr, RELAY_PORT);
	int e = errno;
	close(s);
	return e;
}

int main(void)
{
	/* Loopback TCP is open inside: this attack means something only if a
	 * server of the sandbox's own can listen on another port. */
	int own = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(own, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(own, 4) < 0)
		BROKEN("no loopback listener of the sandbox's own: %s", strerror(errno));
	close(own);
	/* The relay must be there, or the binds below prove nothing. */
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_port = htons(RELAY_PORT);
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		BROKEN("no relay listening on 127.0.0.1:%d: %s", RELAY_PORT, strerror(errno));
	close(c);

	int e = try_bind(AF_INET, "127.0.0.1", 0);
	try_bind(AF_INET, "0.0.0.0", 0);
	/* A dual-stack wildcard covers 127.0.0.1 too. */
	try_bind(AF_INET6, "::", 0);
	try_bind(AF_INET6, "::ffff:127.0.0.1", 0);
	BLOCKED("every bind of the relay's address failed (127.0.0.1: %s)", strerror(e));
}
