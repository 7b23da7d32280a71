/* ATTACK: send a raw ICMP packet out, ignoring the proxy | LAYER: network namespace without routes (raw sockets see only loopback) | REF: - */
#include "netattack.h"

#include <netinet/ip_icmp.h>

int main(void)
{
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd < 0) {
		char line[128];
		snprintf(line, sizeof(line), "raw socket: %s", strerror(errno));
		return na_blocked(line);
	}
	const char *addr = getenv("MOAT_T_OUTSIDE");
	if (!addr)
		addr = "192.0.2.1";
	struct icmphdr h = {.type = ICMP_ECHO};
	struct sockaddr_in sin = {.sin_family = AF_INET};
	inet_pton(AF_INET, addr, &sin.sin_addr);
	char line[160];
	if (sendto(fd, &h, sizeof(h), 0, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "raw ICMP to %s: %s", addr, strerror(errno));
		return na_blocked(line);
	}
	snprintf(line, sizeof(line), "raw ICMP packet sent to %s", addr);
	return na_escaped(line);
}
