/* Network namespace: it holds only loopback, which we bring up so that
 * programs that talk to themselves over 127.0.0.1 work. Nothing else exists
 * in it, so nothing outside is reachable. */
#include "sandbox-internal.h"

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

int moat__net_loopback_up(moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return moat_error_set(err, errno, "socket for loopback");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return moat_error_set(err, errno, "read loopback flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return moat_error_set(err, errno, "bring loopback up");
	return 0;
}
