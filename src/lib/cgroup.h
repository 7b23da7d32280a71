/* Per-run cgroup: memory, pids and cpu limits and exact accounting, behind one
 * small interface with a cgroup v2 and a cgroup v1 backend (and hybrid hosts,
 * where memory, pids and cpu live on v1 and a v2 mount holds nothing useful).
 *
 * Sequence, driven by sandbox.c:
 *   moat__cgroup_create()   before clone: make the run's cgroup, set limits
 *   moat__cgroup_clone_fd() v2: an fd for CLONE_INTO_CGROUP, or -1
 *   moat__cgroup_attach()   after clone, before the child execs (v1, or v2
 *                           when CLONE_INTO_CGROUP was not usable)
 *   moat__cgroup_event_fd() an fd to poll for oom / pids events, or -1
 *   moat__cgroup_stats()    after the run: cpu, memory peak, oom, pids hit
 *   moat__cgroup_destroy()  kill leftovers, remove the cgroup(s)
 *
 * When no usable cgroup exists (rootless without delegation), create()
 * succeeds with cg->backend "none" and a note saying why; the caller then
 * falls back to rlimits and reports that in the isolation object. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

#include <sys/types.h>

typedef struct moat_cgroup_stats {
	uint64_t cpu_user_us, cpu_sys_us; /* across every process and thread */
	bool cpu_known;
	uint64_t memory_peak_bytes;
	bool memory_peak_known;
	bool oom_killed;  /* the kernel OOM-killed a task of the run */
	bool pids_hit;    /* a fork/clone failed on the pids limit */
} moat_cgroup_stats;

typedef struct moat_cgroup moat_cgroup;

/* root: the cgroupfs mount point to use ("/sys/fs/cgroup" normally; tests
 * pass a fake tree). */
int moat__cgroup_create(const char *root, const moat_limits *limits, const char *name, moat_cgroup **ret,
			moat_error *err);
int moat__cgroup_clone_fd(moat_cgroup *cg);
int moat__cgroup_attach(moat_cgroup *cg, pid_t pid, moat_error *err);
int moat__cgroup_event_fd(moat_cgroup *cg);
int moat__cgroup_stats(moat_cgroup *cg, moat_cgroup_stats *ret);
/* Fills isolation->cgroup ("v1", "v2", "hybrid", "none") and the note. */
void moat__cgroup_describe(moat_cgroup *cg, moat_isolation *iso);
/* Which limits this cgroup really enforces, so that rlimits can stand in for
 * the rest and nothing unenforced is claimed. */
bool moat__cgroup_enforces_memory(moat_cgroup *cg);
bool moat__cgroup_enforces_pids(moat_cgroup *cg);
bool moat__cgroup_enforces_cpu(moat_cgroup *cg);
void moat__cgroup_destroy(moat_cgroup *cg);
