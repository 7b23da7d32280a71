/* moat-bench: moat against its peers, measured in the same run.
 *
 * Every variant of a scenario is an argv run straight by fork + execve +
 * waitpid, timed with CLOCK_MONOTONIC around those three calls: no shell and
 * no helper program sits in the timed path. The variants of a scenario are
 * interleaved (A B C D A B C D ...), so a neighbour's build or a frequency
 * change on the host hits every variant alike and the ratios stay honest
 * even when the absolute numbers drift.
 *
 * A peer that is not installed, or that cannot work here (no unprivileged
 * user namespaces, say), is reported as absent with the reason; it never
 * gets a number. Scenarios that need a moat feature the binary under test
 * lacks print "not available yet". */
#include "benchstats.h"
#include "keeper.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

/* Caps on what the command line may ask for, so a typo cannot make the
 * driver allocate or run without end. */
#define MAX_RUNS 100000
#define MAX_WORKERS 64
#define MAX_ARGS 64
#define MAX_VARIANTS 8

typedef struct variant {
	const char *name;  /* how the table names it */
	char *argv[MAX_ARGS];
	bool available;
	char why[256];     /* when not available: why */
	uint64_t *samples; /* wall time, nanoseconds */
	uint64_t *cpu;     /* CPU time of the whole process tree, ns */
	size_t n, ncpu;
} variant;

typedef struct stats {
	double median, p99, min, max; /* milliseconds */
} stats;

static struct {
	const char *moat;
	const char *python;
	const char *compare; /* a second moat build, measured alongside */
	unsigned runs, warmup, tp_runs, tp_rounds, mem_rounds;
	char *only;
} opt = {
	.python = "/usr/bin/python3",
	.runs = 200,
	.warmup = 10,
	.tp_runs = 40,
	.tp_rounds = 3,
	.mem_rounds = 5,
};

static int devnull = -1;
static char bwrap_path[256], unshare_path[256];
static bool have_bwrap, have_unshare;

static bool want(const char *scenario)
{
	if (!opt.only)
		return true;
	size_t n = strlen(scenario);
	for (const char *p = opt.only; (p = strstr(p, scenario)); p += n)
		if ((p == opt.only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

/* Finds a program on PATH once, so that no run pays for the search. */
static bool find_program(const char *name, char *ret, size_t size)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n > 0 && n + strlen(name) + 2 <= size) {
			snprintf(ret, size, "%.*s/%s", (int)n, path, name);
			if (access(ret, X_OK) == 0)
				return true;
		}
		if (!end)
			break;
		path = end + 1;
	}
	return false;
}

/* Starts argv with stdin, stdout and stderr on /dev/null. */
static pid_t spawn(char *const argv[], bool quiet)
{
	pid_t pid = fork();
	if (pid == 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		if (quiet)
			dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* One timed run: fork, execve, wait. Returns the wait status, or -errno. */
static int run_once(char *const argv[], uint64_t *ret_ns)
{
	uint64_t t0 = moat__now_ns();
	pid_t pid = spawn(argv, true);
	if (pid < 0)
		return -errno;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*ret_ns = moat__now_ns() - t0;
	return st;
}

/* One untimed run that counts the CPU time of the whole process tree, the
 * way perf stat does: a task-clock counter on the child, inherited by every
 * process and thread it starts, enabled at its execve and summed as they
 * exit. wait4's rusage would miss descendants nobody waited for (bwrap's
 * pid 1 is one). Work the kernel defers to its own threads (freeing a
 * network namespace) is not counted. Returns the wait status, -errno, or
 * -ENOTSUP when this host does not let us count. */
static int cpu_once(char *const argv[], uint64_t *ret_ns)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	if (pid < 0) {
		close(go[1]);
		return -errno;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.exclude_hv = 1;
	_cleanup_close_ int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* perf_event_paranoid 2 lets an ordinary user count only with
		 * exclude_kernel set, which the task clock does not honour: it
		 * still counts the time spent in the kernel. */
		a.exclude_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	int e = errno;
	if (fd >= 0)
		moat__write_all(go[1], "g", 1);
	close(go[1]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (fd < 0)
		return e == EACCES || e == EPERM || e == ENOSYS || e == ENOENT ? -ENOTSUP : -e;
	uint64_t v;
	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -EIO;
	*ret_ns = v;
	return st;
}

static void describe_status(int st, char *buf, size_t size)
{
	if (st < 0)
		snprintf(buf, size, "%s", strerror(-st));
	else if (WIFEXITED(st))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(st));
	else
		snprintf(buf, size, "killed by signal %d", WTERMSIG(st));
}

static void set_argv(variant *v, const char *name, const char *const *prefix, const char *const *cmd)
{
	size_t n = 0;
	v->name = name;
	for (const char *const *p = prefix; p && *p && n < MAX_ARGS - 1; p++)
		v->argv[n++] = (char *)*p;
	for (const char *const *p = cmd; p && *p && n < MAX_ARGS - 1; p++)
		v->argv[n++] = (char *)*p;
	v->argv[n] = NULL;
}

/* The peers' command lines, built around the same command. The bwrap root
 * is comparable to moat's: the host's /usr read-only, the /bin, /sbin and
 * /lib* links (or read-only binds where the host has real folders), a fresh
 * /proc, a minimal /dev and a private /tmp. */
static const char *bwrap_prefix[MAX_ARGS];
static const char *unshare_prefix[] = {unshare_path, "-Urmpf", "--net", "--ipc", "--uts", "--cgroup", "--", NULL};
static const char *moat_prefix[] = {NULL, "run", "--", NULL};
static const char *compare_prefix[] = {NULL, "run", "--", NULL};

static void build_bwrap_prefix(void)
{
	static char link_targets[6][64];
	static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
	size_t n = 0;
	bwrap_prefix[n++] = bwrap_path;
	bwrap_prefix[n++] = "--unshare-all";
	bwrap_prefix[n++] = "--die-with-parent";
	bwrap_prefix[n++] = "--ro-bind";
	bwrap_prefix[n++] = "/usr";
	bwrap_prefix[n++] = "/usr";
	for (size_t i = 0; i < ELEMENTSOF(top); i++) {
		struct stat st;
		if (lstat(top[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlink(top[i], link_targets[i], sizeof(link_targets[i]) - 1);
			if (k <= 0)
				continue;
			link_targets[i][k] = '\0';
			bwrap_prefix[n++] = "--symlink";
			bwrap_prefix[n++] = link_targets[i];
		} else {
			bwrap_prefix[n++] = "--ro-bind";
			bwrap_prefix[n++] = top[i];
		}
		bwrap_prefix[n++] = top[i];
	}
	static const char *const rest[] = {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", NULL};
	for (size_t i = 0; rest[i]; i++)
		bwrap_prefix[n++] = rest[i];
	bwrap_prefix[n] = NULL;
}

/* Runs a variant once, untimed: it must work before it gets a number. */
static void probe(variant *v)
{
	uint64_t ns;
	int st = run_once(v->argv, &ns);
	if (st == 0) {
		v->available = true;
		return;
	}
	char s[64];
	describe_status(st, s, sizeof(s));
	v->available = false;
	snprintf(v->why, sizeof(v->why), "does not work here (%s: %s)", v->argv[0], s);
}

static stats stats_of(uint64_t *s, size_t n)
{
	stats r = {0};
	if (n == 0)
		return r;
	r.median = bench_median_ms(s, n); /* sorts s */
	r.p99 = bench_p99_ms(s, n);
	r.min = (double)s[0] / 1e6;
	r.max = (double)s[n - 1] / 1e6;
	return r;
}

static void print_ratio(double x, double base)
{
	if (base > 0)
		printf(" %8.2fx", x / base);
	else
		printf(" %9s", "-");
}

/* Measures the variants interleaved and prints one table: wall time
 * (median, p99, min, max), its ratio to variant base and to variant ref
 * (either may be -1), and the median CPU time. A variant whose why is
 * already set is reported absent; the others are probed first. Fills
 * wall[] and cpu[] (zero where there is no number). */
static int compare(const char *title, variant *vs, size_t nv, int base, const char *base_name, int ref,
		   const char *ref_name, stats *wall, stats *cpu)
{
	for (size_t i = 0; i < nv; i++) {
		variant *v = &vs[i];
		if (!v->why[0])
			probe(v);
		if (v->available) {
			v->samples = calloc(opt.runs, sizeof(uint64_t));
			v->cpu = calloc(opt.runs, sizeof(uint64_t));
			if (!v->samples || !v->cpu)
				return -ENOMEM;
		}
	}

	for (unsigned w = 0; w < opt.warmup; w++)
		for (size_t i = 0; i < nv; i++) {
			uint64_t ns;
			if (vs[i].available)
				run_once(vs[i].argv, &ns);
		}
	/* A B C D, then B C D A, ...: each variant follows each other one
	 * equally often, so none inherits a warmer cache more than another. */
	for (unsigned r = 0; r < opt.runs; r++)
		for (size_t j = 0; j < nv; j++) {
			variant *v = &vs[(r + j) % nv];
			if (!v->available)
				continue;
			uint64_t ns;
			int st = run_once(v->argv, &ns);
			if (st != 0) {
				char s[64];
				describe_status(st, s, sizeof(s));
				v->available = false;
				snprintf(v->why, sizeof(v->why), "failed during the run (%s)", s);
				continue;
			}
			v->samples[v->n++] = ns;
		}

	/* CPU time apart from the timed runs, so that counting costs none of
	 * them anything; fewer runs suffice, CPU time being steadier than wall
	 * time on a busy host. */
	unsigned ncpu = opt.runs < 50 ? opt.runs : 50;
	bool cpu_ok = true;
	for (unsigned r = 0; r < ncpu && cpu_ok; r++)
		for (size_t j = 0; j < nv; j++) {
			variant *v = &vs[(r + j) % nv];
			if (!v->available)
				continue;
			uint64_t ns = 0;
			int st = cpu_once(v->argv, &ns);
			if (st == -ENOTSUP) {
				cpu_ok = false;
				break;
			}
			if (st == 0 && v->ncpu < opt.runs)
				v->cpu[v->ncpu++] = ns;
		}

	printf("\n%s (%u runs each, interleaved)\n", title, opt.runs);
	printf("  %-44s %9s %9s %9s %9s %9s %9s %9s\n", "variant", "median", "p99", "min", "max",
	       base >= 0 ? base_name : "", ref >= 0 ? ref_name : "", "cpu");
	for (size_t i = 0; i < nv; i++) {
		wall[i] = vs[i].available ? stats_of(vs[i].samples, vs[i].n) : (stats){0};
		cpu[i] = vs[i].available ? stats_of(vs[i].cpu, vs[i].ncpu) : (stats){0};
	}
	double b = base >= 0 ? wall[base].median : 0, rf = ref >= 0 ? wall[ref].median : 0;
	for (size_t i = 0; i < nv; i++) {
		if (!vs[i].available) {
			printf("  %-44s %s\n", vs[i].name, vs[i].why);
			continue;
		}
		printf("  %-44s %6.2f ms %6.2f ms %6.2f ms %6.2f ms", vs[i].name, wall[i].median, wall[i].p99, wall[i].min,
		       wall[i].max);
		print_ratio(wall[i].median, b);
		print_ratio(wall[i].median, rf);
		if (vs[i].ncpu)
			printf(" %6.2f ms\n", cpu[i].median);
		else
			printf(" %9s\n", "-");
	}
	if (!cpu_ok)
		printf("  cpu: not counted (perf_event_open refused: see kernel.perf_event_paranoid)\n");
	for (size_t i = 0; i < nv; i++) {
		free(vs[i].samples);
		free(vs[i].cpu);
		vs[i].samples = vs[i].cpu = NULL;
	}
	return 0;
}

/* Scenario 1: start to exit of one command, bare, under unshare, bwrap
 * and moat. */
static int bench_startup(const char *label, const char *const *cmd)
{
	variant vs[5];
	memset(vs, 0, sizeof(vs));
	size_t nv = opt.compare ? 5 : 4;
	if (opt.compare)
		set_argv(&vs[4], "moat run (--compare build)", compare_prefix, cmd);
	set_argv(&vs[0], "bare fork+exec", NULL, cmd);
	set_argv(&vs[1], "unshare -Urmpf --net --ipc --uts --cgroup", unshare_prefix, cmd);
	set_argv(&vs[2], "bwrap --unshare-all (read-only /usr root)", bwrap_prefix, cmd);
	set_argv(&vs[3], "moat run", moat_prefix, cmd);
	if (!have_unshare)
		snprintf(vs[1].why, sizeof(vs[1].why), "absent: unshare not found (util-linux)");
	if (!have_bwrap)
		snprintf(vs[2].why, sizeof(vs[2].why), "absent: bwrap not found (install the bubblewrap package)");

	char title[400];
	snprintf(title, sizeof(title), "start-up to exit: %s", label);
	stats st[5], cpu[5];
	int r = compare(title, vs, nv, 0, "vs bare", 2, "vs bwrap", st, cpu);
	if (r < 0)
		return r;
	double bare = st[0].median, bw = st[2].median;
	if (vs[3].available && bw > 0)
		printf("  result: moat %s bwrap's median (%.2fx)\n", st[3].median <= bw ? "at or below" : "ABOVE",
		       st[3].median / bw);
	if (vs[3].available && bare > 0)
		printf("  result: moat adds %.2f ms to a bare start (%.2fx)\n", st[3].median - bare, st[3].median / bare);
	if (cpu[3].median > 0 && cpu[0].median > 0)
		printf("  result: moat uses %.2fx the CPU time of a bare start (unshare %.2fx, bwrap %.2fx)\n",
		       cpu[3].median / cpu[0].median, cpu[1].median / cpu[0].median, cpu[2].median / cpu[0].median);
	if (cpu[3].median > 0 && cpu[2].median > 0)
		printf("  result: moat uses %.2fx bwrap's CPU time (median %.2f ms against %.2f ms)\n",
		       cpu[3].median / cpu[2].median, cpu[3].median, cpu[2].median);
	return 0;
}

/* Scenario 2: workers each start runs back to back; the rate is all runs
 * over the wall time until the last worker is done. Returns runs per
 * second, or a negative value when a run failed. */
static double throughput_once(variant *v, unsigned workers)
{
	pid_t pids[MAX_WORKERS];
	uint64_t t0 = moat__now_ns();
	for (unsigned w = 0; w < workers; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			for (unsigned i = 0; i < opt.tp_runs; i++) {
				uint64_t ns;
				if (run_once(v->argv, &ns) != 0)
					_exit(1);
			}
			_exit(0);
		}
		if (pids[w] < 0)
			return -1;
	}
	bool ok = true;
	for (unsigned w = 0; w < workers; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
		ok = ok && st == 0;
	}
	double secs = (double)(moat__now_ns() - t0) / 1e9;
	return ok ? (double)workers * opt.tp_runs / secs : -1;
}

static int bench_throughput(void)
{
	static const char *const cmd[] = {"/bin/true", NULL};
	variant vs[2];
	memset(vs, 0, sizeof(vs));
	set_argv(&vs[0], "moat run", moat_prefix, cmd);
	set_argv(&vs[1], "bwrap --unshare-all", bwrap_prefix, cmd);
	if (have_bwrap)
		probe(&vs[1]);
	else
		snprintf(vs[1].why, sizeof(vs[1].why), "absent: bwrap not found (install the bubblewrap package)");
	probe(&vs[0]);

	static const unsigned wk[] = {1, 2};
	double rate[2][2][64];
	size_t n = opt.tp_rounds < 64 ? opt.tp_rounds : 64;
	for (size_t r = 0; r < n; r++)
		for (size_t w = 0; w < 2; w++)
			for (size_t i = 0; i < 2; i++) {
				size_t k = (i + r) % 2;
				if (!vs[k].available)
					continue;
				rate[w][k][r] = throughput_once(&vs[k], wk[w]);
				if (rate[w][k][r] < 0) {
					vs[k].available = false;
					snprintf(vs[k].why, sizeof(vs[k].why), "a run failed");
				}
			}

	printf("\nthroughput: sandboxed /bin/true runs per second (%u runs per worker, %zu rounds, interleaved)\n",
	       opt.tp_runs, n);
	printf("  %-44s %9s %9s %9s %9s\n", "variant", "workers", "median", "min", "max");
	double med[2][2] = {{0}};
	for (size_t w = 0; w < 2; w++)
		for (size_t k = 0; k < 2; k++) {
			if (!vs[k].available) {
				printf("  %-44s %9u %s\n", vs[k].name, wk[w], vs[k].why);
				continue;
			}
			med[w][k] = bench_median(rate[w][k], n); /* sorts it */
			printf("  %-44s %9u %7.1f/s %7.1f/s %7.1f/s\n", vs[k].name, wk[w], med[w][k], rate[w][k][0],
			       rate[w][k][n - 1]);
		}
	for (size_t w = 0; w < 2; w++)
		if (med[w][0] > 0 && med[w][1] > 0)
			printf("  result: %u worker%s: moat %.2fx bwrap's rate\n", wk[w], wk[w] > 1 ? "s" : "",
			       med[w][0] / med[w][1]);
	if (med[1][0] > 0 && med[0][0] > 0)
		printf("  result: moat scales %.2fx from 1 to 2 workers\n", med[1][0] / med[0][0]);
	return 0;
}

/* Reads one "Name:   N kB" field of /proc/PID/status. */
static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			return strtol(line + n + 1, NULL, 10);
	return -1;
}

static bool comm_is(pid_t pid, const char *name)
{
	char path[64], comm[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f || !fgets(comm, sizeof(comm), f))
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return strcmp(comm, name) == 0;
}

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* The descendants of root, found through the PPid of every process. */
static size_t descendants(pid_t root, pid_t *out, size_t max)
{
	size_t n = 0;
	out[n++] = root;
	for (size_t i = 0; i < n; i++) {
		_cleanup_(closedirp) DIR *d = opendir("/proc");
		if (!d)
			break;
		struct dirent *e;
		while ((e = readdir(d)) && n < max) {
			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			pid_t p = (pid_t)atoi(e->d_name);
			if (p != out[i] && status_kb(p, "PPid") == out[i])
				out[n++] = p;
		}
	}
	return n;
}

/* Scenario 3: the resident memory of the sandbox's own processes (moat's
 * supervisor and init; bwrap's two) while the command, a sleep, runs. */
static long memory_once(variant *v, long *ret_procs)
{
	pid_t root = spawn(v->argv, true);
	if (root < 0)
		return -1;
	pid_t pids[16];
	size_t n = 0;
	pid_t cmd = -1;
	uint64_t deadline = moat__now_ns() + 5000000000ull;
	while (cmd < 0 && moat__now_ns() < deadline) {
		n = descendants(root, pids, ELEMENTSOF(pids));
		for (size_t i = 1; i < n; i++)
			if (comm_is(pids[i], "sleep"))
				cmd = pids[i];
		if (cmd < 0) {
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
	}
	long kb = 0, procs = 0;
	for (size_t i = 0; i < n && cmd >= 0; i++) {
		if (pids[i] == cmd)
			continue;
		long k = status_kb(pids[i], "VmRSS");
		if (k < 0) {
			kb = -1;
			break;
		}
		kb += k;
		procs++;
	}
	/* Ending the command ends the sandbox: both inits exit when their
	 * command does, and the supervisors with them. */
	if (cmd > 0)
		kill(cmd, SIGKILL);
	else
		kill(root, SIGKILL);
	int st;
	while (waitpid(root, &st, 0) < 0 && errno == EINTR)
		;
	*ret_procs = procs;
	return cmd < 0 ? -1 : kb;
}

static int bench_memory(void)
{
	static const char *const cmd[] = {"/bin/sleep", "60", NULL};
	variant vs[2];
	memset(vs, 0, sizeof(vs));
	set_argv(&vs[0], "moat run (supervisor + init)", moat_prefix, cmd);
	set_argv(&vs[1], "bwrap --unshare-all (both bwrap processes)", bwrap_prefix, cmd);
	vs[0].available = true;
	vs[1].available = have_bwrap;
	if (!have_bwrap)
		snprintf(vs[1].why, sizeof(vs[1].why), "absent: bwrap not found (install the bubblewrap package)");

	long kb[2][64], procs[2] = {0};
	size_t n = opt.mem_rounds < 64 ? opt.mem_rounds : 64;
	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; k < 2; k++) {
			if (!vs[k].available)
				continue;
			kb[k][r] = memory_once(&vs[k], &procs[k]);
			if (kb[k][r] < 0) {
				vs[k].available = false;
				snprintf(vs[k].why, sizeof(vs[k].why), "the sandboxed sleep never appeared");
			}
		}
	printf("\nmemory: resident set of the sandbox's own processes while a sandboxed sleep runs (%zu rounds)\n", n);
	printf("  %-44s %9s %9s %9s %9s\n", "variant", "procs", "median", "min", "max");
	double med[2] = {0};
	for (size_t k = 0; k < 2; k++) {
		if (!vs[k].available) {
			printf("  %-44s %s\n", vs[k].name, vs[k].why);
			continue;
		}
		double d[64];
		for (size_t r = 0; r < n; r++)
			d[r] = (double)kb[k][r] / 1024;
		med[k] = bench_median(d, n); /* sorts d */
		printf("  %-44s %9ld %6.2f MB %6.2f MB %6.2f MB\n", vs[k].name, procs[k], med[k], d[0], d[n - 1]);
	}
	if (med[0] > 0 && med[1] > 0)
		printf("  result: moat %s bwrap's (%.2fx)\n", med[0] <= med[1] ? "at or below" : "ABOVE", med[0] / med[1]);
	return 0;
}

/* Whether the moat under test has a feature: its help text (of `moat run`
 * or another command) mentions the option, and the command exists. */
static bool moat_has(const char *command, const char *needle)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(devnull, 0);
		dup2(p[1], 1);
		dup2(devnull, 2);
		execl(opt.moat, opt.moat, command, "--help", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[16384];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(buf) - 1 && (k = read(p[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(p[0]);
	int st = -1;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	return st == 0 && (!needle || strstr(buf, needle));
}

/* A private scratch folder for the scenarios that need files. */
static char scratch[4096];

static const char *scratch_dir(void)
{
	if (!scratch[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch, sizeof(scratch), "%s/moatbench.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
		if (!mkdtemp(scratch)) {
			scratch[0] = '\0';
			return NULL;
		}
	}
	return scratch;
}

static void scratch_remove(void)
{
	if (!scratch[0])
		return;
	_cleanup_(closedirp) DIR *d = opendir(scratch);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	rmdir(scratch);
}

/* The path of a scratch file for a feature's scenario, or NULL after
 * saying why the scenario does not run: the build lacks the feature, or
 * there is no scratch folder. */
static const char *feature_scratch(const char *title, const char *command, const char *needle, const char *feature,
				   const char *file, char *buf, size_t size)
{
	if (!moat_has(command, needle)) {
		printf("\n%s: not available yet (%s is not in this build)\n", title, feature);
		return NULL;
	}
	const char *dir = scratch_dir();
	if (!dir) {
		printf("\n%s: no scratch folder (%s)\n", title, strerror(errno));
		return NULL;
	}
	snprintf(buf, size, "%s/%s", dir, file);
	return buf;
}

/* Scenario 4: what the egress gateway adds to a run's start-up. */
static int bench_gateway(void)
{
	if (!moat_has("run", "--net none|proxy")) {
		printf("\ngateway: not available yet (moat run --net proxy is not in this build)\n");
		return 0;
	}
	static const char *const cmd[] = {"/bin/true", NULL};
	static const char *proxy[] = {NULL, "run", "--net", "proxy", "--allow-host", "example.com", "--", NULL};
	proxy[0] = opt.moat;
	variant vs[2];
	memset(vs, 0, sizeof(vs));
	set_argv(&vs[0], "moat run (no network)", moat_prefix, cmd);
	set_argv(&vs[1], "moat run --net proxy (gateway)", proxy, cmd);
	stats st[2], cpu[2];
	int r = compare("gateway: start-up to exit of /bin/true with the egress gateway", vs, 2, 0, "vs none", -1, "",
			st, cpu);
	if (r == 0 && st[0].median > 0 && st[1].median > 0)
		printf("  result: the gateway adds %.2f ms to a run (%.2fx)\n", st[1].median - st[0].median,
		       st[1].median / st[0].median);
	return r;
}

/* Scenario 5: what the audit log and the file trail add to a run that
 * opens, writes and lists a few files. */
static int bench_trail(void)
{
	static char log[4200];
	if (!feature_scratch("file trail", "run", "--audit-files", "moat run --audit-files", "audit.jsonl", log,
			     sizeof(log)))
		return 0;
	static const char *const cmd[] = {"/bin/sh", "-c", "cat /etc/hostname >/tmp/a; cp /tmp/a /tmp/b; ls /tmp >/dev/null",
					  NULL};
	static const char *audit[] = {NULL, "run", "--audit", log, "--", NULL};
	static const char *files[] = {NULL, "run", "--audit", log, "--audit-files", "--", NULL};
	audit[0] = files[0] = opt.moat;
	variant vs[3];
	memset(vs, 0, sizeof(vs));
	set_argv(&vs[0], "moat run", moat_prefix, cmd);
	set_argv(&vs[1], "moat run --audit LOG", audit, cmd);
	set_argv(&vs[2], "moat run --audit LOG --audit-files", files, cmd);
	stats st[3], cpu[3];
	int r = compare("file trail: start-up to exit of a shell that copies a file", vs, 3, 0, "vs plain", -1, "", st,
			cpu);
	if (r == 0 && st[0].median > 0 && st[2].median > 0)
		printf("  result: the audit log and file trail add %.2f ms to a run (%.2fx)\n",
		       st[2].median - st[0].median, st[2].median / st[0].median);
	return r;
}

/* Scenario 6: moat judge, cases graded per second with one and two cases
 * at a time. Every case is a fresh sandbox running a shell that adds two
 * numbers. */
static int bench_judge(void)
{
	static char cases[4200];
	if (!feature_scratch("moat judge", "judge", "--tests", "moat judge", "cases.jsonl", cases, sizeof(cases)))
		return 0;
	unsigned ncases = opt.tp_runs;
	{
		_cleanup_fclose_ FILE *f = fopen(cases, "we");
		if (!f) {
			printf("\nmoat judge: %s: %s\n", cases, strerror(errno));
			return 0;
		}
		for (unsigned i = 0; i < ncases; i++)
			fprintf(f, "{\"name\":\"add%u\",\"stdin\":\"%u %u\\n\",\"expected_stdout\":\"%u\\n\"}\n", i, i, i + 1,
				2 * i + 1);
	}
	static const unsigned par[] = {1, 2};
	double rate[2][64];
	size_t rounds = opt.tp_rounds < 64 ? opt.tp_rounds : 64;
	char why[128] = "";
	for (size_t r = 0; r < rounds && !why[0]; r++)
		for (size_t k = 0; k < 2 && !why[0]; k++) {
			char p[16];
			snprintf(p, sizeof(p), "%u", par[k]);
			char *argv[] = {(char *)opt.moat, "judge",  "--tests", cases, "--parallel", p, "--",
					"/bin/sh",        "-c",     "read a b; echo $((a + b))", NULL};
			uint64_t ns;
			int st = run_once(argv, &ns);
			if (st != 0) {
				describe_status(st, why, sizeof(why));
				break;
			}
			rate[k][r] = ncases / ((double)ns / 1e9);
		}
	printf("\nmoat judge: cases graded per second (%u cases a run, %zu rounds, interleaved)\n", ncases, rounds);
	printf("  %-44s %9s %9s %9s %9s\n", "variant", "parallel", "median", "min", "max");
	double med[2] = {0};
	for (size_t k = 0; k < 2; k++) {
		if (why[0]) {
			printf("  %-44s %9u failed (%s)\n", "moat judge", par[k], why);
			continue;
		}
		med[k] = bench_median(rate[k], rounds); /* sorts it */
		printf("  %-44s %9u %7.1f/s %7.1f/s %7.1f/s\n", "moat judge", par[k], med[k], rate[k][0],
		       rate[k][rounds - 1]);
	}
	if (med[0] > 0 && med[1] > 0)
		printf("  result: judge scales %.2fx from 1 to 2 cases at a time\n", med[1] / med[0]);
	return 0;
}

static void print_header(void)
{
	struct utsname u;
	uname(&u);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("moat-bench: %s %s, %ld CPUs, %s, moat %s\n", u.sysname, u.release, cpus,
	       geteuid() == 0 ? "as root" : "rootless", opt.moat);
	printf("peers: bwrap %s, unshare %s\n", have_bwrap ? bwrap_path : "ABSENT (install the bubblewrap package)",
	       have_unshare ? unshare_path : "ABSENT (util-linux)");
}

/* Scenario: sessions. A command into a live session against a cold moat
 * run (no namespaces, root or cgroup to build: close to a fork and exec),
 * creating a session (until its first exec can start) against a cold run,
 * and an idle keeper's memory and CPU time. */
static char session_name[64];
/* The keeper's pid, from its lock in its runtime folder (id: what create
 * printed). */
static pid_t keeper_pid_of(const char *id)
{
	char base[PATH_MAX], path[PATH_MAX + 64], buf[32] = {0};
	if (moat__keeper_base_path(geteuid(), getenv("XDG_RUNTIME_DIR"), base, sizeof(base)) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/lock", base, id);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	return (pid_t)atoi(buf);
}

static int session_create_id(char *id, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(devnull, 2);
		char *v[] = {(char *)opt.moat, "session", "create", "--name", session_name, NULL};
		execv(v[0], v);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = read(p[0], id, len - 1);
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -EIO;
	id[n] = '\0';
	id[strcspn(id, "\n")] = '\0';
	return 0;
}

static void session_remove(void)
{
	char *v[] = {(char *)opt.moat, "session", "rm", "--purge", session_name, NULL};
	uint64_t ns;
	run_once(v, &ns);
}

/* A process's CPU time in clock ticks: its own, and with children, that
 * of its children it reaped too (cutime, cstime). */
static uint64_t proc_cpu_ticks_of(pid_t pid, bool children)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	long cut = 0, cst = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld", &ut, &st, &cut, &cst) != 4)
		return 0;
	return ut + st + (children ? (uint64_t)(cut + cst) : 0);
}

static uint64_t proc_cpu_ticks(pid_t pid) { return proc_cpu_ticks_of(pid, false); }

/* The first child of pid (the keeper's init), or -1. */
static pid_t first_child(pid_t pid)
{
	char path[96], buf[256] = {0};
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	return (pid_t)atoi(buf);
}

/* A process's resident memory, in kB: all of it (VmRSS), and its
 * anonymous part (RssAnon: its own, where the file-backed rest is the
 * moat binary's pages, shared with every other moat process). */
static long proc_rss_kb(pid_t pid, long *ret_anon_kb)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	long kb = -1, anon = -1, v;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			kb = v;
		else if (sscanf(line, "RssAnon: %ld kB", &v) == 1)
			anon = v;
	}
	if (f)
		fclose(f);
	if (ret_anon_kb)
		*ret_anon_kb = anon;
	return kb;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static int bench_session(void)
{
	snprintf(session_name, sizeof(session_name), "bench-%d", (int)getpid());
	char id[128];
	printf("\nsessions\n");
	if (session_create_id(id, sizeof(id)) < 0) {
		printf("  not available: 'moat session create' failed\n");
		return 0;
	}
	/* 1. exec into the live session against a cold run. */
	variant vs[2];
	memset(vs, 0, sizeof(vs));
	static const char *const cmd[] = {"/bin/true", NULL};
	static const char *exec_prefix[6];
	exec_prefix[0] = opt.moat;
	exec_prefix[1] = "session";
	exec_prefix[2] = "exec";
	exec_prefix[3] = session_name;
	exec_prefix[4] = "--";
	exec_prefix[5] = NULL;
	set_argv(&vs[0], "moat run (cold)", moat_prefix, cmd);
	set_argv(&vs[1], "moat session exec (live session)", exec_prefix, cmd);
	stats st[2], cpu[2];
	compare("session exec -- /bin/true against a cold moat run -- /bin/true", vs, 2, 0, "vs run", -1, "", st, cpu);
	if (st[0].median > 0 && st[1].median > 0)
		printf("  result: session exec is %.2fx a cold run's median (goal: at most 0.35x)\n",
		       st[1].median / st[0].median);

	/* The other side of each exec, which the client's CPU column does
	 * not show: the keeper's CPU time, and the init's with the commands
	 * it reaped (/bin/true's own start included), over untimed execs. */
	pid_t kp = keeper_pid_of(id), ip = kp > 0 ? first_child(kp) : -1;
	if (ip > 0) {
		enum { SIDE_EXECS = 200 };
		char *side_exec[] = {(char *)opt.moat, "session", "exec", session_name, "--", "/bin/true", NULL};
		uint64_t k0 = proc_cpu_ticks(kp), i0 = proc_cpu_ticks_of(ip, true), ns;
		for (int i = 0; i < SIDE_EXECS; i++)
			(void)run_once(side_exec, &ns);
		uint64_t k1 = proc_cpu_ticks(kp), i1 = proc_cpu_ticks_of(ip, true);
		double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
		double side = (double)(k1 - k0 + i1 - i0) * tick_ms / SIDE_EXECS;
		printf("  per exec, on the session's side (%d untimed execs, clock ticks): keeper %.2f ms, init and "
		       "command %.2f ms of CPU\n",
		       SIDE_EXECS, (double)(k1 - k0) * tick_ms / SIDE_EXECS, (double)(i1 - i0) * tick_ms / SIDE_EXECS);
		/* CPU time does not wait for a time slice: on a loaded host
		 * it shows what the wall ratio would be on a quiet one. */
		if (cpu[0].median > 0 && cpu[1].median > 0)
			printf("  exec's CPU time, client and session side (%.2f ms), is %.2fx a cold run's (%.2f ms)\n",
			       cpu[1].median + side, (cpu[1].median + side) / cpu[0].median, cpu[0].median);
	}

	/* 2. An idle keeper: no CPU time while nothing runs, and its memory,
	 * over several sessions (the one above, after all its commands, and
	 * fresh ones after a few), since what a keeper keeps resident varies
	 * with the page cache and with what ran in it. */
	enum { RSS_SESSIONS = 6, RSS_EXECS = 5 };
	long rss[RSS_SESSIONS], anon[RSS_SESSIONS];
	size_t nrss = 0;
	if (kp > 0) {
		/* A second to settle (the last exec's end), then two idle. */
		struct timespec one = {.tv_sec = 1}, two = {.tv_sec = 2};
		nanosleep(&one, NULL);
		uint64_t t0 = proc_cpu_ticks(kp);
		nanosleep(&two, NULL);
		uint64_t t1 = proc_cpu_ticks(kp);
		rss[nrss] = proc_rss_kb(kp, &anon[nrss]);
		if (rss[nrss] > 0)
			nrss++;
		printf("  result: an idle keeper used %llu clock ticks of CPU in 2 s idle (goal: 0)\n",
		       (unsigned long long)(t1 - t0));
	} else
		printf("  idle keeper: its pid could not be read\n");
	session_remove();
	char *one_exec[] = {(char *)opt.moat, "session", "exec", session_name, "--", "/bin/true", NULL};
	for (int i = 1; i < RSS_SESSIONS; i++) {
		if (session_create_id(id, sizeof(id)) < 0)
			break;
		uint64_t ns;
		for (int j = 0; j < RSS_EXECS; j++)
			(void)run_once(one_exec, &ns);
		struct timespec settle = {.tv_nsec = 200 * 1000 * 1000};
		nanosleep(&settle, NULL);
		pid_t p = keeper_pid_of(id);
		if (p > 0 && (rss[nrss] = proc_rss_kb(p, &anon[nrss])) > 0)
			nrss++;
		session_remove();
	}
	if (nrss) {
		long a = anon[0];
		for (size_t i = 1; i < nrss; i++)
			a = anon[i] > a ? anon[i] : a;
		qsort(rss, nrss, sizeof(rss[0]), cmp_long);
		printf("  idle keeper RSS over %zu sessions: min %.2f MB, median %.2f MB, max %.2f MB (anonymous, its "
		       "own: at most %.2f MB)\n",
		       nrss, rss[0] / 1024.0, rss[nrss / 2] / 1024.0, rss[nrss - 1] / 1024.0, a / 1024.0);
		printf("  result: an idle keeper holds at most %.2f MB (goal: at most 4 MB)\n", rss[nrss - 1] / 1024.0);
	}

	/* 3. create (until the first exec can start) against a cold run,
	 * interleaved; each session is removed untimed. */
	unsigned n = opt.runs < 50 ? opt.runs : 50;
	uint64_t *c = calloc(n, sizeof(uint64_t)), *r = calloc(n, sizeof(uint64_t));
	size_t nc = 0, nr = 0;
	char *create[] = {(char *)opt.moat, "session", "create", "--name", session_name, NULL};
	for (unsigned i = 0; c && r && i < n; i++) {
		uint64_t ns;
		if (run_once(create, &ns) == 0)
			c[nc++] = ns;
		session_remove();
		if (run_once(vs[0].argv, &ns) == 0)
			r[nr++] = ns;
	}
	if (nc && nr) {
		stats sc = stats_of(c, nc), sr = stats_of(r, nr);
		printf("  session create: median %.2f ms, a cold run %.2f ms (%zu runs each, interleaved)\n", sc.median,
		       sr.median, nc);
		printf("  result: session create is %.2fx a cold run's median (goal: at most 1.2x)\n",
		       sc.median / sr.median);
	}
	free(c);
	free(r);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: moat-bench --moat PATH [OPTIONS]\n"
		   "\n"
		   "Measures moat against bare execution, unshare and bwrap in one interleaved run.\n"
		   "\n"
		   "  --moat PATH        the moat binary under test\n"
		   "  --python PATH      python interpreter for the python scenario [/usr/bin/python3]\n"
		   "  --runs N           start-up runs per variant [200]\n"
		   "  --warmup N         untimed runs per variant first [10]\n"
		   "  --tp-runs N        runs per worker in one throughput measurement [40]\n"
		   "  --tp-rounds N      throughput measurements per variant [3]\n"
		   "  --mem-rounds N     memory measurements per variant [5]\n"
		   "  --compare PATH     a second moat build, measured alongside in the start-up\n"
		   "                     scenarios (before and after a change)\n"
		   "  --only LIST        comma-separated scenarios: startup,python,throughput,memory,session,\n"
		   "                     gateway,trail,judge [all]\n");
}

static int parse_count(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"moat", required_argument, NULL, 'm'},     {"python", required_argument, NULL, 'p'},
		{"runs", required_argument, NULL, 'n'},     {"warmup", required_argument, NULL, 'w'},
		{"tp-runs", required_argument, NULL, 't'},  {"tp-rounds", required_argument, NULL, 'T'},
		{"mem-rounds", required_argument, NULL, 'M'}, {"only", required_argument, NULL, 'o'},
		{"compare", required_argument, NULL, 'c'},  {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, li = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
		int r = 0;
		switch (c) {
		case 'm':
			opt.moat = optarg;
			break;
		case 'p':
			opt.python = optarg;
			break;
		case 'n':
			r = parse_count(optarg, MAX_RUNS, &opt.runs);
			break;
		case 'w':
			r = parse_count(optarg, MAX_RUNS, &opt.warmup);
			break;
		case 't':
			r = parse_count(optarg, MAX_RUNS, &opt.tp_runs);
			break;
		case 'T':
			r = parse_count(optarg, 64, &opt.tp_rounds);
			break;
		case 'M':
			r = parse_count(optarg, 64, &opt.mem_rounds);
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'c':
			opt.compare = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (r < 0) {
			fprintf(stderr, "moat-bench: --%s %s: not a count in range\n", longopts[li].name, optarg);
			return 2;
		}
	}
	if (!opt.moat || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (opt.runs == 0 || opt.tp_runs == 0 || opt.tp_rounds == 0 || opt.mem_rounds == 0) {
		fprintf(stderr, "moat-bench: counts must be at least 1\n");
		return 2;
	}
	static char moat_abs[4096];
	if (!realpath(opt.moat, moat_abs) || access(moat_abs, X_OK) < 0) {
		fprintf(stderr, "moat-bench: %s: %s\n", opt.moat, strerror(errno));
		return 2;
	}
	opt.moat = moat_abs;
	moat_prefix[0] = moat_abs;
	static char compare_abs[4096];
	if (opt.compare) {
		if (!realpath(opt.compare, compare_abs) || access(compare_abs, X_OK) < 0) {
			fprintf(stderr, "moat-bench: --compare %s: %s\n", opt.compare, strerror(errno));
			return 2;
		}
		opt.compare = compare_prefix[0] = compare_abs;
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		perror("moat-bench: /dev/null");
		return 2;
	}
	have_bwrap = find_program("bwrap", bwrap_path, sizeof(bwrap_path));
	have_unshare = find_program("unshare", unshare_path, sizeof(unshare_path));
	build_bwrap_prefix();
	setvbuf(stdout, NULL, _IOLBF, 0);
	print_header();

	if (want("startup")) {
		static const char *const cmd[] = {"/bin/true", NULL};
		bench_startup("/bin/true", cmd);
	}
	if (want("python")) {
		const char *cmd[] = {opt.python, "-c", "pass", NULL};
		char label[300];
		snprintf(label, sizeof(label), "%s -c pass", opt.python);
		if (access(opt.python, X_OK) < 0)
			printf("\nstart-up to exit: %s: absent (%s)\n", label, strerror(errno));
		else
			bench_startup(label, cmd);
	}
	if (want("throughput"))
		bench_throughput();
	if (want("memory"))
		bench_memory();
	if (want("gateway"))
		bench_gateway();
	if (want("trail"))
		bench_trail();
	if (want("judge"))
		bench_judge();
	if (want("session"))
		bench_session();
	scratch_remove();
	return 0;
}
