/* ATTACK: create 10,000 files in /out past limits.inodes to take the host's inodes | LAYER: /out is a tmpfs capped at limits.inodes (nr_inodes), copied out after the run | REF: - */
/* RUN: --inodes 64 */
#include "attack.h"

int main(void)
{
	for (int i = 0; i < 10000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "/out/f%d", i);
		int fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			if (errno == ENOSPC)
				BLOCKED("create failed after %d files: %s", i, strerror(errno));
			BROKEN("create %s: %s", name, strerror(errno));
		}
		close(fd);
	}
	ESCAPED("created 10000 files in /out under --inodes 64");
}
