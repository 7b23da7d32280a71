/* ATTACK: send a UDP DNS query to a public resolver | LAYER: network namespace (no route) | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
	EXPECT_FAIL("sendto 8.8.8.8:53", sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)));
}
