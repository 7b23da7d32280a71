/* The run's resource limits on the supervisor side; see limits.h. */
#include "runlimits.h"

#include "cgroup.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>

/* How often the supervisor reads the cgroup's counters when it has no other
 * reason to wake: cgroup v1 does not notify pids.events, and v2 kernels
 * without memory.peak need memory.current sampled. Reading three small
 * files twenty times a second costs nothing measurable. */
#define LIMITS_POLL_MS 50

struct moat_run_limits {
	moat_cgroup *cg;
	moat_limits lim;
	int epoll_fd;
	int timer_fd;
	bool attach_pending;
	uint64_t cpus_milli; /* how many CPUs the run can occupy at once */
	/* A long-lived sandbox at rest (no command starting or running, and
	 * no more processes than its own when it became ready) changes none
	 * of the counters the poll reads: the poll stops until a command
	 * starts (moat__limits_set_busy), so an idle sandbox's supervisor
	 * never wakes. rest_procs 0: unknown, the poll never stops. */
	int rest_procs;
	bool busy, armed;
	uint64_t last_used_us;
};

int moat__rlimit_plan_apply(const moat_rlimit_plan *p)
{
	struct rlimit rl;
	/* RLIMIT_DATA, not RLIMIT_AS: it counts private writable memory (heap,
	 * anonymous mappings, thread stacks) as it is mapped or made writable,
	 * not address space reserved with PROT_NONE. The JVM (heap and class
	 * space), V8 and Go reserve gigabytes they never touch and could not
	 * start under an RLIMIT_AS of a few hundred megabytes. */
	if (p->data_bytes != MOAT_UNLIMITED) {
		rl = (struct rlimit){.rlim_cur = p->data_bytes, .rlim_max = p->data_bytes};
		if (setrlimit(RLIMIT_DATA, &rl) < 0)
			return moat__neg_errno();
	}
	if (p->nproc != MOAT_UNLIMITED) {
		rl = (struct rlimit){.rlim_cur = p->nproc, .rlim_max = p->nproc};
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			return moat__neg_errno();
	}
	if (p->cpu_s != MOAT_UNLIMITED) {
		/* SIGXCPU at the soft limit tells the verdict apart from any
		 * other SIGKILL; the hard limit one second later is the
		 * backstop for a process that catches it. */
		rl = (struct rlimit){.rlim_cur = p->cpu_s, .rlim_max = p->cpu_s + 1};
		if (setrlimit(RLIMIT_CPU, &rl) < 0)
			return moat__neg_errno();
	}
	return 0;
}

/* An rlimit the command's process sets on itself cannot go above the hard
 * limit it inherits from moat: raising one needs CAP_SYS_RESOURCE in the
 * host's user namespace, which nothing in the sandbox has. Refused here,
 * with the bound, rather than failing inside or silently keeping the old
 * value while the result claims the new one. */
static int check_hard(int resource, const char *rname, uint64_t v, size_t offset, const char *why, moat_error *err)
{
	struct rlimit rl;
	if (v == MOAT_UNLIMITED || getrlimit(resource, &rl) < 0 || rl.rlim_max == RLIM_INFINITY || v <= rl.rlim_max)
		return 0;
	char label[64];
	return moat_error_set(err, MOAT_EINPUT, "%s: %llu is more than moat may set here (at most %llu, its hard %s%s)",
			      moat_limit_label(offset, label, sizeof(label)), (unsigned long long)v,
			      (unsigned long long)rl.rlim_max, rname, why);
}

static int check_rlimits(const moat_limits *l, const moat_rlimit_plan *p, moat_error *err)
{
	int r;
	if ((r = check_hard(RLIMIT_NOFILE, "RLIMIT_NOFILE", l->files, offsetof(moat_limits, files), "", err)) < 0 ||
	    (r = check_hard(RLIMIT_FSIZE, "RLIMIT_FSIZE", l->fsize, offsetof(moat_limits, fsize), "", err)) < 0 ||
	    (r = check_hard(RLIMIT_NPROC, "RLIMIT_NPROC", p->nproc, offsetof(moat_limits, pids),
			    "; without a cgroup, the pids limit is that rlimit", err)) < 0 ||
	    (r = check_hard(RLIMIT_DATA, "RLIMIT_DATA", p->data_bytes, offsetof(moat_limits, memory_bytes),
			    "; without a cgroup, the memory limit is that rlimit", err)) < 0)
		return r;
	/* RLIMIT_CPU: the plan's hard limit is one second above the soft. */
	if (p->cpu_s != MOAT_UNLIMITED &&
	    (r = check_hard(RLIMIT_CPU, "RLIMIT_CPU in seconds", p->cpu_s + 1, offsetof(moat_limits, cpu_ms),
			    "; without a cgroup, the CPU limit is that rlimit", err)) < 0)
		return r;
	return 0;
}

int moat__limits_prepare(const moat_limits *lim, const moat_cgroup_req *req, moat_run_limits **ret, moat_error *err)
{
	_cleanup_limits_ moat_run_limits *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return moat_error_set(err, ENOMEM, "limits");
	rl->epoll_fd = rl->timer_fd = -1;
	rl->lim = *lim;
	int r = req ? moat__cgroup_create_req(NULL, lim, req, &rl->cg, err)
		    : moat__cgroup_create(NULL, lim, NULL, &rl->cg, err);
	if (r < 0)
		return r;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	rl->cpus_milli = (uint64_t)(ncpu > 0 ? ncpu : 1) * 1000;
	if (moat__cgroup_enforces_cpus(rl->cg) && lim->cpus_milli < rl->cpus_milli)
		rl->cpus_milli = lim->cpus_milli;
	rl->attach_pending = moat__cgroup_path(rl->cg, MOAT_CG_MEMORY) || moat__cgroup_path(rl->cg, MOAT_CG_PIDS) ||
			     moat__cgroup_path(rl->cg, MOAT_CG_CPUACCT);
	moat_rlimit_plan plan;
	moat__limits_rlimit_plan(rl, &plan);
	r = check_rlimits(lim, &plan, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(rl);
	return 0;
}

int moat__limits_clone_fd(moat_run_limits *rl) { return rl ? moat__cgroup_clone_fd(rl->cg) : -1; }

bool moat__limits_attach_pending(moat_run_limits *rl) { return rl && rl->attach_pending; }

size_t moat__limits_cgroup_mounts(moat_run_limits *rl, moat_cgroup_mount ret[_MOAT_CG_MAX])
{
	return rl ? moat__cgroup_mounts(rl->cg, ret) : 0;
}

void moat__limits_rlimit_plan(moat_run_limits *rl, moat_rlimit_plan *ret)
{
	moat_rlimit_plan p = {MOAT_UNLIMITED, MOAT_UNLIMITED, MOAT_UNLIMITED};
	if (rl) {
		const moat_limits *l = &rl->lim;
		if (l->memory_bytes != MOAT_UNLIMITED && !moat__cgroup_enforces_memory(rl->cg))
			p.data_bytes = l->memory_bytes;
		if (l->pids != MOAT_UNLIMITED && !moat__cgroup_enforces_pids(rl->cg))
			p.nproc = l->pids;
		if (l->cpu_ms != MOAT_UNLIMITED && !moat__cgroup_enforces_cpu(rl->cg))
			p.cpu_s = (l->cpu_ms + 999) / 1000;
	}
	*ret = p;
}

int moat__limits_attach(moat_run_limits *rl, pid_t pid, bool cloned_into, moat_error *err)
{
	if (!rl || !rl->attach_pending)
		return 0;
	rl->attach_pending = false;
	if (cloned_into)
		return 0;
	return moat__cgroup_attach(rl->cg, pid, err);
}

static bool at_rest(moat_run_limits *rl)
{
	if (rl->busy || rl->rest_procs <= 0)
		return false;
	int n = moat__cgroup_count_procs(rl->cg);
	return n >= 0 && n <= rl->rest_procs;
}

static bool cpu_budget_watched(moat_run_limits *rl)
{
	return rl->lim.cpu_ms != MOAT_UNLIMITED && moat__cgroup_enforces_cpu(rl->cg);
}

/* Arms the timer for the next moment a limit could have been crossed. */
static void arm_timer(moat_run_limits *rl, uint64_t used_us)
{
	uint64_t wait = MOAT_UNLIMITED;
	if (cpu_budget_watched(rl))
		wait = moat__cpu_next_check_ms(rl->lim.cpu_ms, used_us, rl->cpus_milli);
	rl->last_used_us = used_us;
	if ((moat__cgroup_enforces_pids(rl->cg) || moat__cgroup_enforces_memory(rl->cg)) && !at_rest(rl))
		wait = wait < LIMITS_POLL_MS ? wait : LIMITS_POLL_MS;
	if (wait == MOAT_UNLIMITED)
		return;
	if (wait == 0)
		wait = 1;
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(wait / 1000), .tv_nsec = (long)(wait % 1000) * 1000000}};
	if (timerfd_settime(rl->timer_fd, 0, &its, NULL) == 0)
		rl->armed = true;
}

void moat__limits_rest_here(moat_run_limits *rl)
{
	if (!rl)
		return;
	int n = moat__cgroup_count_procs(rl->cg);
	rl->rest_procs = n > 0 ? n : 0;
}

void moat__limits_set_busy(moat_run_limits *rl, bool busy)
{
	if (!rl || rl->busy == busy)
		return;
	rl->busy = busy;
	/* Waking from rest: the poll starts again at once. */
	if (busy && !rl->armed && rl->timer_fd >= 0)
		arm_timer(rl, rl->last_used_us);
}

int moat__limits_fd(moat_run_limits *rl)
{
	if (!rl)
		return -1;
	if (rl->epoll_fd >= 0)
		return rl->epoll_fd;
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -1;
	int n = 0;
	int cgfd = moat__cgroup_event_fd(rl->cg);
	if (cgfd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = cgfd};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, cgfd, &ev) == 0)
			n++;
	}
	if (cpu_budget_watched(rl) || moat__cgroup_enforces_pids(rl->cg) || moat__cgroup_enforces_memory(rl->cg)) {
		rl->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = rl->timer_fd};
		if (rl->timer_fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, rl->timer_fd, &ev) == 0) {
			n++;
			arm_timer(rl, 0);
		}
	}
	if (n == 0)
		return -1;
	rl->epoll_fd = TAKE_FD(ep);
	return rl->epoll_fd;
}

moat_status moat__limits_check(moat_run_limits *rl, const char **ret_limit)
{
	*ret_limit = NULL;
	if (!rl)
		return MOAT_STATUS_EXITED;
	uint64_t ticks;
	bool timer_fired = rl->timer_fd >= 0 && read(rl->timer_fd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks);
	if (timer_fired)
		rl->armed = false;
	moat_cgroup_stats st;
	(void)moat__cgroup_stats(rl->cg, &st);
	uint64_t used_us = st.cpu_user_us + st.cpu_sys_us;
	moat_status v = moat__limits_verdict(MOAT_STATUS_EXITED, st.oom_killed, st.pids_hit,
					     st.cpu_known && cpu_budget_watched(rl), used_us / 1000, rl->lim.cpu_ms,
					     0, false, ret_limit);
	if (v != MOAT_STATUS_EXITED)
		return v;
	if (timer_fired)
		arm_timer(rl, used_us);
	return MOAT_STATUS_EXITED;
}

moat_status moat__limits_verdict(moat_status current, bool oom_killed, bool pids_hit, bool cpu_known,
				 uint64_t cpu_used_ms, uint64_t cpu_budget_ms, int term_signal, bool cpu_by_rlimit,
				 const char **ret_limit)
{
	*ret_limit = NULL;
	if (current != MOAT_STATUS_EXITED && current != MOAT_STATUS_SIGNALED)
		return current;
	if (oom_killed) {
		*ret_limit = "memory";
		return MOAT_STATUS_OOM;
	}
	if (pids_hit) {
		*ret_limit = "pids";
		return MOAT_STATUS_PIDS_LIMIT;
	}
	if (cpu_known && cpu_budget_ms != MOAT_UNLIMITED && cpu_used_ms >= cpu_budget_ms) {
		*ret_limit = "cpu";
		return MOAT_STATUS_CPU_LIMIT;
	}
	if (cpu_by_rlimit && current == MOAT_STATUS_SIGNALED && term_signal == SIGXCPU) {
		*ret_limit = "cpu";
		return MOAT_STATUS_CPU_LIMIT;
	}
	/* A program that catches SIGXCPU runs on to the hard limit, one
	 * second later, and dies of the kernel's SIGKILL: with the budget
	 * spent (the rusage figure, which only ever counts less than was
	 * used), that SIGKILL is the CPU limit too. */
	if (cpu_by_rlimit && current == MOAT_STATUS_SIGNALED && term_signal == SIGKILL &&
	    cpu_budget_ms != MOAT_UNLIMITED && cpu_used_ms >= cpu_budget_ms) {
		*ret_limit = "cpu";
		return MOAT_STATUS_CPU_LIMIT;
	}
	return current;
}

static void note_add(moat_result *r, const char *text)
{
	size_t l = strlen(r->limits_note);
	snprintf(r->limits_note + l, sizeof(r->limits_note) - l, "%s%s", l ? "; " : "", text);
}

/* What enforced each limit that was asked for. The cgroup's own answers
 * decide memory, pids, cpu and cpus; the rest is put in force by fixed
 * mechanisms of the sandbox (the wall timer and output cap in sandbox.c,
 * the /tmp tmpfs in mount.c, the per-process rlimits in init.c). */
static void fill_enforced(moat_run_limits *rl, const moat_limits *l, moat_result *r)
{
	moat_cgroup *cg = rl->cg;
	if (l->wall_ms != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_WALL, l->wall_ms, MOAT_MECH_TIMER);
	if (l->cpu_ms != MOAT_UNLIMITED) {
		bool cgc = moat__cgroup_enforces_cpu(cg);
		/* RLIMIT_CPU counts whole seconds: what is applied is the
		 * budget rounded up, and that is what is reported. */
		moat_result_enforce(r, MOAT_LIMIT_KIND_CPU, cgc ? l->cpu_ms : (l->cpu_ms + 999) / 1000 * 1000,
				    cgc ? MOAT_MECH_CGROUP : MOAT_MECH_RLIMIT);
		if (!cgc)
			note_add(r, "cpu: RLIMIT_CPU per process, in whole seconds, not the run's total");
	}
	if (l->memory_bytes != MOAT_UNLIMITED) {
		bool cgm = moat__cgroup_enforces_memory(cg);
		moat_result_enforce(r, MOAT_LIMIT_KIND_MEMORY, l->memory_bytes, cgm ? MOAT_MECH_CGROUP : MOAT_MECH_RLIMIT);
		if (!cgm)
			note_add(r, "memory: RLIMIT_DATA per process (private writable memory, not the run's total)");
	}
	if (l->pids != MOAT_UNLIMITED) {
		bool cgp = moat__cgroup_enforces_pids(cg);
		moat_result_enforce(r, MOAT_LIMIT_KIND_PIDS, l->pids, cgp ? MOAT_MECH_CGROUP : MOAT_MECH_RLIMIT);
		if (!cgp)
			note_add(r, "pids: RLIMIT_NPROC of the sandbox user");
	}
	if (l->cpus_milli != MOAT_UNLIMITED && l->cpus_milli > 0) {
		bool cgb = moat__cgroup_enforces_cpus(cg);
		moat_result_enforce(r, MOAT_LIMIT_KIND_CPUS, l->cpus_milli, cgb ? MOAT_MECH_CGROUP : MOAT_MECH_NONE);
		if (!cgb)
			note_add(r, "cpus: not enforced without a cgroup");
	}
	if (l->output_bytes != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_OUTPUT, l->output_bytes, MOAT_MECH_SUPERVISOR);
	if (l->tmp_bytes != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_TMP, l->tmp_bytes, MOAT_MECH_TMPFS);
	if (l->files != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_FILES, l->files, MOAT_MECH_RLIMIT);
	if (l->fsize != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_FSIZE, l->fsize, MOAT_MECH_RLIMIT);
	/* limits.disk and limits.inodes depend on how /out is built:
	 * outdir.c (moat__out_enforced) says. */
}

/* The cgroup's CPU time and memory peak into r, as a run's result says
 * them; st is what was read. */
static void take_stats(moat_run_limits *rl, moat_result *r, bool peek, moat_cgroup_stats *st)
{
	(void)(peek ? moat__cgroup_stats_peek(rl->cg, st) : moat__cgroup_stats(rl->cg, st));
	if (st->cpu_known) {
		/* The cgroup counts every process and thread of the run,
		 * including any the init never reaped; rusage cannot. */
		r->cpu_user_ms = st->cpu_user_us / 1000;
		r->cpu_sys_ms = st->cpu_sys_us / 1000;
		r->cpu_ms = r->cpu_user_ms + r->cpu_sys_ms; /* the parts add up in the JSON */
	}
	else {
		r->cpu_from_rusage = true;
		note_add(r, "cpu_ms: approximate, from rusage, which misses processes still running when the run ended "
			    "and children reaped without a wait (a parent ignoring SIGCHLD)");
	}
	if (st->memory_peak_known) {
		r->memory_peak_bytes = st->memory_peak_bytes;
		r->memory_peak_known = true;
	}
}

void moat__limits_describe(moat_run_limits *rl, moat_isolation *iso)
{
	if (rl)
		moat__cgroup_describe(rl->cg, iso);
}

bool moat__limits_report(moat_run_limits *rl, const moat_limits *lim, moat_result *r)
{
	if (!rl)
		return false;
	moat__cgroup_describe(rl->cg, &r->isolation);
	fill_enforced(rl, lim, r);
	moat_cgroup_stats st;
	take_stats(rl, r, true, &st);
	return st.cpu_known;
}

const char *moat__limits_command_limit(moat_run_limits *rl, const moat_limits *lim, moat_status status, int signal,
				       uint64_t rusage_cpu_ms)
{
	if (!rl)
		return NULL;
	moat_cgroup_stats st;
	/* A look, not the poll's read: an event seen here is still the
	 * poll's to act on (it ends the sandbox for the limit). */
	(void)moat__cgroup_stats_peek(rl->cg, &st);
	uint64_t cpu_ms = st.cpu_known ? (st.cpu_user_us + st.cpu_sys_us) / 1000 : rusage_cpu_ms;
	const char *limit = NULL;
	(void)moat__limits_verdict(status, st.oom_killed, st.pids_hit, st.cpu_known && cpu_budget_watched(rl), cpu_ms,
				   lim->cpu_ms, signal, !moat__cgroup_enforces_cpu(rl->cg), &limit);
	return limit;
}

void moat__limits_account(moat_run_limits *rl, const moat_limits *lim, moat_result *r, bool killed_for_limit)
{
	if (!rl) {
		r->cpu_from_rusage = true;
		return; /* nothing was put in force, so nothing is claimed */
	}
	moat__cgroup_describe(rl->cg, &r->isolation);
	fill_enforced(rl, lim, r);
	if (r->status == MOAT_STATUS_SETUP_ERROR)
		return;
	moat_cgroup_stats st;
	take_stats(rl, r, false, &st);
	if (killed_for_limit)
		return;
	const char *limit = NULL;
	moat_status v = moat__limits_verdict(r->status, st.oom_killed, st.pids_hit,
					     st.cpu_known && cpu_budget_watched(rl), r->cpu_ms, lim->cpu_ms,
					     r->signal, !moat__cgroup_enforces_cpu(rl->cg), &limit);
	if (v != r->status) {
		r->status = v;
		if (limit)
			snprintf(r->limit_hit, sizeof(r->limit_hit), "%s", limit);
	}
}

void moat__limits_free(moat_run_limits *rl)
{
	if (!rl)
		return;
	if (rl->timer_fd >= 0)
		close(rl->timer_fd);
	if (rl->epoll_fd >= 0)
		close(rl->epoll_fd);
	moat__cgroup_destroy(rl->cg);
	free(rl);
}
