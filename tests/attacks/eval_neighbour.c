/* ATTACK: one benchmark sample plants files and a lingering process for the samples run beside or after it, and looks for theirs | LAYER: a fresh sandbox per cold sample (own /tmp, /dev/shm, PID namespace), torn down with its processes; a sandbox per worker for warm ones, each sample's cgroup emptied and /tmp cleared before the next is forked | REF: - */
/* RUN: --time 20 */
#include "attack.h"

#include <dirent.h>

/* Run many at once (moat eval --parallel runs samples side by side, and
 * tests/integration/eval_attacks.sh runs this one as several samples): each
 * copy leaves a marker file named after a random tag in every writable
 * shared place and a child process that keeps it open, then looks for
 * markers and processes of any other copy. Finding one means two samples
 * shared a folder or a process table. */

#define MARK "moat-eval-neighbour-"

static char tag[40];

static int foreign_file(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, MARK, strlen(MARK)) == 0 && strcmp(e->d_name + strlen(MARK), tag) != 0)
			found = 1;
	closedir(d);
	return found;
}

/* A process of another copy: its comm starts with the mark's first bytes
 * (prctl PR_SET_NAME below) and it is not ours. */
static int foreign_process(pid_t mine)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0 || pid == mine || pid == getpid())
			continue;
		char path[64], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "moat-neighbour", 14) == 0)
			found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

int main(void)
{
	unsigned char r[8];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
		BROKEN("no randomness");
	close(fd);
	snprintf(tag, sizeof(tag), "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);

	static const char *const dirs[] = {"/tmp", "/dev/shm", "/var/tmp", "/out", "/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s%s", dirs[i], MARK, tag);
		int k = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (k >= 0)
			close(k);
	}
	/* The lingering child: it outlives this process unless the sandbox
	 * ends with it. */
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, "moat-neighbour");
		setsid();
		/* Not holding the caller's pipes: whoever waits for the
		 * parent's output must not wait for this one. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		for (int i = 0; i < 40; i++)
			sleep(1);
		_exit(0);
	}
	/* Look a few times, while other copies are still running. */
	for (int round = 0; round < 6; round++) {
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
			if (foreign_file(dirs[i]))
				ESCAPED("another sandbox's marker is in %s", dirs[i]);
		if (foreign_process(child))
			ESCAPED("another sandbox's process is visible");
		usleep(250 * 1000);
	}
	BLOCKED("no other sandbox's files or processes seen");
}
