/* ATTACK: open the host's disks (/dev/sda, /dev/vda, /dev/nvme0n1) | LAYER: minimal /dev | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/xvda", "/dev/dm-0"};
	for (size_t i = 0; i < 5; i++)
		if (open(paths[i], O_RDONLY | O_CLOEXEC) >= 0)
			ESCAPED("opened %s", paths[i]);
	BLOCKED("no disk device");
}
