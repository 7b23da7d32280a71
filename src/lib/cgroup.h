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
 *   moat__cgroup_stats()    during the run (after an event or a timer) and
 *                           after it: cpu, memory peak, oom, pids hit
 *   moat__cgroup_kill()     a limit was hit: SIGKILL every task of the run
 *   moat__cgroup_destroy()  kill leftovers, remove the cgroup(s)
 *
 * When no usable cgroup exists (rootless without delegation), create()
 * succeeds with the backend "none" and a note saying why; the caller then
 * falls back to rlimits and reports that in the result. */
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
	bool oom_killed; /* the kernel OOM-killed a task of the run */
	bool pids_hit;   /* a fork/clone failed on the pids limit */
} moat_cgroup_stats;

typedef struct moat_cgroup moat_cgroup;

/* The controllers a run uses. */
typedef enum moat_cgroup_ctrl {
	MOAT_CG_MEMORY = 0,
	MOAT_CG_PIDS,
	MOAT_CG_CPU,     /* bandwidth (--cpus) */
	MOAT_CG_CPUACCT, /* usage; on v2 this is the cpu controller's cpu.stat */
	MOAT_CG_CPUSET,  /* v1 only, limits nothing: a runtime reads its CPUs there */
	_MOAT_CG_MAX,
	_MOAT_CG_INVALID = -1,
} moat_cgroup_ctrl;

/* Where one controller lives, as read from mountinfo and /proc/self/cgroup.
 * version 0: not mounted. dir: our own cgroup's directory in that hierarchy
 * (mount point + own path), the parent of the run's cgroup. */
typedef struct moat_cgroup_place {
	int version;
	char dir[MOAT_MAX_PATH];
	/* The hierarchy's root as seen here (the mount point when the mount
	 * shows the whole hierarchy), or "" when it is not visible. */
	char top[MOAT_MAX_PATH];
} moat_cgroup_place;

typedef struct moat_cgroup_layout {
	moat_cgroup_place ctrl[_MOAT_CG_MAX];
	bool v2_mounted;         /* a cgroup2 filesystem is mounted */
	char v2_dir[MOAT_MAX_PATH]; /* our own cgroup in it, when mounted */
	char v2_top[MOAT_MAX_PATH]; /* its root, as place.top */
	bool v1_mounted;         /* at least one v1 controller hierarchy */
} moat_cgroup_layout;

/* Pure: which hierarchy holds each controller, from the text of
 * /proc/self/mountinfo and of /proc/self/cgroup. A controller found on a v1
 * mount is placed there; the others are placed on v2 only if the v2
 * directory lists them in cgroup.controllers, which create() checks on the
 * file system (this function sets version 2 for them provisionally). */
int moat__cgroup_layout_parse(const char *mountinfo, const char *self_cgroup, moat_cgroup_layout *ret,
			      moat_error *err);

/* Where to look. NULL fields mean the real /proc/self files; tests pass fake
 * texts whose mount points lie in a temporary folder laid out like a
 * cgroupfs, so they never touch the host's hierarchy. */
typedef struct moat_cgroup_host {
	const char *mountinfo;
	const char *self_cgroup;
	/* Called right after each mkdir of the run's cgroup, to stand in for
	 * the kernel filling the new directory with its files. NULL on real
	 * hosts. */
	void (*fake_kernel_mkdir)(const char *dir, int version, void *userdata);
	void *userdata;
	/* Leave the sweep of killed runs' cgroups out: a caller that makes
	 * one cgroup after another (moat eval's warm path, a cgroup per
	 * sample) had it done by its first. */
	bool no_sweep;
} moat_cgroup_host;

/* name: the run's cgroup directory name, or NULL for "moat-PID-N". */
int moat__cgroup_create(const moat_cgroup_host *host, const moat_limits *limits, const char *name,
			moat_cgroup **ret, moat_error *err);

/* A cgroup the caller names (an OCI bundle's linux.cgroupsPath) and the
 * settings that come with it, beyond moat_limits. */
typedef struct moat_cgroup_req {
	/* "/a/b": from each hierarchy's root; "a/b": from our own cgroup (as
	 * runc reads them). Untrusted: checked by moat__cgroup_req_path. The
	 * last component must not exist (it is made, and removed by
	 * destroy(), with every folder above it that create() made); the
	 * folders above it may. */
	const char *path;
	uint64_t cpu_shares;  /* 0: not set */
	/* Written as given instead of moat's period of 100 ms when the
	 * limits' cpus_milli is their ratio (rounded up), i.e. the spec's
	 * quota is the one that holds. 0: not set. */
	uint64_t cpu_period;
	uint64_t cpu_quota;
	const char *cpuset_cpus, *cpuset_mems; /* NULL: the parent's */
} moat_cgroup_req;

/* Pure: checks a cgroupsPath and writes it to ret without "." and empty
 * components (a leading '/' kept). Refused: empty, "..", longer than
 * len, more than 32 components, a control character. */
int moat__cgroup_req_path(const char *given, char *ret, size_t len, moat_error *err);
int moat__cgroup_create_req(const moat_cgroup_host *host, const moat_limits *limits, const moat_cgroup_req *req,
			    moat_cgroup **ret, moat_error *err);
int moat__cgroup_clone_fd(moat_cgroup *cg);
/* One write of the pid per hierarchy, to files opened by create(). */
int moat__cgroup_attach(moat_cgroup *cg, pid_t pid, moat_error *err);
/* An epoll fd, readable when an oom or pids event may have happened (then
 * call moat__cgroup_stats), or -1 when the backend has no notification. */
int moat__cgroup_event_fd(moat_cgroup *cg);
int moat__cgroup_stats(moat_cgroup *cg, moat_cgroup_stats *ret);
/* The same figures, the events' notifications left for the limits' poll to
 * take (a look from outside the poll must not hide an event from it). */
int moat__cgroup_stats_peek(moat_cgroup *cg, moat_cgroup_stats *ret);
/* SIGKILL to every task in the run's cgroup. */
int moat__cgroup_kill(moat_cgroup *cg);
/* How many processes the run's cgroup holds now, or -errno. */
int moat__cgroup_count_procs(moat_cgroup *cg);
/* Makes an emptied cgroup account as a new one made with the same limits
 * would (moat eval's warm path, one cgroup for many samples): CPU time,
 * memory peak, OOM kills and refused forks start from 0 again; the memory
 * node, when anything is still charged to it, is made anew with
 * memory_limit (MOAT_UNLIMITED: none). 0, or -EBUSY when it holds a
 * process, -ENOTSUP when the figures cannot be reset exactly (v2, where
 * one directory holds every controller): the caller then makes a new
 * cgroup. */
int moat__cgroup_reuse(moat_cgroup *cg, uint64_t memory_limit);
/* Fills isolation->cgroup ("v1", "v2", "hybrid", "none") and the note. */
void moat__cgroup_describe(moat_cgroup *cg, moat_isolation *iso);
/* Which limits this cgroup really enforces, so that rlimits can stand in for
 * the rest and nothing unenforced is claimed. */
bool moat__cgroup_enforces_memory(moat_cgroup *cg);
bool moat__cgroup_enforces_pids(moat_cgroup *cg);
bool moat__cgroup_enforces_cpu(moat_cgroup *cg);     /* cpu time accounting */
bool moat__cgroup_enforces_cpus(moat_cgroup *cg);    /* cpu bandwidth */
/* The directory of the run's cgroup for one controller, or NULL. */
const char *moat__cgroup_path(moat_cgroup *cg, moat_cgroup_ctrl c);
/* One directory of the run's cgroup as the sandbox sees it: bound read-only
 * at /sys/fs/cgroup (v2) or /sys/fs/cgroup/NAME (v1, NAME the hierarchy's
 * controllers joined by commas, as systemd names them). */
typedef struct moat_cgroup_mount {
	int version;
	char name[32];
	char dir[MOAT_MAX_PATH];
} moat_cgroup_mount;
/* Fills ret[0..] with the run's cgroup directories, one per hierarchy;
 * returns how many (0 without a cgroup). */
size_t moat__cgroup_mounts(moat_cgroup *cg, moat_cgroup_mount ret[_MOAT_CG_MAX]);
/* Kills leftovers and removes every directory create() made. Accepts NULL. */
void moat__cgroup_destroy(moat_cgroup *cg);
static inline void moat__cgroup_destroyp(moat_cgroup **cg) { moat__cgroup_destroy(*cg); }
#define _cleanup_cgroup_ _cleanup_(moat__cgroup_destroyp)

/* Pure: milliseconds until the CPU budget could run out at the earliest,
 * given what is used and how many CPUs (in thousandths) the run can occupy
 * at once. 0 when the budget is spent. The supervisor sleeps that long,
 * reads the usage again and repeats, so a budget is never overrun by more
 * than one check's latency and is never polled needlessly. */
uint64_t moat__cpu_next_check_ms(uint64_t budget_ms, uint64_t used_us, uint64_t cpus_milli);
