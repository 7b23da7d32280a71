/* ATTACK: rewrite /proc/self/uid_map to map the host's root | LAYER: user namespace maps are write-once | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "0 0 1\n", 6) == 6)
		ESCAPED("rewrote uid_map");
	BLOCKED("uid_map is closed: %s", strerror(errno));
}
