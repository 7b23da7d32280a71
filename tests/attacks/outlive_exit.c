/* ATTACK: exit at once, leaving a daemon that writes to /out afterwards | LAYER: PID namespace torn down when the command ends | REF: - */
#include "attack.h"

int main(void)
{
	pid_t k = fork();
	if (k == 0) {
		setsid();
		if (fork() == 0) {
			sleep(2);
			int fd = open("/out/late", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				write(fd, "late\n", 5);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(k, NULL, 0);
	BLOCKED("exited; the host side checks that /out/late never appears");
}
