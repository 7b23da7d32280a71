/* ATTACK: a run plants files, a lingering process and an abstract socket for the run that gets its sandbox after it (or beside it) from moatd's warm pool, and looks for what its sandbox's creation left | LAYER: a pooled sandbox serves one request and is then destroyed; each is made alone (own /tmp, /dev/shm, PID and network namespace) | REF: - */
/* RUN: --time 20 */
#include "neighbour.h"

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

static const char *const dirs[] = {"/tmp", "/dev/shm", "/var/tmp"};

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
	char tag[40];
	neighbour_tag(tag, sizeof(tag));
	const size_t n = sizeof(dirs) / sizeof(dirs[0]);

	/* Before planting: a fresh sandbox holds nothing in these places. */
	for (size_t i = 0; i < n; i++) {
		const char *f = neighbour_file(dirs[i], MARK, tag, true);
		if (f)
			ESCAPED("%s was there before this run wrote anything", f);
	}
	pid_t p = neighbour_process(0, NULL);
	if (p)
		ESCAPED("process %d was in the sandbox before this run started any", (int)p);
	int sock = bind_abstract();
	if (sock < 0 && errno == EADDRINUSE)
		ESCAPED("another run's abstract socket is in this network namespace");
	if (sock < 0)
		BROKEN("abstract socket: %s", strerror(errno));

	neighbour_plant(dirs, n, MARK, tag);
	/* The lingering child holds the socket: it outlives this process
	 * unless the sandbox ends with the run. */
	pid_t child = neighbour_linger(COMM);
	close(sock);
	/* Look a few times while copies beside this one run. */
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < n; i++) {
			const char *f = neighbour_file(dirs[i], MARK, tag, false);
			if (f)
				ESCAPED("another run's marker %s is visible", f);
		}
		if ((p = neighbour_process(child, NULL)))
			ESCAPED("another run's process %d is visible", (int)p);
		usleep(250 * 1000);
	}
	BLOCKED("no earlier or neighbouring run's files, processes or sockets seen");
}
