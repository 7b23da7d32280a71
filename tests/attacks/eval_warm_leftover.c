/* ATTACK: a moat eval sample leaves a file, a System V segment, a message queue and a process for the next sample forked in the same warm sandbox, and looks for what the previous one left | LAYER: each sample's cgroup is killed and emptied, and /tmp cleared, before the next is forked; the sample's seccomp layer refuses System V IPC and POSIX queues | REF: - */
/* RUN: --time 20 */
#include "eval_warm.h"

#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define MARK "moat-eval-warm-leftover"
#define KEY 0x6d6f6174

int main(void)
{
	/* What an earlier sample left. */
	const char *const places[] = {"/tmp/" MARK, "/dev/shm/" MARK, "/var/tmp/" MARK};
	for (size_t i = 0; i < 3; i++)
		if (access(places[i], F_OK) == 0)
			ESCAPED("an earlier sample's %s is here", places[i]);
	errno = 0;
	if (shmget(KEY, 0, 0) >= 0)
		ESCAPED("an earlier sample's System V segment is here");
	mqd_t q = mq_open("/" MARK, O_RDONLY);
	if (q != (mqd_t)-1)
		ESCAPED("an earlier sample's message queue is here");
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], comm[64];
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if (slurp(path, comm, sizeof(comm)) > 0 && strncmp(comm, "moat-leftover", 13) == 0)
			ESCAPED("an earlier sample's process %s is alive", e->d_name);
	}
	if (d)
		closedir(d);

	/* What this one leaves. */
	for (size_t i = 0; i < 3; i++) {
		int fd = open(places[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd >= 0)
			close(fd);
	}
	/* Both outlive their creator in its IPC namespace; a cold run's
	 * namespace goes with it, a warm sandbox's stays for the next. */
	shmget(KEY, 4096, IPC_CREAT | 0666);
	struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 16};
	mq_open("/" MARK, O_RDWR | O_CREAT, 0666, &attr);
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() == 0) {
			prctl(PR_SET_NAME, "moat-leftover");
			for (int fd = 0; fd < 3; fd++)
				close(fd);
			for (;;)
				pause();
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	BLOCKED("nothing of an earlier sample was here; this one left a file and a process to be removed");
}
