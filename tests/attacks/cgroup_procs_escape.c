/* ATTACK: move itself into the host's root cgroup through cgroup.procs | LAYER: no /sys in the sandbox, cgroup namespace, Landlock | REF: CVE-2022-0492 */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
		"/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"};
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", getpid());
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && write(fd, pid, strlen(pid)) > 0)
			ESCAPED("moved into %s", paths[i]);
		if (fd >= 0)
			close(fd);
	}
	BLOCKED("no cgroup.procs could be written");
}
