/* ATTACK: open /dev/tty0, /dev/console, /dev/fuse, /dev/net/tun, /dev/kvm | LAYER: minimal /dev | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/dev/tty0", "/dev/console", "/dev/fuse", "/dev/net/tun", "/dev/kvm", "/dev/uinput", "/dev/loop0", "/dev/loop-control"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (open(paths[i], O_RDWR | O_CLOEXEC) >= 0)
			ESCAPED("opened %s", paths[i]);
	BLOCKED("none of the host devices is there");
}
