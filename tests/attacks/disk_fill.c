/* ATTACK: fill /tmp (bounded at 512 MiB) to take the host's memory or disk | LAYER: size-limited /tmp (tmpfs size=) | REF: - */
/* RUN: --tmp-size 8M */
#include "attack.h"

int main(void)
{
	int fd = open("/tmp/fill", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		BROKEN("create: %s", strerror(errno));
	static char buf[1 << 20];
	memset(buf, 'x', sizeof(buf));
	for (int mb = 0; mb < 512; mb++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			BLOCKED("write failed after %d MiB: %s", mb, strerror(errno));
	ESCAPED("wrote 512 MiB to /tmp");
}
