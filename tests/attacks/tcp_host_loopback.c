/* ATTACK: connect to a service on the host's loopback | LAYER: network namespace (own loopback), Landlock TCP connect | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	int port = atoi(need_env("MOAT_CANARY_PORT"));
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	EXPECT_FAIL("connect to the host's 127.0.0.1", connect(s, (struct sockaddr *)&a, sizeof(a)));
}
