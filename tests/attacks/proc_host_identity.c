/* ATTACK: read the host's kernel command line and boot id from /proc, which name the machine and the boot the sandbox runs on | LAYER: /proc/cmdline and /proc/sys/kernel/random/boot_id masked (mount.c) | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const files[] = {"/proc/cmdline", "/proc/sys/kernel/random/boot_id"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char buf[512];
		ssize_t n = slurp(files[i], buf, sizeof(buf));
		if (n > 0)
			ESCAPED("%s reads: %.80s", files[i], buf);
	}
	BLOCKED("/proc/cmdline and the boot id read empty or not at all");
}
