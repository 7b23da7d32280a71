/* ATTACK: a moat eval sample leaves charges in its cgroup, which moat reuses for a later sample of the same worker: files in /tmp, page cache it read first, a process holding memory and spending CPU; the samples after it (and after samples killed by the memory and pids limits) must get their own verdicts, memory peaks and CPU times | LAYER: a kept cgroup is taken for a sample only once empty, with its CPU time and memory peak reset to 0, its memory node made anew when anything is still charged to it, and its OOM kills and refused forks counted from there (moat__cgroup_reuse); tests/integration/eval_warm.sh checks the samples after this one | REF: - */
/* RUN: --time 20 */
#include "eval_warm.h"

#define MIB (1u << 20)

/* Touches n bytes of fresh memory and returns it. */
static char *touched(size_t n)
{
	char *p = malloc(n);
	if (!p)
		BROKEN("malloc: %s", strerror(errno));
	memset(p, 0x5a, n);
	return p;
}

int main(void)
{
	/* A file in /tmp: shared memory, charged until the interpreter
	 * removes it before the next sample starts. */
	int fd = open("/tmp/moat-eval-charge", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		BROKEN("open /tmp: %s", strerror(errno));
	char *buf = touched(MIB);
	for (int i = 0; i < 16; i++)
		if (write(fd, buf, MIB) != (ssize_t)MIB)
			BROKEN("write /tmp: %s", strerror(errno));
	close(fd);
	/* Page cache read first by this sample stays charged to its cgroup
	 * after it: read what the sandbox offers. */
	static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/share"};
	size_t read_total = 0;
	for (size_t d = 0; d < 3 && read_total < 32 * MIB; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;
		while (dir && (e = readdir(dir)) && read_total < 32 * MIB) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (f < 0)
				continue;
			ssize_t k;
			while ((k = read(f, buf, MIB)) > 0)
				read_total += (size_t)k;
			close(f);
		}
		if (dir)
			closedir(dir);
	}
	/* A process left behind, holding memory and spinning. */
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() == 0) {
			prctl(PR_SET_NAME, "moat-charge");
			for (int i = 0; i < 3; i++)
				close(i);
			volatile char *p = touched(16 * MIB);
			for (;;)
				p[0]++;
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	BLOCKED("left 16 MiB in /tmp, %zu bytes of page cache read and a process of 16 MiB for the samples after it",
		read_total);
}
