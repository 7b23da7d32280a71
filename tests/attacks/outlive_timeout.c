/* ATTACK: leave a daemon behind that writes to /out after the time limit | LAYER: PID namespace torn down with init, cgroup kill | REF: - */
/* RUN: --time 1 | EXPECT: timeout */
#include "attack.h"

int main(void)
{
	pid_t k = fork();
	if (k == 0) {
		setsid();
		if (fork() == 0) {
			sleep(3);
			int fd = open("/out/late", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				write(fd, "late\n", 5);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(k, NULL, 0);
	for (;;)
		pause();
}
