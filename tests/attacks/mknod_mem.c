/* ATTACK: create a /dev/mem character device node in /tmp and read kernel memory | LAYER: no CAP_MKNOD, nodev mounts, Landlock | REF: - */
#include "attack.h"
#include <sys/sysmacros.h>

int main(void)
{
	if (mknod("/tmp/mem", S_IFCHR | 0600, makedev(1, 1)) == 0) {
		int fd = open("/tmp/mem", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			ESCAPED("created and opened a /dev/mem node");
		BLOCKED("node created but unusable (nodev): %s", strerror(errno));
	}
	BLOCKED("mknod refused: %s", strerror(errno));
}
