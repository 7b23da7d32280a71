/* ATTACK: connect straight to the allowed upstream's address, ignoring the proxy | LAYER: network namespace with loopback only | REF: - */
#include "netattack.h"

int main(void)
{
	/* The upstream listens on the host's 127.0.0.2; inside, 127/8 is the
	 * sandbox's own loopback, where nothing answers. */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)na_up_port())};
	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		char line[128];
		snprintf(line, sizeof(line), "direct connect to 127.0.0.2: %s", strerror(errno));
		return na_blocked(line);
	}
	const char *req = "GET / HTTP/1.0\r\n\r\n";
	na_send(fd, req, strlen(req));
	char resp[4096];
	size_t n = na_read_all(fd, resp, sizeof(resp));
	close(fd);
	if (memmem(resp, n, "upstream-ok", 11))
		return na_escaped("reached the host's upstream without the proxy");
	return na_blocked("something answered inside the sandbox, but not the host's upstream");
}
