/* Shared by the eval_warm_* attacks: moat eval's warm path forks each
 * Python sample from an interpreter that lives in the worker's sandbox
 * (docs/eval.md). These attacks run inside a sample (or under `moat run`,
 * where the process outside their session is the sandbox's init) and aim
 * at every process of the sandbox that is not theirs: the warm
 * interpreter, the init, and whatever an earlier sample left. */
#pragma once

#include "attack.h"

#include <dirent.h>

/* The session of pid (field 6 of /proc/PID/stat), or -1. */
__attribute__((unused)) static pid_t session_of(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (slurp(path, buf, sizeof(buf)) < 0)
		return -1;
	char *p = strrchr(buf, ')');
	int ppid, pgrp, sid;
	char state;
	if (!p || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4)
		return -1;
	return sid;
}

/* The pids this process sees outside its own session, up to max; how many. */
__attribute__((unused)) static size_t outsiders(pid_t *pids, size_t max)
{
	pid_t mine = getsid(0);
	DIR *d = opendir("/proc");
	if (!d)
		BROKEN("opendir /proc: %s", strerror(errno));
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		pid_t sid = session_of((pid_t)pid);
		if (sid >= 0 && sid != mine)
			pids[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}
