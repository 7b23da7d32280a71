/* ATTACK: connect to well-known host daemons (docker, containerd, dbus, systemd) | LAYER: mount namespace (sockets not bound in) | REF: - */
#include "attack.h"
#include <sys/un.h>

int main(void)
{
	static const char *const paths[] = {"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
		"/run/dbus/system_bus_socket", "/run/systemd/private", "/run/systemd/journal/socket", "/dev/log"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", paths[i]);
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			ESCAPED("connected to %s", paths[i]);
		close(s);
	}
	BLOCKED("no host daemon socket reachable");
}
