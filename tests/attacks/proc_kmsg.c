/* ATTACK: read kernel messages from /proc/kmsg | LAYER: masked /proc, seccomp (syslog) | REF: - */
#include "attack.h"

int main(void)
{
	char buf[256];
	int fd = open("/proc/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		ESCAPED("read kernel messages from /proc/kmsg");
	BLOCKED("/proc/kmsg gave nothing");
}
