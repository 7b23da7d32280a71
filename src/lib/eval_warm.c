/* moat eval's warm path for Python (docs/eval.md, "Throughput").
 *
 * Each worker builds one sandbox from the run's configuration and starts in
 * it, as its only command, a Python interpreter that has imported what the
 * harness needs (harness/eval_warm.py). For each sample that interpreter
 * forks a child, which this worker moves into a cgroup of the sample's own
 * (created as a cold run's is, with the sample's limits) before letting it
 * start; the child then confines itself further (a Landlock layer of its
 * own, scoped against signals and abstract sockets of every other process;
 * a seccomp filter against System V IPC) and runs the same harness a cold
 * sample runs. The worker enforces the wall, CPU and output limits, reads
 * the sample's accounting from its cgroup alone, and once the child has
 * ended kills whatever it left there and waits for the cgroup to be empty
 * before the interpreter clears /tmp and forks the next.
 *
 * What runs cold instead: a sample in another language, or of a problem
 * with limits of its own; every sample of a configuration with a
 * writable folder other than /tmp (/out, a read-write bind) or the file
 * trail, a host without a cgroup (v2 or v1) that enforces the limits or
 * without Landlock's scoping (ABI 6), and MOAT_EVAL_WARM=0. A worker whose
 * interpreter fails runs the rest of its samples cold. */
#include "eval.h"
#include "cgroup.h"
#include "sandbox-internal.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern const char moat__harness_eval_python[];
extern const char moat__harness_eval_warm[];

const char *moat__eval_warm_refusal(const moat_config *base)
{
	const char *e = getenv("MOAT_EVAL_WARM");
	if (e && strcmp(e, "0") == 0)
		return "MOAT_EVAL_WARM=0";
	if (base->out_dir)
		return "an output folder is writable";
	for (size_t i = 0; i < base->n_binds; i++)
		if (base->binds[i].flags & MOAT_BIND_RW)
			return "a read-write folder is bound";
	if (base->audit_files)
		return "the file trail is on";
	if (base->net != MOAT_NET_NONE)
		return "the sandbox has a network";
	return NULL;
}

/* Children the interpreter keeps forked ahead: on cgroup v1 moving a
 * process into a cgroup waits for an RCU grace period (10 to 20 ms on a busy
 * machine, more than a sample's run), and moves made one after another
 * within one period share it; so the worker moves this many children at a
 * time, each into its sample's cgroup, and they wait there for their
 * requests. */
#define WARM_AHEAD 4

/* A child forked ahead: its pid in the sandbox and on the host, and, once
 * moved, its sample's cgroup and the limits that cgroup was made with. */
typedef struct ahead {
	pid_t ns, host;
	moat_cgroup *cg;
	moat_limits lim;
} ahead;

/* A sample's limits, as a cold run's. */
typedef struct warm {
	moat_sandbox *sb;
	moat_config cfg; /* the sandbox's: no wall or CPU limit of its own */
	char procs[MOAT_MAX_PATH]; /* the sandbox's cgroup.procs */
	int in_w, out_r, smp_r;
	char line[128];
	size_t llen;
	pid_t rest[4]; /* the sandbox's own processes (init, interpreter) */
	size_t n_rest;
	uint32_t cmd; /* the interpreter's command id */
	uint64_t ncpu;     /* CPUs online */
	/* This process's /proc/self/mountinfo and cgroup, read once for the
	 * cgroups of all its samples: neither changes while it runs. */
	char *mountinfo, *self_cgroup;
	size_t k;          /* children kept ahead */
	size_t forks_due;  /* "forked" lines the interpreter owes */
	ahead pend[WARM_AHEAD]; /* forked, in the sandbox's cgroup */
	size_t n_pend;
	ahead ready[WARM_AHEAD]; /* moved into their cgroups, in fork order */
	size_t n_ready;
	/* Cgroups of samples that ended, emptied, oldest first, kept to be
	 * made new again (moat__cgroup_reuse) for a later sample with the
	 * same limits: a cgroup made and removed per sample costs more CPU
	 * than the sample's run (a mkdir and an rmdir per hierarchy, and
	 * some 40 of its files opened). One more than a burst of moves, so
	 * that the cgroup of the sample that ended last, whose files in /tmp
	 * the interpreter has not removed yet, is the last one taken. */
	moat_cgroup *spare[WARM_AHEAD + 1];
	moat_limits spare_lim[WARM_AHEAD + 1];
	size_t n_spare;
} warm;

static bool same_limits(const moat_limits *a, const moat_limits *b)
{
	return a->memory_bytes == b->memory_bytes && a->pids == b->pids && a->cpus_milli == b->cpus_milli;
}

/* Keeps the emptied cgroup of a sample that ended for a later one. */
static void spare_put(warm *w, moat_cgroup *cg, const moat_limits *lim)
{
	if (w->n_spare == ELEMENTSOF(w->spare)) {
		moat__cgroup_destroy(w->spare[0]);
		w->n_spare--;
		memmove(w->spare, w->spare + 1, w->n_spare * sizeof(w->spare[0]));
		memmove(w->spare_lim, w->spare_lim + 1, w->n_spare * sizeof(w->spare_lim[0]));
	}
	w->spare[w->n_spare] = cg;
	w->spare_lim[w->n_spare++] = *lim;
}

/* The oldest kept cgroup made with lim, made new again, or NULL. One that
 * cannot be (something of its last sample's is still charged to it, or
 * the host's cgroups cannot reset its figures) is removed. */
static moat_cgroup *spare_take(warm *w, const moat_limits *lim)
{
	for (size_t i = 0; i < w->n_spare; i++) {
		if (!same_limits(&w->spare_lim[i], lim))
			continue;
		moat_cgroup *cg = w->spare[i];
		w->n_spare--;
		memmove(w->spare + i, w->spare + i + 1, (w->n_spare - i) * sizeof(w->spare[0]));
		memmove(w->spare_lim + i, w->spare_lim + i + 1, (w->n_spare - i) * sizeof(w->spare_lim[0]));
		if (moat__cgroup_reuse(cg, lim->memory_bytes) == 0)
			return cg;
		moat__cgroup_destroy(cg);
		return NULL;
	}
	return NULL;
}

void moat__eval_warm_free(warm *w)
{
	if (!w)
		return;
	if (w->out_r >= 0)
		close(w->out_r);
	if (w->smp_r >= 0)
		close(w->smp_r);
	/* The interpreter ends at EOF on its stdin, and its child waiting for
	 * a request with it: the init reaps both, so that their CPU time is
	 * counted where the caller's rusage sees it, as a cold run's is. */
	if (w->in_w >= 0) {
		close(w->in_w);
		w->in_w = -1;
		if (w->sb && w->cmd) {
			moat_command_result cr;
			moat_error werr = {0};
			moat_sandbox_wait(w->sb, w->cmd, 5000, &cr, &werr);
		}
	}
	/* The children waiting in them ended with the interpreter (their
	 * request pipes closed); destroy kills any that did not. */
	for (size_t i = 0; i < w->n_ready; i++)
		moat__cgroup_destroy(w->ready[i].cg);
	for (size_t i = 0; i < w->n_spare; i++)
		moat__cgroup_destroy(w->spare[i]);
	moat_sandbox_destroy(w->sb, NULL, NULL);
	free(w->mountinfo);
	free(w->self_cgroup);
	free(w);
}

/* A line of the interpreter's, within timeout_ms (-1: none); 0, or -errno. */
static int read_line(warm *w, char *out, size_t size, int timeout_ms)
{
	for (;;) {
		char *nl = memchr(w->line, '\n', w->llen);
		if (nl) {
			size_t n = (size_t)(nl - w->line);
			if (n >= size)
				return -EBADMSG;
			memcpy(out, w->line, n);
			out[n] = 0;
			memmove(w->line, nl + 1, w->llen - n - 1);
			w->llen -= n + 1;
			return 0;
		}
		if (w->llen == sizeof(w->line))
			return -EBADMSG;
		struct pollfd pf = {.fd = w->out_r, .events = POLLIN};
		int r = poll(&pf, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		ssize_t k = read(w->out_r, w->line + w->llen, sizeof(w->line) - w->llen);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		w->llen += (size_t)k;
	}
}

int moat__eval_read_procs(const char *path, pid_t *pids, size_t max, size_t *ret_n)
{
	/* A pid is at most 7 digits (PID_MAX_LIMIT is 2^22), so max pids take
	 * at most (max + 1) * 8 bytes with their newlines: a list longer than
	 * that holds more than max pids, however long it is, and is -E2BIG,
	 * never an error about its size nor a list cut short. */
	size_t cap = (max + 1) * 8;
	_cleanup_free_ char *text = NULL;
	int r = moat__read_file_head_at(AT_FDCWD, path, cap + 1, &text);
	if (r < 0)
		return r;
	if ((size_t)r > cap)
		return -E2BIG;
	size_t n = 0;
	for (char *s = text, *end; *s; s = end) {
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		if (n == max)
			return -E2BIG;
		pids[n++] = (pid_t)v;
		while (*end == '\n')
			end++;
	}
	*ret_n = n;
	return 0;
}

static int send_block(int fd, char tag, const char *data, size_t len)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "%c %zu\n", tag, len);
	if (moat__write_all(fd, head, (size_t)n) < 0 || moat__write_all(fd, data, len) < 0)
		return -EPIPE;
	return 0;
}

/* A "forked PID" line: one more child waits. 1 when l was one, 0 when it
 * is another line, or -EPROTO. */
static int took_fork(warm *w, const char *l)
{
	if (strncmp(l, "forked ", 7) != 0)
		return 0;
	char *end;
	long ns = strtol(l + 7, &end, 10);
	if (*end || ns <= 1 || w->forks_due == 0 || w->n_pend == WARM_AHEAD)
		return -EPROTO;
	w->forks_due--;
	w->pend[w->n_pend++] = (ahead){.ns = (pid_t)ns};
	return 1;
}

/* The pid in the innermost PID namespace of host pid `host`, or -errno. */
static pid_t ns_pid(pid_t host)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)host);
	_cleanup_free_ char *text = NULL;
	int r = moat__read_file_at(AT_FDCWD, path, 16384, &text);
	if (r < 0)
		return r;
	char *l = strstr(text, "\nNSpid:");
	if (!l)
		return -ENOTSUP;
	l += 8;
	long last = -1;
	for (char *end;; l = end) {
		long v = strtol(l, &end, 10);
		if (end == l)
			break;
		last = v;
	}
	return last > 0 ? (pid_t)last : -EPROTO;
}

/* A cgroup of a sample's, with lim, holding host: a kept one made new
 * again, or else a new one. */
static int sample_cgroup(warm *w, pid_t host, const moat_limits *lim, moat_cgroup **ret, moat_error *err)
{
	/* The sandbox's creation swept what killed runs left. */
	moat_cgroup_host h = {.mountinfo = w->mountinfo, .self_cgroup = w->self_cgroup, .no_sweep = true};
	_cleanup_cgroup_ moat_cgroup *cg = spare_take(w, lim);
	int e;
	if (!cg && (e = moat__cgroup_create(&h, lim, NULL, &cg, err)) < 0)
		return e;
	if ((lim->memory_bytes != MOAT_UNLIMITED && !moat__cgroup_enforces_memory(cg)) ||
	    (lim->pids != MOAT_UNLIMITED && !moat__cgroup_enforces_pids(cg)) || !moat__cgroup_enforces_cpu(cg))
		return moat_error_set(err, ENOTSUP, "the sample's cgroup does not enforce its limits");
	if ((e = moat__cgroup_attach(cg, host, err)) < 0)
		return e;
	*ret = TAKE_PTR(cg);
	return 0;
}

/* Moves every child forked ahead into a cgroup of its own, made with lim,
 * one after another (on v1 they share a grace period). The children are
 * the processes of the sandbox's cgroup that are not the sandbox's own:
 * each must be one the interpreter said it forked. */
static int move_ahead(warm *w, const moat_limits *lim, moat_error *err)
{
	pid_t now[WARM_AHEAD + 8];
	size_t n = 0;
	int e = moat__eval_read_procs(w->procs, now, WARM_AHEAD + 8, &n);
	if (e < 0)
		return moat_error_set(err, -e, "%s", w->procs);
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		bool known = false;
		for (size_t j = 0; j < w->n_rest; j++)
			known |= now[i] == w->rest[j];
		if (known)
			continue;
		pid_t ns = ns_pid(now[i]);
		size_t j = 0;
		while (j < w->n_pend && (w->pend[j].ns != ns || w->pend[j].host))
			j++;
		if (ns < 0 || j == w->n_pend)
			return moat_error_set(err, EPROTO, "process %d in the sandbox's cgroup is no child forked ahead",
					      (int)now[i]);
		w->pend[j].host = now[i];
		found++;
	}
	if (found != w->n_pend)
		return moat_error_set(err, ESRCH, "a child forked ahead is not in the sandbox's cgroup");
	for (size_t i = 0; i < w->n_pend; i++) {
		ahead *a = &w->pend[i];
		if ((e = sample_cgroup(w, a->host, lim, &a->cg, err)) < 0)
			return e;
		a->lim = *lim;
		w->ready[w->n_ready++] = *a;
		*a = (ahead){0};
	}
	w->n_pend = 0;
	return 0;
}

int moat__eval_warm_new(const moat_config *base, warm **ret, moat_error *err)
{
	warm *w = calloc(1, sizeof(*w));
	if (!w)
		return moat_error_set(err, ENOMEM, "warm");
	w->in_w = w->out_r = w->smp_r = -1;
	w->cfg = *base;
	w->cfg.argv = NULL;
	w->cfg.stdin_path = NULL;
	w->cfg.tty = false;
	/* The sandbox lives as long as the worker; each sample's wall and CPU
	 * budgets are its own, kept here. */
	w->cfg.limits.wall_ms = MOAT_UNLIMITED;
	w->cfg.limits.cpu_ms = MOAT_UNLIMITED;
	moat_sandbox_opts opts;
	moat_sandbox_opts_init(&opts);
	long nc = sysconf(_SC_NPROCESSORS_ONLN);
	w->ncpu = nc > 0 ? (uint64_t)nc : 1;
	int r = moat__read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1u << 20, &w->mountinfo);
	if (r >= 0)
		r = moat__read_file_at(AT_FDCWD, "/proc/self/cgroup", 1u << 16, &w->self_cgroup);
	if (r < 0) {
		r = moat_error_set(err, -r, "/proc/self/mountinfo");
		goto fail;
	}
	r = moat_sandbox_create(&w->cfg, &opts, &w->sb, err);
	if (r < 0)
		goto fail;
	moat_cgroup_mount m[_MOAT_CG_MAX];
	size_t nm = moat__sandbox_cgroup_mounts(w->sb, m);
	if (nm == 0) {
		r = moat_error_set(err, ENOTSUP, "no cgroup for the sandbox");
		goto fail;
	}
	/* Any of its hierarchies lists the same processes. */
	snprintf(w->procs, sizeof(w->procs), "%s/cgroup.procs", m[0].dir);

	int in[2] = {-1, -1}, out[2] = {-1, -1}, smp[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(smp, O_CLOEXEC) < 0) {
		r = moat_error_set(err, errno, "pipe");
		for (int i = 0; i < 2; i++) {
			if (in[i] >= 0)
				close(in[i]);
			if (out[i] >= 0)
				close(out[i]);
		}
		goto fail;
	}
	char *argv[] = {"/usr/bin/python3", "-I", "-S", "-c", (char *)moat__harness_eval_warm, NULL};
	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = argv;
	spec.stdin_fd = in[0];
	spec.stdout_fd = out[1];
	spec.stderr_fd = smp[1];
	moat_command cmd;
	r = moat_sandbox_spawn(w->sb, &spec, &cmd, err);
	close(in[0]);
	close(out[1]);
	close(smp[1]);
	w->in_w = in[1];
	w->out_r = out[0];
	w->smp_r = smp[0];
	if (r < 0)
		goto fail;
	w->cmd = cmd.id;
	fcntl(w->smp_r, F_SETFL, O_NONBLOCK);
	if (send_block(w->in_w, 'H', moat__harness_eval_python, strlen(moat__harness_eval_python)) < 0) {
		r = moat_error_set(err, EPIPE, "the warm interpreter ended");
		goto fail;
	}
	char l[64];
	if ((r = read_line(w, l, sizeof(l), 60000)) < 0 || strcmp(l, "ready") != 0) {
		r = moat_error_set(err, r < 0 ? -r : EPROTO, "the warm interpreter did not start");
		goto fail;
	}
	/* The sandbox's own processes: the init and the interpreter, which
	 * forks its first child once told to proceed. */
	if ((r = moat__eval_read_procs(w->procs, w->rest, 4, &w->n_rest)) < 0) {
		r = moat_error_set(err, -r, "%s", w->procs);
		goto fail;
	}
	if (w->n_rest != 2) {
		r = moat_error_set(err, EPROTO, "the sandbox holds %zu processes, not its init and interpreter",
				   w->n_rest);
		goto fail;
	}
	/* Every child waits in the sandbox's cgroup until it is moved: keep
	 * within its pids limit, the sandbox's own two processes counted. */
	w->k = WARM_AHEAD;
	if (w->cfg.limits.pids != MOAT_UNLIMITED && w->cfg.limits.pids < w->k + 2)
		w->k = w->cfg.limits.pids > 3 ? (size_t)w->cfg.limits.pids - 2 : 1;
	w->forks_due = w->k;
	char p[16];
	int pn = snprintf(p, sizeof(p), "P %zu\n", w->k);
	if (moat__write_all(w->in_w, p, (size_t)pn) < 0) {
		r = moat_error_set(err, EPIPE, "the warm interpreter ended");
		goto fail;
	}
	*ret = w;
	return 0;
fail:
	moat__eval_warm_free(w);
	return r;
}

typedef struct tailbuf {
	char *buf;
	size_t len, cap;
} tailbuf;

static void tail_add(tailbuf *t, const char *b, size_t n)
{
	if (n >= t->cap) {
		memcpy(t->buf, b + n - t->cap, t->cap);
		t->len = t->cap;
		return;
	}
	if (t->len + n > t->cap) {
		size_t drop = t->len + n - t->cap;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, b, n);
	t->len += n;
}

/* Reads what the sample wrote; false once the output limit is passed. */
static bool drain(warm *w, tailbuf *t, uint64_t *total, uint64_t cap)
{
	char b[65536];
	ssize_t k;
	while ((k = read(w->smp_r, b, sizeof(b))) > 0) {
		*total += (uint64_t)k;
		tail_add(t, b, (size_t)k);
		if (cap != MOAT_UNLIMITED && *total > cap)
			return false;
	}
	return true;
}

/* Runs one sample in w. Returns 0 with *r filled, or a negative errno
 * when the interpreter or the cgroup failed (w is then unusable and the
 * sample should run cold). */
int moat__eval_warm_run(warm *w, const moat_limits *lim, const char *req, size_t req_len, char *tail,
			size_t tail_cap, size_t *ret_tail_len, moat_result *r, moat_error *err)
{
	moat_result_init(r);
	char l[64];
	int e;
	/* The next child, moved ahead into its cgroup: when none is, the
	 * interpreter's children forked ahead are moved all at once. */
	if (w->n_ready == 0) {
		while (w->forks_due > 0) {
			if ((e = read_line(w, l, sizeof(l), 60000)) < 0 || (e = took_fork(w, l)) <= 0)
				return moat_error_set(err, e < 0 ? -e : EPROTO, "the warm interpreter did not fork");
		}
		if ((e = move_ahead(w, lim, err)) < 0)
			return e;
	}
	ahead a = w->ready[0];
	memmove(w->ready, w->ready + 1, (w->n_ready - 1) * sizeof(w->ready[0]));
	w->n_ready--;
	_cleanup_cgroup_ moat_cgroup *cg = a.cg;
	if (a.lim.memory_bytes != lim->memory_bytes || a.lim.pids != lim->pids || a.lim.cpus_milli != lim->cpus_milli) {
		/* Limits of another sample's: a cgroup made with these. */
		moat_cgroup *own = NULL;
		if ((e = sample_cgroup(w, a.host, lim, &own, err)) < 0)
			return e;
		moat__cgroup_destroy(cg);
		cg = own;
	}
	/* The request is its go. */
	uint64_t t0 = moat__now_ns();
	if (send_block(w->in_w, 'R', req, req_len) < 0)
		return moat_error_set(err, EPIPE, "the warm interpreter ended");

	tailbuf t = {.buf = tail, .cap = tail_cap};
	uint64_t total = 0;
	int evfd = moat__cgroup_event_fd(cg);
	/* When the CPU budget could run out at the earliest: until then
	 * the cgroup's counters need no reading (it drains at most cm CPUs
	 * at a time). */
	uint64_t cpu_check_ns = t0;
	moat_status killed = MOAT_STATUS_EXITED;
	const char *limit = NULL;
	int status = -1;
	bool exited = false;
	while (!exited) {
		uint64_t el = (moat__now_ns() - t0) / 1000000;
		int timeout = -1;
		if (killed == MOAT_STATUS_EXITED) {
			if (lim->wall_ms != MOAT_UNLIMITED)
				timeout = el >= lim->wall_ms ? 0 : (int)(lim->wall_ms - el);
			if (lim->cpu_ms != MOAT_UNLIMITED) {
				uint64_t now = moat__now_ns(), next;
				if (now >= cpu_check_ns) {
					moat_cgroup_stats st;
					uint64_t used =
						moat__cgroup_stats(cg, &st) == 0 ? st.cpu_user_us + st.cpu_sys_us : 0;
					uint64_t cm = lim->cpus_milli != MOAT_UNLIMITED && lim->cpus_milli
							      ? lim->cpus_milli
							      : w->ncpu * 1000;
					next = moat__cpu_next_check_ms(lim->cpu_ms, used, cm);
					if (next > 1000)
						next = 1000;
					cpu_check_ns = now + next * 1000000;
				} else {
					next = (cpu_check_ns - now + 999999) / 1000000;
				}
				if (next == 0) {
					killed = MOAT_STATUS_CPU_LIMIT;
					limit = "cpu";
					moat__cgroup_kill(cg);
					continue;
				}
				if (timeout < 0 || next < (uint64_t)timeout)
					timeout = (int)(next > 1000 ? 1000 : next);
			}
		}
		struct pollfd pf[3] = {{.fd = w->out_r, .events = POLLIN},
				       {.fd = w->smp_r, .events = POLLIN},
				       {.fd = evfd, .events = POLLIN}};
		int pr = poll(pf, evfd >= 0 ? 3 : 2, memchr(w->line, '\n', w->llen) ? 0 : timeout);
		if (pr < 0 && errno != EINTR)
			return moat_error_set(err, errno, "poll");
		if (!drain(w, &t, &total, lim->output_bytes) && killed == MOAT_STATUS_EXITED) {
			killed = MOAT_STATUS_OUTPUT_LIMIT;
			limit = "output";
			moat__cgroup_kill(cg);
		}
		if (evfd >= 0 && (pf[2].revents & POLLIN)) {
			moat_cgroup_stats st;
			if (moat__cgroup_stats(cg, &st) == 0 && (st.oom_killed || st.pids_hit) &&
			    killed == MOAT_STATUS_EXITED) {
				/* As a cold run ends: the verdict below names it. */
				killed = MOAT_STATUS_SIGNALED;
				moat__cgroup_kill(cg);
			}
		}
		if (memchr(w->line, '\n', w->llen) || (pf[0].revents & (POLLIN | POLLHUP))) {
			if ((e = read_line(w, l, sizeof(l), 60000)) < 0 || (e = took_fork(w, l)) < 0 ||
			    (e == 0 && strncmp(l, "exit ", 5) != 0))
				return moat_error_set(err, e < 0 ? -e : EPROTO, "the warm interpreter ended");
			if (e == 1)
				continue;
			status = atoi(l + 5);
			w->forks_due++;
			exited = true;
			break;
		}
		if (pr == 0 && killed == MOAT_STATUS_EXITED && lim->wall_ms != MOAT_UNLIMITED &&
		    (moat__now_ns() - t0) / 1000000 >= lim->wall_ms) {
			killed = MOAT_STATUS_TIMEOUT;
			limit = "wall";
			moat__cgroup_kill(cg);
		}
	}
	r->wall_ms = (moat__now_ns() - t0) / 1000000;
	/* Nothing the sample started outlives it: its cgroup is emptied
	 * before the next sample is forked. */
	for (int tries = 0;; tries++) {
		moat__cgroup_kill(cg);
		int c = moat__cgroup_count_procs(cg);
		if (c == 0)
			break;
		if (c < 0 || tries > 10000)
			return moat_error_set(err, c < 0 ? -c : EBUSY, "the sample's cgroup did not empty");
		usleep(200);
	}
	drain(w, &t, &total, MOAT_UNLIMITED);
	*ret_tail_len = t.len;
	r->stdout_bytes = total;
	/* The sample's stdout and stderr are one pipe (harness/eval_warm.py):
	 * their sum is all that is known, reported as output_bytes. */
	r->streams_merged = true;

	moat_cgroup_stats st = {0};
	moat__cgroup_stats(cg, &st);
	if (WIFEXITED(status)) {
		r->status = MOAT_STATUS_EXITED;
		r->exit_code = WEXITSTATUS(status);
	} else {
		r->status = MOAT_STATUS_SIGNALED;
		r->exit_code = -1;
		r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	}
	if (killed != MOAT_STATUS_EXITED && killed != MOAT_STATUS_SIGNALED) {
		r->status = killed;
		snprintf(r->limit_hit, sizeof(r->limit_hit), "%s", limit);
	}
	if (st.cpu_known) {
		r->cpu_user_ms = st.cpu_user_us / 1000;
		r->cpu_sys_ms = st.cpu_sys_us / 1000;
		r->cpu_ms = r->cpu_user_ms + r->cpu_sys_ms;
	}
	r->memory_peak_bytes = st.memory_peak_bytes;
	r->memory_peak_known = st.memory_peak_known;
	moat_status v = moat__limits_verdict(r->status, st.oom_killed, st.pids_hit,
					     st.cpu_known && lim->cpu_ms != MOAT_UNLIMITED,
					     (st.cpu_user_us + st.cpu_sys_us) / 1000, lim->cpu_ms, r->signal, false,
					     &limit);
	if (v != r->status) {
		r->status = v;
		if (limit)
			snprintf(r->limit_hit, sizeof(r->limit_hit), "%s", limit);
	}
	if (r->status == MOAT_STATUS_EXITED)
		r->exit_status = r->exit_code;
	else if (r->status == MOAT_STATUS_SIGNALED)
		r->exit_status = 128 + r->signal;
	else
		r->exit_status = 128 + SIGKILL;
	r->isolation = *moat__sandbox_isolation(w->sb);
	moat__cgroup_describe(cg, &r->isolation);
	/* Empty: kept for a later sample, which takes it only once its
	 * figures are reset (moat__cgroup_reuse). */
	spare_put(w, TAKE_PTR(cg), lim);
	return 0;
}
