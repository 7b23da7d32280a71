/* ATTACK: make itself unkillable by the OOM killer (oom_score_adj -1000) | LAYER: caps dropped (CAP_SYS_RESOURCE) | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "-1000", 5) == 5)
		ESCAPED("oom_score_adj set to -1000");
	BLOCKED("oom_score_adj refused: %s", strerror(errno));
}
