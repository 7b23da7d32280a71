/* ATTACK: connect to a service on the host's loopback | LAYER: network namespace (a loopback of its own) | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	int port = atoi(need_env("MOAT_CANARY_PORT"));
	/* Loopback TCP works inside, so what stops this attack is the
	 * namespace, not a rule against TCP: prove the first part holds. */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		BROKEN("no loopback listener of the sandbox's own: %s", strerror(errno));
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		BROKEN("the sandbox's own loopback server is unreachable: %s", strerror(errno));
	close(c);
	close(l);

	/* Every loopback address, not only 127.0.0.1: the host's listener is
	 * on 127.0.0.1, but 127/8 is all loopback. */
	static const char *const addrs[] = {"127.0.0.1", "127.0.0.2", "127.1.2.3", "127.255.255.254"};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in h = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		inet_pton(AF_INET, addrs[i], &h.sin_addr);
		errno = 0;
		if (connect(s, (struct sockaddr *)&h, sizeof(h)) == 0)
			ESCAPED("connected to %s:%d", addrs[i], port);
		if (errno != ECONNREFUSED)
			BROKEN("connect %s:%d: %s, not ECONNREFUSED", addrs[i], port, strerror(errno));
		close(s);
	}
	BLOCKED("the host's loopback port %d is refused at every 127/8 address", port);
}
