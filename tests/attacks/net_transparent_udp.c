/* ATTACK: transparent egress: send UDP (other than DNS) out of the sandbox | LAYER: nf_tables output filter in the sandbox's namespace drops all but redirected flows and loopback | REF: - */
#include "netattack.h"

int main(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	char line[160];
	if (sendto(fd, "x", 1, 0, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(line, sizeof(line), "UDP to 192.0.2.1:9: %s", strerror(errno));
		return errno == EPERM || errno == ENETUNREACH || errno == EACCES ? na_blocked(line) : na_unexpected(line);
	}
	return na_escaped("UDP to 192.0.2.1:9 was sent");
}
