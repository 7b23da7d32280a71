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

/* The path of our own cgroup, as /proc/self/cgroup gives it, in the
 * hierarchy whose superblock options are superopts ("rw,cpu,cpuacct"). */
static int own_path(const char *superopts, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[512];
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		/* v1: one of the listed controllers in the superblock's options */
		char ctrls[128];
		snprintf(ctrls, sizeof(ctrls), "%s", c1 + 1);
		for (char *save = NULL, *w = strtok_r(ctrls, ",", &save); w && !found; w = strtok_r(NULL, ",", &save)) {
			char opts[256];
			snprintf(opts, sizeof(opts), ",%s,", superopts);
			char word[140];
			snprintf(word, sizeof(word), ",%s,", w);
			if (strstr(opts, word)) {
				snprintf(buf, len, "%s", c2 + 1);
				found = 1;
			}
		}
		if (!found && !c1[1] && strcmp(superopts, "cgroup2") == 0) {
			snprintf(buf, len, "%s", c2 + 1);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int lists_pid(const char *procs, int want)
{
	FILE *f = fopen(procs, "re");
	int pid, found = 0;
	while (f && !found && fscanf(f, "%d", &pid) == 1)
		found = pid == want;
	if (f)
		fclose(f);
	return found;
}

/* Every cgroup mount must be the run's own cgroup in its hierarchy: its
 * cgroup.procs lists this process (an ancestor does not: it holds only the
 * processes directly in it, and on v1 hides those of other pid namespaces,
 * so its listing alone would look clean), and its root in mountinfo is the
 * path /proc/self/cgroup gives, as runtimes match them. A run without a
 * cgroup of its own must have none mounted. Returns how many. */
static int check_mounts(int own)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char root[512], mnt[512], fstype[64], superopts[256];
		if (sscanf(line, "%*d %*d %*d:%*d %511s %511s %*[^-]- %63s %*s %255s", root, mnt, fstype, superopts) != 4)
			continue;
		if (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0)
			continue;
		n++;
		if (!own)
			ESCAPED("%s (%s %s) is mounted, and the run has no cgroup of its own", mnt, fstype, superopts);
		char path[600];
		snprintf(path, sizeof(path), "%s/cgroup.procs", mnt);
		if (!lists_pid(path, (int)getpid()))
			ESCAPED("%s (%s %s, root %s) does not hold this process: not the run's own cgroup", mnt, fstype,
				superopts, root);
		char mine[512];
		if (!own_path(strcmp(fstype, "cgroup2") == 0 ? "cgroup2" : superopts, mine, sizeof(mine)))
			ESCAPED("%s (%s %s) is a hierarchy the run has no cgroup in", mnt, fstype, superopts);
		if (strcmp(root, mine) != 0)
			ESCAPED("%s shows cgroup %s, not the run's own %s", mnt, root, mine);
	}
	if (f)
		fclose(f);
	return n;
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
	int n_mounts = check_mounts(own);
	if (!own)
		BLOCKED("the run has no cgroup of its own here, and no cgroup is mounted");
	if (!n_mounts)
		BROKEN("the run's cgroup is not mounted");
	walk("/sys/fs/cgroup", 0);
	if (!n_seen)
		BROKEN("the run's cgroup is not mounted at /sys/fs/cgroup");
	static const char *const files[][2] = {
		{"/sys/fs/cgroup/memory.max", "max"},          {"/sys/fs/cgroup/pids.max", "max"},
		{"/sys/fs/cgroup/cgroup.procs", "1"},          {"/sys/fs/cgroup/cgroup.subtree_control", "+cpu"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "-1"}, {"/sys/fs/cgroup/memory/cgroup.procs", "1"},
		{"/sys/fs/cgroup/memory/release_agent", "/tmp/x"},     {"/sys/fs/cgroup/pids/pids.max", "max"},
		{"/sys/fs/cgroup/memory/notify_on_release", "1"},     {"/sys/fs/cgroup/cpuacct/cgroup.procs", "1"},
		{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1"},         {"/sys/fs/cgroup/cpu/cpu.shares", "262144"},
		{"/sys/fs/cgroup/cpu/cgroup.procs", "1"},              {"/sys/fs/cgroup/cpuset/cpuset.cpus", "0"},
		{"/sys/fs/cgroup/cpuset/cpuset.mems", "0"},            {"/sys/fs/cgroup/cpuset/cgroup.procs", "1"},
		{"/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive", "1"},   {"/sys/fs/cgroup/cpuset/release_agent", "/tmp/x"},
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		must_not_write(files[i][0], files[i][1]);
	static const char *const dirs[] = {"/sys/fs/cgroup/x",      "/sys/fs/cgroup/memory/x",  "/sys/fs/cgroup/pids/x",
					   "/sys/fs/cgroup/cpu/x",  "/sys/fs/cgroup/cpuacct/x", "/sys/fs/cgroup/cpuset/x"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0755) == 0)
			ESCAPED("made a child cgroup %s", dirs[i]);
	BLOCKED("%d cgroup mounts, %d directories visible, all the run's own and read-only", n_mounts, n_seen);
}
