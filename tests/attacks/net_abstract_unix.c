/* ATTACK: connect to an abstract unix socket the host listens on | LAYER: network namespace (abstract sockets are per namespace) | REF: CVE-2020-15257 (containerd-shim abstract socket) */
#include "netattack.h"

#include <stddef.h>
#include <sys/un.h>

int main(void)
{
	const char *name = getenv("MOAT_T_ABSTRACT");
	if (!name)
		name = "moat-test-abstract";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n > sizeof(sun.sun_path) - 1)
		return na_unexpected("name too long");
	memcpy(sun.sun_path + 1, name, n);
	char line[160];
	if (connect(fd, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		snprintf(line, sizeof(line), "abstract socket @%s: %s", name, strerror(errno));
		return na_blocked(line);
	}
	snprintf(line, sizeof(line), "connected to the host's abstract socket @%s", name);
	return na_escaped(line);
}
