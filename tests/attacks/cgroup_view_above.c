/* ATTACK: see or change cgroups above the run's own through the cgroup mount (raise the limits, move a process, read the host's or other sandboxes' cgroups) | LAYER: only the run's own cgroup directories, bound read-only, with the cgroup namespace | REF: - */
/* RUN: --mem 256M --pids 64 */
#include "attack.h"
#include <dirent.h>

static int n_seen;

/* Every directory below a mount must be the run's own: its cgroup.procs
 * lists only processes of the sandbox's pid namespace. */
static void walk(const char *dir, int depth)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (f) {
		n_seen++;
		int pid;
		while (fscanf(f, "%d", &pid) == 1) {
			char p[64];
			snprintf(p, sizeof(p), "/proc/%d", pid);
			if (pid <= 0 || access(p, F_OK) != 0)
				ESCAPED("%s lists pid %d, not a process of the sandbox", path, pid);
		}
		fclose(f);
	}
	if (depth > 4)
		return;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		walk(path, depth + 1);
	}
	if (d)
		closedir(d);
}

static void must_not_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, value, strlen(value)) >= 0)
		ESCAPED("wrote %s to %s", value, path);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	/* Only meaningful where the run has a cgroup (as root, or rootless on
	 * a delegated hierarchy). */
	FILE *self = fopen("/proc/self/cgroup", "re");
	char line[512];
	int own = 0;
	while (self && fgets(line, sizeof(line), self))
		if (strstr(line, "/moat-") || (strncmp(line, "0::/", 4) == 0 && access("/sys/fs/cgroup/memory.max", F_OK) == 0))
			own = 1;
	if (self)
		fclose(self);
	if (!own)
		BLOCKED("the run has no cgroup of its own here, and nothing is mounted");
	walk("/sys/fs/cgroup", 0);
	if (!n_seen)
		BROKEN("the run's cgroup is not mounted at /sys/fs/cgroup");
	static const char *const files[][2] = {
		{"/sys/fs/cgroup/memory.max", "max"},          {"/sys/fs/cgroup/pids.max", "max"},
		{"/sys/fs/cgroup/cgroup.procs", "1"},          {"/sys/fs/cgroup/cgroup.subtree_control", "+cpu"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "-1"}, {"/sys/fs/cgroup/memory/cgroup.procs", "1"},
		{"/sys/fs/cgroup/memory/release_agent", "/tmp/x"},     {"/sys/fs/cgroup/pids/pids.max", "max"},
		{"/sys/fs/cgroup/memory/notify_on_release", "1"},     {"/sys/fs/cgroup/cpuacct/cgroup.procs", "1"},
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		must_not_write(files[i][0], files[i][1]);
	static const char *const dirs[] = {"/sys/fs/cgroup/x", "/sys/fs/cgroup/memory/x", "/sys/fs/cgroup/pids/x"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0755) == 0)
			ESCAPED("made a child cgroup %s", dirs[i]);
	BLOCKED("%d cgroup directories visible, all the run's own and read-only", n_seen);
}
