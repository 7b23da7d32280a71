/* ATTACK: take over transparent egress's ports (TCP 127.0.0.1:3129, where redirected connections land, and the DNS stub's UDP 127.0.0.1:53) to intercept the traffic of the sandbox's own programs | LAYER: both are bound by the init before the command starts, without SO_REUSEPORT, and held by the supervisor | REF: - */
/* RUN: --net transparent */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

static int try_bind(int type, int family, const char *addr, int port)
{
	int s = socket(family, type | SOCK_CLOEXEC, 0);
	if (s < 0)
		BROKEN("socket: %s", strerror(errno));
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	int r;
	if (family == AF_INET) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		inet_pton(AF_INET, addr, &a.sin_addr);
		r = bind(s, (struct sockaddr *)&a, sizeof(a));
	} else {
		int v6only = 0;
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
		inet_pton(AF_INET6, addr, &a.sin6_addr);
		r = bind(s, (struct sockaddr *)&a, sizeof(a));
	}
	if (r == 0 && (type == SOCK_DGRAM || listen(s, 4) == 0))
		ESCAPED("bind %s port %d (%s)", addr, port, type == SOCK_DGRAM ? "udp" : "tcp");
	int e = errno;
	close(s);
	return e;
}

int main(void)
{
	/* The redirect's listener must be there, or the binds below prove
	 * nothing. */
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(3129),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		BROKEN("no transparent listener on 127.0.0.1:3129: %s", strerror(errno));
	close(c);
	static const char *const v4[] = {"127.0.0.1", "0.0.0.0"};
	static const char *const v6[] = {"::", "::ffff:127.0.0.1"};
	int e = 0;
	for (int t = 0; t < 2; t++) {
		int type = t ? SOCK_DGRAM : SOCK_STREAM, port = t ? 53 : 3129;
		for (int i = 0; i < 2; i++) {
			e = try_bind(type, AF_INET, v4[i], port);
			try_bind(type, AF_INET6, v6[i], port);
		}
	}
	BLOCKED("every bind of the transparent ports failed (last: %s)", strerror(e));
}
