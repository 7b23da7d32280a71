/* ATTACK: read kernel memory through /proc/kcore | LAYER: masked /proc, no CAP_SYS_RAWIO | REF: - */
#include "attack.h"

int main(void)
{
	char buf[64];
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		ESCAPED("read /proc/kcore");
	BLOCKED("/proc/kcore unreadable: %s", strerror(errno));
}
