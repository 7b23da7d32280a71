/* ATTACK: reconfigure the network namespace's interfaces (in a Kubernetes pod's, the pod's own) by ioctl | LAYER: no capability; a pod's network namespace is owned by the runtime's user namespace, not the sandbox's (oci-netns.c) | REF: - */
/* Every interface's MTU and flags are set to the values they have: a
 * no-op when allowed, so a success is an escape that changes nothing.
 * The kernel asks CAP_NET_ADMIN over the namespace's owner first. Run by
 * tests/integration/attacks.sh in a sandbox's own namespace and by
 * tests/integration/oci_podnet.sh in a pod's. */
#include "attack.h"
#include <net/if.h>

/* From /proc/net/dev: if_nameindex asks netlink, which moat's filter may
 * refuse. */
static int next_if(FILE *f, char name[IFNAMSIZ])
{
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *n = line;
		while (*n == ' ')
			n++;
		snprintf(name, IFNAMSIZ, "%s", n);
		return 1;
	}
	return 0;
}

int main(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		BROKEN("socket: %s", strerror(errno));
	FILE *f = fopen("/proc/net/dev", "re");
	if (!f)
		BROKEN("/proc/net/dev: %s", strerror(errno));
	int tried = 0;
	char name[IFNAMSIZ];
	while (next_if(f, name)) {
		struct ifreq r;
		memset(&r, 0, sizeof(r));
		snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", name);
		if (ioctl(fd, SIOCGIFMTU, &r) == 0) {
			tried++;
			if (ioctl(fd, SIOCSIFMTU, &r) == 0)
				ESCAPED("set the MTU of %s", name);
			if (errno != EPERM)
				BROKEN("SIOCSIFMTU %s: %s", name, strerror(errno));
		}
		if (ioctl(fd, SIOCGIFFLAGS, &r) == 0) {
			tried++;
			if (ioctl(fd, SIOCSIFFLAGS, &r) == 0)
				ESCAPED("set the flags of %s", name);
			if (errno != EPERM)
				BROKEN("SIOCSIFFLAGS %s: %s", name, strerror(errno));
		}
	}
	if (!tried)
		BROKEN("no interface could be read");
	BLOCKED("%d changes of interfaces refused with EPERM", tried);
}
