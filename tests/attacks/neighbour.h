/* Shared by the attacks that look for another run's traces (eval_neighbour,
 * pool_carryover): a random tag, marker files named after it in the
 * writable shared places, a lingering child by a name of its own, and
 * the probes that find another copy's markers and processes. */
#pragma once

#include "attack.h"

#include <dirent.h>
#include <stdbool.h>

/* A tag no other copy has: 16 hex digits from /dev/urandom. */
__attribute__((unused)) static void neighbour_tag(char *tag, size_t len)
{
	unsigned char r[8];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
		BROKEN("no randomness");
	close(fd);
	snprintf(tag, len, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
}

/* MARK+tag in each of dirs that can be written. */
__attribute__((unused)) static void neighbour_plant(const char *const *dirs, size_t n, const char *mark,
						     const char *tag)
{
	for (size_t i = 0; i < n; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s%s", dirs[i], mark, tag);
		int k = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (k >= 0)
			close(k);
	}
}

/* A child named comm that outlives this process, for 40 s, unless the
 * sandbox ends with it. It holds none of the caller's output pipes:
 * whoever waits for the parent's output must not wait for this one. */
__attribute__((unused)) static pid_t neighbour_linger(const char *comm)
{
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, comm);
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
	return child;
}

/* Another copy's marker in dir (MARK followed by another tag), or with
 * any, anything in dir but our own marker and the attack program itself
 * (placed in /tmp by the test, named .attack-PID): its path, or NULL. */
__attribute__((unused)) static const char *neighbour_file(const char *dir, const char *mark, const char *tag,
							   bool any)
{
	static char name[256];
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	struct dirent *e;
	const char *found = NULL;
	size_t ml = strlen(mark);
	while ((e = readdir(d)) && !found) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char self[64];
		snprintf(self, sizeof(self), ".attack-%d", (int)getppid());
		if (!strncmp(e->d_name, ".attack-", 8) && (!strcmp(e->d_name, self) || any))
			continue;
		bool marker = strncmp(e->d_name, mark, ml) == 0;
		bool mine = marker && strcmp(e->d_name + ml, tag) == 0;
		if (!mine && (any || marker)) {
			snprintf(name, sizeof(name), "%s/%s", dir, e->d_name);
			found = name;
		}
	}
	closedir(d);
	return found;
}

/* A process that is not pid 1 (the sandbox's init), not this one, not its
 * parent (the shell that placed it) and not child; with comm, only one
 * whose name starts with it. Its pid, or 0. */
__attribute__((unused)) static pid_t neighbour_process(pid_t child, const char *comm)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	pid_t found = 0;
	while ((e = readdir(d)) && !found) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 1 || pid == getpid() || pid == getppid() || pid == child)
			continue;
		char path[64], name[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && (!comm || strncmp(name, comm, strlen(comm)) == 0))
			found = pid;
		fclose(f);
	}
	closedir(d);
	return found;
}
