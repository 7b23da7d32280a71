/* ATTACK: kill or stop the sandbox init (pid 1) to orphan the command from its supervisor | LAYER: PID namespace init protection, Landlock signal scope | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("kill(1, SIGKILL)", kill(1, SIGKILL) == 0 && access("/proc/1", F_OK) != 0 ? 0 : -1);
	if (kill(1, SIGSTOP) == 0 || kill(1, SIGTERM) == 0) {
		usleep(100000);
		char buf[4096];
		if (slurp("/proc/1/status", buf, sizeof(buf)) > 0 && strstr(buf, "State:\tT"))
			ESCAPED("stopped pid 1");
	}
	BLOCKED("pid 1 is out of reach: %s", strerror(errno));
}
