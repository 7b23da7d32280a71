/* ATTACK: connect to every abstract unix socket listed in /proc/net/unix (init, supervisor) | LAYER: Landlock abstract socket scope (ABI 6), network namespace | REF: - */
#include "attack.h"
#include <stddef.h>
#include <sys/un.h>

int main(void)
{
	FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		BLOCKED("/proc/net/unix unreadable: %s", strerror(errno));
	char line[512];
	int tried = 0;
	while (fgets(line, sizeof(line), f)) {
		char *at = strchr(line, '@');
		if (!at)
			continue;
		at[strcspn(at, "\n")] = '\0';
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		size_t n = strlen(at + 1);
		if (n + 1 > sizeof(a.sun_path))
			continue;
		memcpy(a.sun_path + 1, at + 1, n);
		tried++;
		if (connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) == 0)
			ESCAPED("connected to abstract socket @%s", at + 1);
		close(s);
	}
	BLOCKED("%d abstract sockets listed, none reachable", tried);
}
