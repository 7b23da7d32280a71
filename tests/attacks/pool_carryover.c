/* ATTACK: a run plants files, a lingering process and an abstract socket for the run that gets its sandbox after it (or beside it) from moatd's warm pool, and looks for what its sandbox's creation left | LAYER: a pooled sandbox serves one request and is then destroyed; each is made alone (own /tmp, /dev/shm, PID and network namespace) | REF: - */
/* RUN: --time 20 */
#include "attack.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/un.h>

/* tests/integration/moatd_pool.sh runs this through moatd's pool, one
 * after another and several at once; tests/integration/attacks.sh runs it
 * in a cold sandbox. Each copy first looks for anything in its sandbox it
 * did not make (a marker, a process, a socket of an earlier copy, or any
 * file at all in the writable places of a sandbox made ahead), then plants
 * its own and looks again while copies beside it do the same. Finding one
 * means a sandbox was used twice, shared, or came with state. */

#define MARK "moat-pool-carry-"
#define COMM "moat-pool-carry"

static char tag[40];
static const char *const dirs[] = {"/tmp", "/dev/shm", "/var/tmp"};

/* Anything in dir but our own markers and the program itself (placed in
 * /tmp by the test, named .attack-PID). */
static const char *foreign_file(const char *dir, bool any)
{
	static char name[256];
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	struct dirent *e;
	const char *found = NULL;
	while ((e = readdir(d)) && !found) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char self[64];
		snprintf(self, sizeof(self), ".attack-%d", (int)getppid());
		if (!strncmp(e->d_name, ".attack-", 8) && (!strcmp(e->d_name, self) || any))
			continue;
		bool mine = strncmp(e->d_name, MARK, strlen(MARK)) == 0 && strcmp(e->d_name + strlen(MARK), tag) == 0;
		if (!mine && (any || strncmp(e->d_name, MARK, strlen(MARK)) == 0)) {
			snprintf(name, sizeof(name), "%s/%s", dir, e->d_name);
			found = name;
		}
	}
	closedir(d);
	return found;
}

/* A process that is not pid 1 (the sandbox's init), not this one, not its
 * parent (the shell that placed it) and not its own lingering child. */
static int foreign_process(pid_t child)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 1 || pid == getpid() || pid == getppid() || pid == child)
			continue;
		char path[64], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			found = pid;
		fclose(f);
	}
	closedir(d);
	return found;
}

/* The abstract socket one copy holds: bound already means another copy's
 * network namespace is this one. */
static int bind_abstract(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, COMM, strlen(COMM));
	if (bind(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(COMM))) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

int main(void)
{
	unsigned char r[8];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
		BROKEN("no randomness");
	close(fd);
	snprintf(tag, sizeof(tag), "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);

	/* Before planting: a fresh sandbox holds nothing in these places. */
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		const char *f = foreign_file(dirs[i], true);
		if (f)
			ESCAPED("%s was there before this run wrote anything", f);
	}
	int p = foreign_process(0);
	if (p)
		ESCAPED("process %d was in the sandbox before this run started any", p);
	int sock = bind_abstract();
	if (sock < 0 && errno == EADDRINUSE)
		ESCAPED("another run's abstract socket is in this network namespace");
	if (sock < 0)
		BROKEN("abstract socket: %s", strerror(errno));

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s%s", dirs[i], MARK, tag);
		int k = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (k >= 0)
			close(k);
	}
	/* The lingering child holds the socket: it outlives this process
	 * unless the sandbox ends with the run. */
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, COMM);
		setsid();
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		for (int i = 0; i < 40; i++)
			sleep(1);
		_exit(0);
	}
	close(sock);
	/* Look a few times while copies beside this one run. */
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			const char *f = foreign_file(dirs[i], false);
			if (f)
				ESCAPED("another run's marker %s is visible", f);
		}
		if ((p = foreign_process(child)))
			ESCAPED("another run's process %d is visible", p);
		usleep(250 * 1000);
	}
	BLOCKED("no earlier or neighbouring run's files, processes or sockets seen");
}
