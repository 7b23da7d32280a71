/* ATTACK: connect to the host's loopback over IPv6 and IPv4-mapped addresses | LAYER: network namespace (a loopback of its own) | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	int port = atoi(need_env("MOAT_CANARY_PORT"));
	int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
	MUST_FAIL("connect [::ffff:127.0.0.1]", connect(s, (struct sockaddr *)&a, sizeof(a)));
	close(s);
	s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin6_addr = in6addr_loopback;
	EXPECT_FAIL("connect [::1]", connect(s, (struct sockaddr *)&a, sizeof(a)));
}
