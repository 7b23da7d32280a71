/* ATTACK: fill /out past limits.disk (128 MiB in 4 MiB files, under the file size limit) to take the host's disk | LAYER: /out is a tmpfs capped at limits.disk, copied out after the run | REF: - */
/* RUN: --disk 8M */
#include "attack.h"

int main(void)
{
	static char buf[1 << 20];
	memset(buf, 'x', sizeof(buf));
	for (int f = 0; f < 32; f++) {
		char name[32];
		snprintf(name, sizeof(name), "/out/fill%d", f);
		int fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			if (errno == ENOSPC)
				BLOCKED("create failed after %d MiB: %s", f * 4, strerror(errno));
			BROKEN("create %s: %s", name, strerror(errno));
		}
		for (int mb = 0; mb < 4; mb++) {
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
				if (errno == ENOSPC)
					BLOCKED("write failed after %d MiB: %s", f * 4 + mb, strerror(errno));
				BROKEN("write failed with %s, not ENOSPC", strerror(errno));
			}
		}
		close(fd);
	}
	ESCAPED("wrote 128 MiB to /out under --disk 8M");
}
