/* ATTACK: create a block device node for the host disk (8:0, 254:0) and open it | LAYER: no CAP_MKNOD, nodev mounts | REF: - */
#include "attack.h"
#include <sys/sysmacros.h>

int main(void)
{
	static const dev_t devs[] = {0, 0};
	(void)devs;
	if (mknod("/tmp/sda", S_IFBLK | 0600, makedev(8, 0)) == 0 || mknod("/tmp/vda", S_IFBLK | 0600, makedev(254, 0)) == 0) {
		if (open("/tmp/sda", O_RDONLY | O_CLOEXEC) >= 0 || open("/tmp/vda", O_RDONLY | O_CLOEXEC) >= 0)
			ESCAPED("opened a host block device");
		BLOCKED("node created but unusable: %s", strerror(errno));
	}
	BLOCKED("mknod refused: %s", strerror(errno));
}
