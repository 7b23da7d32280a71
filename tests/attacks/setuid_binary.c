/* ATTACK: gain root through a setuid-root binary (su) and watch its effective uid | LAYER: no_new_privs, nosuid mounts, unmapped root | REF: - */
#include "attack.h"

int main(void)
{
	int in[2];
	if (pipe(in) < 0)
		BROKEN("pipe: %s", strerror(errno));
	uid_t me = geteuid();
	pid_t kid = fork();
	if (kid == 0) {
		dup2(in[0], 0);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl("/usr/bin/su", "su", "-c", "true", (char *)NULL);
		execl("/bin/su", "su", "-c", "true", (char *)NULL);
		_exit(127);
	}
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", kid);
	for (int i = 0; i < 50; i++) {
		if (slurp(p, buf, sizeof(buf)) > 0) {
			char *u = strstr(buf, "Uid:");
			unsigned r, e;
			if (u && sscanf(u, "Uid:\t%u\t%u", &r, &e) == 2 && e != me && strstr(buf, "Name:\tsu")) {
				kill(kid, SIGKILL);
				ESCAPED("su runs with euid %u", e);
			}
		}
		usleep(10000);
	}
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	BLOCKED("su never ran with another uid");
}
