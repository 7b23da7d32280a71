/* Sweeping what a killed moat left behind (sweep.h). */
#include "sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

/* How far apart the clocks we compare may be: the boot time derived from
 * CLOCK_BOOTTIME, the start tick of a process and the time a directory
 * records for its creation. A pid reused within this slack of its last
 * holder's object is taken for the maker (the object then waits for a
 * later sweep). */
#define MAKER_SLACK_S 2

bool moat__maker_gone(pid_t pid, time_t made)
{
	time_t started;
	int r = moat__maker_started(pid, &started);
	return r == 0 || (r > 0 && moat__maker_gone_since(started, made));
}

bool moat__maker_gone_since(time_t started, time_t made) { return started > made + MAKER_SLACK_S; }

int moat__maker_started(pid_t pid, time_t *ret)
{
	if (pid <= 0)
		return -1;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_free_ char *stat = NULL;
	if (moat__read_file_at(AT_FDCWD, path, 4096, &stat) < 0)
		return -1;
	/* Field 22, starttime in clock ticks since boot, counting from
	 * after the command name, which may hold spaces and parentheses. */
	const char *p = strrchr(stat, ')');
	if (!p)
		return -1;
	unsigned long long start = 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &start) != 1)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec boot, real;
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0 || clock_gettime(CLOCK_REALTIME, &real) < 0)
		return -1;
	*ret = real.tv_sec - boot.tv_sec + (time_t)(start / (unsigned long long)hz);
	return 1;
}

/* The staged files are plain files moat wrote into a folder only the
 * caller can write (mode 0711); in a nested runs' folder also sock/, with
 * the socket in it. Anything else found there is left, and so is the
 * folder then. */
static bool remove_stage(int tmpfd, const char *name, bool nest)
{
	_cleanup_close_ int dfd = openat(tmpfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return false;
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return false;
	DIR *d = fdopendir(dup);
	if (!d) {
		close(dup);
		return false;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type == DT_REG || (nest && de->d_type == DT_SOCK))
			(void)unlinkat(dfd, de->d_name, 0);
		else if (nest && de->d_type == DT_DIR && strcmp(de->d_name, "sock") == 0)
			(void)remove_stage(dfd, de->d_name, true);
	}
	closedir(d);
	return unlinkat(tmpfd, name, AT_REMOVEDIR) == 0;
}

unsigned moat__sweep_stages(const char *tmpdir)
{
	if (!tmpdir) {
		tmpdir = getenv("TMPDIR");
		if (!tmpdir || tmpdir[0] != '/')
			tmpdir = "/tmp";
	}
	_cleanup_close_ int tmpfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmpfd < 0)
		return 0;
	int dup = fcntl(tmpfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return 0;
	DIR *d = fdopendir(dup);
	if (!d) {
		close(dup);
		return 0;
	}
	unsigned removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		bool nest = strncmp(de->d_name, MOAT_NEST_PREFIX, strlen(MOAT_NEST_PREFIX)) == 0;
		size_t plen = nest ? strlen(MOAT_NEST_PREFIX) : strlen(MOAT_STAGE_PREFIX);
		if (!nest && strncmp(de->d_name, MOAT_STAGE_PREFIX, plen) != 0)
			continue;
		char *end;
		long pid = strtol(de->d_name + plen, &end, 10);
		if (end == de->d_name + plen || *end != '-' || pid <= 0 || pid == (long)getpid())
			continue;
		struct stat st;
		if (fstatat(tmpfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (moat__maker_gone((pid_t)pid, st.st_mtim.tv_sec < st.st_ctim.tv_sec ? st.st_mtim.tv_sec
										    : st.st_ctim.tv_sec) &&
		    remove_stage(tmpfd, de->d_name, nest))
			removed++;
	}
	closedir(d);
	return removed;
}
