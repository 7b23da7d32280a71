/* The run's resource limits on the supervisor side: the per-run cgroup, the
 * CPU budget timer, the rlimits that stand in where no cgroup can be had,
 * and the exact figures that go into the result. sandbox.c calls these in
 * order:
 *
 *   moat__limits_prepare()    before clone: cgroup made, limits set
 *   moat__limits_clone_fd()   v2: CLONE_INTO_CGROUP target, or -1
 *   moat__limits_attach()     after clone, while the init sets up: the init
 *                             joins the cgroup before it forks the command
 *   moat__limits_fd()         poll it; when readable, moat__limits_check()
 *                             says whether a limit ended the run
 *   moat__limits_account()    after the run: cpu, memory, the verdict, and
 *                             what enforced each limit
 *   moat__limits_free()       kill leftovers, remove the cgroup */
#pragma once

#include "cgroup.h"
#include "config.h"
#include "error.h"
#include "result.h"

#include <sys/types.h>

/* rlimits the command's process sets on itself just before execve, because
 * no cgroup enforces these limits for the whole run. MOAT_UNLIMITED: not
 * set. Plain data, so it crosses clone() in the init's arguments. */
typedef struct moat_rlimit_plan {
	uint64_t data_bytes; /* RLIMIT_DATA per process, for --mem */
	uint64_t nproc;    /* RLIMIT_NPROC of the sandbox user, for --pids */
	uint64_t cpu_s;    /* RLIMIT_CPU per process, for --cpu */
} moat_rlimit_plan;

/* In the command's process. Returns 0 or a negative errno. */
int moat__rlimit_plan_apply(const moat_rlimit_plan *p);

typedef struct moat_run_limits moat_run_limits;

/* req: the cgroup a caller names (cgroup.h), or NULL for moat's own. */
int moat__limits_prepare(const moat_limits *lim, const moat_cgroup_req *req, moat_run_limits **ret, moat_error *err);
int moat__limits_clone_fd(moat_run_limits *rl);
/* What the command must set itself (everything the cgroup does not do). */
void moat__limits_rlimit_plan(moat_run_limits *rl, moat_rlimit_plan *ret);
/* True when the init must wait for moat__limits_attach() before it forks
 * the command (a v1 cgroup, joined by a write after clone). */
bool moat__limits_attach_pending(moat_run_limits *rl);
/* The run's cgroup directories for the sandbox to see (cgroup.h). */
size_t moat__limits_cgroup_mounts(moat_run_limits *rl, moat_cgroup_mount ret[_MOAT_CG_MAX]);
/* cloned_into: CLONE_INTO_CGROUP already placed the child. */
int moat__limits_attach(moat_run_limits *rl, pid_t pid, bool cloned_into, moat_error *err);
/* One fd for the supervisor's poll loop (cgroup events and the budget
 * timer), or -1 when nothing needs watching. */
int moat__limits_fd(moat_run_limits *rl);
/* Call when moat__limits_fd() is readable. Returns MOAT_STATUS_CPU_LIMIT,
 * MOAT_STATUS_OOM or MOAT_STATUS_PIDS_LIMIT when the run must end now (and
 * *ret_limit names the limit), else MOAT_STATUS_EXITED. */
moat_status moat__limits_check(moat_run_limits *rl, const char **ret_limit);
/* A long-lived sandbox is ready: its processes now are its rest. While it
 * is not busy and holds no more than those, the counters' poll stops. */
void moat__limits_rest_here(moat_run_limits *rl);
/* A command is starting or running (busy), or none is. */
void moat__limits_set_busy(moat_run_limits *rl, bool busy);
/* killed_for_limit: the supervisor already ended the run for a reason of
 * its own (wall, output, or a check above); that reason stands. */
void moat__limits_account(moat_run_limits *rl, const moat_limits *lim, moat_result *r, bool killed_for_limit);
/* Says in iso which cgroup the sandbox runs in (nothing without one). */
void moat__limits_describe(moat_run_limits *rl, moat_isolation *iso);
/* What a sandbox that lives on (a keeper's) reports at one command's end:
 * r's isolation (cgroup), enforced, limits_note, cpu and memory peak, the
 * cgroup's figures so far. No verdict. True when the CPU time is the
 * cgroup's (else r's is left alone). */
bool moat__limits_report(moat_run_limits *rl, const moat_limits *lim, moat_result *r);
/* The limit a command that ended with status (EXITED or SIGNALED) and
 * signal met, by moat__limits_verdict's rules over the cgroup's counters
 * so far ("memory", "pids", "cpu"), or NULL. rusage_cpu_ms stands in for
 * the cgroup's CPU time where it is unknown. */
const char *moat__limits_command_limit(moat_run_limits *rl, const moat_limits *lim, moat_status status, int signal,
				       uint64_t rusage_cpu_ms);
void moat__limits_free(moat_run_limits *rl);
static inline void moat__limits_freep(moat_run_limits **rl) { moat__limits_free(*rl); }
#define _cleanup_limits_ _cleanup_(moat__limits_freep)

/* Pure: the verdict once the run is over, from what the command did and
 * what the cgroup saw. An OOM kill or a failed fork anywhere in the run
 * decides it even when the command then exited by itself, so the verdict
 * does not depend on who noticed first. */
moat_status moat__limits_verdict(moat_status current, bool oom_killed, bool pids_hit, bool cpu_known,
				 uint64_t cpu_used_ms, uint64_t cpu_budget_ms, int term_signal, bool cpu_by_rlimit,
				 const char **ret_limit);
