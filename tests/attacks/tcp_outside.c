/* ATTACK: connect to addresses outside the machine (gateway, public DNS, metadata) | LAYER: network namespace (no route) | REF: - */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>

int main(void)
{
	static const char *const addrs[] = {"10.0.2.2", "8.8.8.8", "169.254.169.254", "172.17.0.1", "192.168.1.1"};
	for (size_t i = 0; i < 5; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};
		inet_pton(AF_INET, addrs[i], &a.sin_addr);
		errno = 0;
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS)
			ESCAPED("connect to %s:80 started", addrs[i]);
		close(s);
	}
	BLOCKED("no route out: %s", strerror(errno));
}
