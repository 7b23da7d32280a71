/* ATTACK: crash or reboot the host through /proc/sysrq-trigger | LAYER: read-only /proc, no CAP_SYS_ADMIN in the initial namespace | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
	/* "h" only prints help: harmless even if the write went through. */
	if (fd >= 0 && write(fd, "h", 1) == 1)
		ESCAPED("wrote to /proc/sysrq-trigger");
	BLOCKED("/proc/sysrq-trigger refused: %s", strerror(errno));
}
