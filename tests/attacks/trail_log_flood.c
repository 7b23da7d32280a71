/* ATTACK: open files in a loop to fill the host's disk through the audit log | LAYER: audit.max_size: one audit.overflow event, then only counting | REF: - */
/* RUN: --time 60s */
#include "attack.h"

int main(void)
{
	/* 40,000 opens make about 10 MB of events, over the code profile's
	 * 4M cap. */
	for (int i = 0; i < 40000; i++) {
		int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			BROKEN("open: %s", strerror(errno));
		close(fd);
	}
	printf("DONE: 40000 opens\n");
	return 0;
}
