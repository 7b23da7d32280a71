/* ATTACK: as another local user, with no role in moatd, read the files of someone else's run (its files, stdin, policy, sources) from moatd's job folder, whose paths are in the command line of the moat that moatd starts (ps shows them) | LAYER: moatd writes job files mode 0400, owned by moat's user and, as root, the sandbox's host user (server.c) | REF: CWE-214 */
/* tests/integration/moatd_attacks.sh runs this on the host as an
 * unprivileged user while a run with a placed file is under way (as root
 * only: rootless there is no other user). It scans /proc for moat commands
 * with --ro=HOST:PATH or a path in a jobs/ folder and opens each host path
 * for reading; it is blocked when it found some and could read none. */
#include "attack.h"

#include <dirent.h>
#include <stdbool.h>
#include <time.h>

static int found, leaked;
static char what[512];

static void try_path(const char *p)
{
	if (!strstr(p, "/jobs/"))
		return;
	found++;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char b[64];
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n >= 0) {
		b[n] = '\0';
		leaked++;
		snprintf(what, sizeof(what), "%s: \"%.32s\"", p, b);
	}
}

static void scan(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char p[64], buf[65536];
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *a = buf; a < buf + n; a += strlen(a) + 1) {
			if (strncmp(a, "--ro=", 5) == 0) {
				char host[4096];
				snprintf(host, sizeof(host), "%s", a + 5);
				char *c = strrchr(host, ':');
				if (c)
					*c = '\0';
				try_path(host);
			} else if (a[0] == '/')
				try_path(a);
		}
	}
	if (d)
		closedir(d);
}

int main(void)
{
	if (getuid() == 0)
		BROKEN("run it as an unprivileged user, not root");
	/* Until a moat with a job's file on its command line was seen. */
	for (int i = 0; i < 600 && !found; i++) {
		scan();
		if (!found) {
			struct timespec ts = {0, 100 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (!found)
		BROKEN("no moat command with a job's file seen in 60 s");
	if (leaked)
		ESCAPED("read %d of the %d job files seen, e.g. %s", leaked, found, what);
	BLOCKED("saw %d job files on moat command lines, could read none", found);
}
