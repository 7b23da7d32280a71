/* ATTACK: listen on a TCP port inside the sandbox | LAYER: Landlock TCP bind rules (ABI 4) | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(8080), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	EXPECT_FAIL("bind 127.0.0.1:8080", bind(s, (struct sockaddr *)&a, sizeof(a)));
}
