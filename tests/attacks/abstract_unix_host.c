/* ATTACK: connect to an abstract unix socket the host listens on | LAYER: network namespace (abstract sockets are per namespace), Landlock scope | REF: - */
#include "attack.h"
#include <stddef.h>
#include <sys/un.h>

int main(void)
{
	const char *name = need_env("MOAT_CANARY_ABSTRACT");
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 1 > sizeof(a.sun_path))
		BROKEN("name too long");
	memcpy(a.sun_path + 1, name, n);
	EXPECT_FAIL("connect to the host's abstract socket", connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
}
