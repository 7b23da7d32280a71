/* ATTACK: run unshare(1) to get a root shell in a nested user namespace | LAYER: seccomp (unshare), no_new_privs | REF: CVE-2022-0185 */
#include "attack.h"

int main(void)
{
	pid_t kid = fork();
	if (kid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(devnull, 2);
		execl("/usr/bin/unshare", "unshare", "-Ur", "true", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(kid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		ESCAPED("unshare -Ur true succeeded");
	BLOCKED("unshare -Ur failed (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
