/* ATTACK: open an AF_PACKET socket to sniff or inject frames | LAYER: network namespace holding only loopback; seccomp | REF: - */
#include "netattack.h"

#include <linux/if_ether.h>

int main(void)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		char line[128];
		snprintf(line, sizeof(line), "packet socket: %s", strerror(errno));
		return na_blocked(line);
	}
	/* Even when the socket opens, only the sandbox's own loopback is
	 * there: look for any frame that did not come from lo. */
	struct timeval tv = {.tv_sec = 1};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_ll {
		unsigned short family, protocol;
		int ifindex;
		unsigned short hatype;
		unsigned char pkttype, halen, addr[8];
	} from;
	socklen_t fl = sizeof(from);
	char buf[2048];
	for (int i = 0; i < 50; i++) {
		if (recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) < 0)
			break;
		if (from.ifindex != 1)
			return na_escaped("saw frames of an interface other than loopback");
	}
	return na_blocked("packet socket sees only the sandbox's loopback");
}
