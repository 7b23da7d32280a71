/* moatd-bench: moatd's warm pool against its peers, measured in the same
 * run (make bench; docs/api.md, "Warm pool").
 *
 *   start latency  POST /v1/runs of /bin/true over the unix socket, pooled,
 *                  against a cold `bwrap --unshare-all ... /bin/true`, a
 *                  cold `moat run -- /bin/true` and a cold POST /v1/runs,
 *                  interleaved; before every sample the pool is let fill
 *                  (untimed), so no refill of an earlier sample competes
 *                  with any variant's sample
 *   throughput     two clients posting runs back to back against two
 *                  workers of cold `moat run`, rounds interleaved; CPU per
 *                  run of each side's whole process tree (perf task clock,
 *                  inherited by every process it starts: moatd, its refill
 *                  children, keepers, inits and commands; the cold workers,
 *                  moat, inits and commands)
 *   memory         moatd's resident memory idle, and with 100 idle sessions
 *                  created through it
 *
 * The client speaks HTTP/1.1 itself over AF_UNIX (one request per
 * connection, Connection: close), so no curl or shell is in the timed
 * path. */
#include "benchstats.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_RUNS 10000

static struct {
	const char *moat, *moatd;
	unsigned runs, tp_runs, tp_rounds, pool, sessions;
} opt = {.runs = 100, .tp_runs = 40, .tp_rounds = 3, .pool = 8, .sessions = 100};

static char dir[PATH_MAX], sock[PATH_MAX + 16];
static pid_t moatd_pid;
static int moatd_perf = -1;
static int devnull = -1;
static char bwrap[PATH_MAX];

/* One request, whole answer into buf (NUL-terminated). Returns the
 * length, or -1. */
static ssize_t http(const char *method, const char *path, const char *body, char *buf, size_t size)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char head[512];
	size_t bl = body ? strlen(body) : 0;
	int hl = snprintf(head, sizeof(head),
			  "%s %s HTTP/1.1\r\nHost: moatd\r\nConnection: close\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  method, path, bl);
	if (moat__write_all(fd, head, (size_t)hl) < 0 || (bl && moat__write_all(fd, body, bl) < 0)) {
		close(fd);
		return -1;
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == size - 1)
			break;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

static const char *const TRUE_BODY = "{\"argv\":[\"/bin/true\"]}";
/* The profile's own memory limit: the same policy, but a limit set at a
 * sandbox's making, so moatd runs it cold. */
static const char *const COLD_BODY = "{\"argv\":[\"/bin/true\"],\"limits\":{\"memory\":\"256M\"}}";

/* A run through moatd; ret_pooled: whether it took a pooled sandbox. */
static int post_run(const char *body, bool *ret_pooled)
{
	char buf[16384];
	if (http("POST", "/v1/runs", body, buf, sizeof(buf)) < 0 || !strstr(buf, "\"status\":\"exited\""))
		return -1;
	if (ret_pooled)
		*ret_pooled = strstr(buf, "\"pooled\":true") != NULL;
	return 0;
}

/* The pooled sandboxes moatd has recorded (STATE/pool/ID): with no run
 * under way (a run's record goes before its reply is sent), the ready
 * ones. Counted here rather than asked of /metrics, whose answer lists
 * every session of the user and asks each keeper its state: polled every
 * few milliseconds while the pool refills, that was moatd CPU the pool's
 * figure below counted as its own. */
static long pool_records(void)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/state/pool", dir);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	long n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Untimed: until the pool holds opt.pool ready sandboxes. */
static void pool_full(void)
{
	for (int i = 0; i < 6000; i++) {
		if (pool_records() >= (long)opt.pool)
			return;
		struct timespec t = {.tv_nsec = 10 * 1000 * 1000};
		nanosleep(&t, NULL);
	}
}

/* A perf task-clock counter on pid's whole tree (enabled at its exec). */
static int perf_open(pid_t pid)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		a.exclude_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}

static uint64_t perf_read(int fd)
{
	uint64_t v = 0;
	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return v;
}

/* Forks argv, held at a pipe until its counter is attached. */
static pid_t spawn_counted(char *const argv[], int *ret_perf)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		dup2(devnull, 0);
		dup2(devnull, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	*ret_perf = pid > 0 ? perf_open(pid) : -1;
	moat__write_all(go[1], "g", 1);
	close(go[1]);
	return pid;
}

static int run_argv(char *const argv[], uint64_t *ret_ns)
{
	uint64_t t0 = moat__now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (ret_ns)
		*ret_ns = moat__now_ns() - t0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int start_moatd(const char *config)
{
	char cfg[PATH_MAX + 16], state[PATH_MAX + 16];
	snprintf(cfg, sizeof(cfg), "%s/moatd.yaml", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	FILE *f = fopen(cfg, "we");
	if (!f)
		return -1;
	/* moat itself, wherever the build put it. */
	fprintf(f, "%smoat: %s\n", config, opt.moat);
	fclose(f);
	char *argv[] = {(char *)opt.moatd, "--socket", sock, "--state-dir", state, "--config", cfg, NULL};
	moatd_pid = spawn_counted(argv, &moatd_perf);
	for (int i = 0; i < 500; i++) {
		char buf[512];
		if (http("GET", "/v1/health", NULL, buf, sizeof(buf)) > 0)
			return 0;
		if (waitpid(moatd_pid, NULL, WNOHANG) == moatd_pid) {
			moatd_pid = 0;
			return -1;
		}
		struct timespec t = {.tv_nsec = 20 * 1000 * 1000};
		nanosleep(&t, NULL);
	}
	return -1;
}

static void stop_moatd(void)
{
	if (moatd_pid <= 0)
		return;
	kill(moatd_pid, SIGTERM);
	while (waitpid(moatd_pid, NULL, 0) < 0 && errno == EINTR)
		;
	moatd_pid = 0;
	if (moatd_perf >= 0)
		close(moatd_perf);
	moatd_perf = -1;
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static void loadavg(char *buf, size_t size)
{
	_cleanup_free_ char *t = NULL;
	buf[0] = '\0';
	if (moat__read_file_at(AT_FDCWD, "/proc/loadavg", 256, &t) >= 0 && t) {
		t[strcspn(t, "\n")] = '\0';
		snprintf(buf, size, "%s", t);
	}
}

/* --- start latency */

static void bench_latency(void)
{
	unsigned n = opt.runs;
	uint64_t *s[4];
	size_t k[4] = {0};
	unsigned misses = 0;
	for (int v = 0; v < 4; v++)
		s[v] = calloc(n, sizeof(uint64_t));
	char *bw[] = {bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin",
		      "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
		      "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true", NULL};
	char *mr[] = {(char *)opt.moat, "run", "--", "/bin/true", NULL};
	for (unsigned i = 0; i < n; i++) {
		pool_full();
		uint64_t t0 = moat__now_ns();
		bool pooled = false;
		if (post_run(TRUE_BODY, &pooled) == 0) {
			if (pooled)
				s[0][k[0]++] = moat__now_ns() - t0;
			else
				misses++;
		}
		pool_full();
		if (bwrap[0] && run_argv(bw, &s[1][k[1]]) == 0)
			k[1]++;
		pool_full();
		if (run_argv(mr, &s[2][k[2]]) == 0)
			k[2]++;
		pool_full();
		t0 = moat__now_ns();
		if (post_run(COLD_BODY, NULL) == 0)
			s[3][k[3]++] = moat__now_ns() - t0;
	}
	static const char *const names[] = {"POST /v1/runs, pooled", "bwrap --unshare-all (cold)", "moat run (cold)",
					    "POST /v1/runs, cold"};
	double med[4];
	printf("\nstart latency: /bin/true, %u samples each, interleaved (pool refilled, untimed, between samples)\n",
	       n);
	for (int v = 0; v < 4; v++) {
		med[v] = bench_median_ms(s[v], k[v]); /* sorts it */
		if (k[v])
			printf("  %-28s median %7.2f ms  p99 %7.2f ms  (%zu ok)\n", names[v], med[v], bench_p99_ms(s[v], k[v]),
			       k[v]);
		else
			printf("  %-28s ABSENT%s\n", names[v], v == 1 && !bwrap[0] ? " (install the bubblewrap package)" : "");
	}
	if (misses)
		printf("  (%u pooled requests found the pool empty and ran cold; not counted above)\n", misses);
	if (k[0] && k[1])
		printf("  result: pooled POST /v1/runs is %.2fx a cold bwrap's median (goal: at most 0.5x)\n",
		       med[0] / med[1]);
	if (k[0] && k[2])
		printf("  result: pooled POST /v1/runs is %.2fx a cold moat run's median\n", med[0] / med[2]);
	for (int v = 0; v < 4; v++)
		free(s[v]);
}

/* --- throughput */

/* clients processes, each posting runs runs back to back; the rate is all
 * runs over the wall time of the slowest. ret_pooled: runs that were. */
static double tp_pool(unsigned clients, unsigned runs, unsigned *ret_pooled)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return 0;
	uint64_t t0 = moat__now_ns();
	for (unsigned c = 0; c < clients; c++)
		if (fork() == 0) {
			unsigned pooled = 0;
			for (unsigned i = 0; i < runs; i++) {
				bool pl = false;
				if (post_run(TRUE_BODY, &pl) < 0)
					_exit(1);
				pooled += pl;
			}
			moat__write_all(p[1], &pooled, sizeof(pooled));
			_exit(0);
		}
	close(p[1]);
	bool ok = true;
	for (unsigned c = 0; c < clients; c++) {
		int st;
		while (wait(&st) < 0 && errno == EINTR)
			;
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	uint64_t ns = moat__now_ns() - t0;
	*ret_pooled = 0;
	unsigned x;
	while (read(p[0], &x, sizeof(x)) == (ssize_t)sizeof(x))
		*ret_pooled += x;
	close(p[0]);
	return ok ? (double)clients * runs / ((double)ns / 1e9) : 0;
}

/* workers processes, each running `moat run -- /bin/true` runs times;
 * ret_cpu_ns: their trees' CPU time. */
static double tp_cold(unsigned workers, unsigned runs, uint64_t *ret_cpu_ns)
{
	pid_t pids[8];
	int perf[8];
	uint64_t t0 = moat__now_ns();
	char n[16];
	snprintf(n, sizeof(n), "%u", runs);
	for (unsigned w = 0; w < workers && w < 8; w++) {
		/* A shell loop would add its own forks: the worker is a
		 * copy of this program's loop instead. */
		char *argv[] = {"/proc/self/exe", "--worker", (char *)opt.moat, n, NULL};
		pids[w] = spawn_counted(argv, &perf[w]);
	}
	bool ok = true;
	*ret_cpu_ns = 0;
	for (unsigned w = 0; w < workers && w < 8; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
		*ret_cpu_ns += perf_read(perf[w]);
		if (perf[w] >= 0)
			close(perf[w]);
	}
	uint64_t ns = moat__now_ns() - t0;
	return ok ? (double)workers * runs / ((double)ns / 1e9) : 0;
}

static int worker_main(const char *moat, const char *n)
{
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	char *argv[] = {(char *)moat, "run", "--", "/bin/true", NULL};
	for (long i = 0; i < atol(n); i++)
		if (run_argv(argv, NULL) < 0)
			return 1;
	return 0;
}

static void bench_throughput(void)
{
	double rp[8], rc[8], cpu_p = 0, cpu_c = 0;
	unsigned rounds = opt.tp_rounds < 8 ? opt.tp_rounds : 8, total = 0, pooled_total = 0;
	printf("\nthroughput: 2 clients of POST /v1/runs against 2 workers of cold moat run, /bin/true, %u runs "
	       "each, %u rounds interleaved\n",
	       opt.tp_runs, rounds);
	for (unsigned r = 0; r < rounds; r++) {
		pool_full();
		uint64_t c0 = perf_read(moatd_perf);
		unsigned pooled = 0;
		rp[r] = tp_pool(2, opt.tp_runs, &pooled);
		/* The pool made again what the round took: that is the
		 * runs' cost too, counted before reading. */
		pool_full();
		struct timespec t = {.tv_nsec = 200 * 1000 * 1000};
		nanosleep(&t, NULL);
		cpu_p += (double)(perf_read(moatd_perf) - c0);
		total += 2 * opt.tp_runs;
		pooled_total += pooled;
		uint64_t cc;
		rc[r] = tp_cold(2, opt.tp_runs, &cc);
		cpu_c += (double)cc;
		printf("  round %u: moatd %.1f runs/s (%u of %u pooled), cold moat run %.1f runs/s\n", r + 1, rp[r],
		       pooled, 2 * opt.tp_runs, rc[r]);
	}
	double mp = 0, mc = 0;
	for (unsigned r = 0; r < rounds; r++) {
		mp += rp[r] / rounds;
		mc += rc[r] / rounds;
	}
	printf("  moatd, 2 clients: %.1f runs/s; cold moat run, 2 workers: %.1f runs/s\n", mp, mc);
	if (mc > 0)
		printf("  result: moatd sustains %.2fx the runs per second of two cold moat run workers (goal: at least "
		       "1.5x)\n",
		       mp / mc);
	if (cpu_p > 0 && total)
		printf("  CPU per run: moatd's tree (moatd, refills, keepers, inits, commands) %.1f ms; "
		       "cold moat run's tree %.1f ms (%u of %u runs pooled)\n",
		       cpu_p / total / 1e6, cpu_c / total / 1e6, pooled_total, total);
}

/* --- memory */

static void bench_memory(void)
{
	printf("\nmemory\n");
	struct timespec t = {.tv_nsec = 300 * 1000 * 1000};
	nanosleep(&t, NULL);
	long idle = rss_kb(moatd_pid);
	printf("  result: moatd idle holds %.2f MB resident (goal: at most 8 MB)\n", idle / 1024.0);
	char buf[65536];
	unsigned made = 0;
	char ids[128][64];
	for (unsigned i = 0; i < opt.sessions && i < 128; i++) {
		if (http("POST", "/v1/sessions", "{}", buf, sizeof(buf)) < 0)
			break;
		const char *p = strstr(buf, "\"id\":\"");
		if (!p)
			break;
		snprintf(ids[made], sizeof(ids[made]), "%.*s", (int)strcspn(p + 6, "\""), p + 6);
		made++;
	}
	nanosleep(&t, NULL);
	long with = rss_kb(moatd_pid);
	printf("  moatd with %u idle sessions created through it: %.2f MB\n", made, with / 1024.0);
	if (made)
		printf("  result: %.1f KB of moatd's memory per idle session (goal: bookkeeping only)\n",
		       (double)(with - idle) / made);
	http("GET", "/v1/sessions", NULL, buf, sizeof(buf));
	http("GET", "/metrics", NULL, buf, sizeof(buf));
	nanosleep(&t, NULL);
	long listed = rss_kb(moatd_pid);
	printf("  after listing them and /metrics once: %.2f MB (the heap those answers needed, kept by malloc)\n",
	       listed / 1024.0);
	for (unsigned i = 0; i < made; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/sessions/%s", ids[i]);
		http("DELETE", path, NULL, buf, sizeof(buf));
	}
}

static bool find_program(const char *name, char *ret, size_t size)
{
	static const char *const dirs[] = {"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"};
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(ret, size, "%s/%s", dirs[i], name);
		if (access(ret, X_OK) == 0)
			return true;
	}
	ret[0] = '\0';
	return false;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--worker") == 0)
		return worker_main(argv[2], argv[3]);
	static const struct option lo[] = {
		{"moat", required_argument, NULL, 'm'}, {"moatd", required_argument, NULL, 'd'},
		{"runs", required_argument, NULL, 'r'}, {"tp-runs", required_argument, NULL, 't'},
		{"pool", required_argument, NULL, 'p'}, {"sessions", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;
		switch (o) {
		case 'm': opt.moat = optarg; break;
		case 'd': opt.moatd = optarg; break;
		case 'r': opt.runs = v && v <= MAX_RUNS ? (unsigned)v : opt.runs; break;
		case 't': opt.tp_runs = v && v <= MAX_RUNS ? (unsigned)v : opt.tp_runs; break;
		case 'p': opt.pool = v && v <= 64 ? (unsigned)v : opt.pool; break;
		case 's': opt.sessions = v <= 128 ? (unsigned)v : opt.sessions; break;
		default:
			fprintf(o == 'h' ? stdout : stderr,
				"usage: moatd-bench --moat PATH --moatd PATH [--runs N] [--tp-runs N] [--pool N] "
				"[--sessions N]\n");
			return o == 'h' ? 0 : 2;
		}
	}
	if (!opt.moat || !opt.moatd) {
		fprintf(stderr, "moatd-bench: --moat and --moatd are needed\n");
		return 2;
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	signal(SIGPIPE, SIG_IGN);
	find_program("bwrap", bwrap, sizeof(bwrap));
	snprintf(dir, sizeof(dir), "/tmp/moatd-bench.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0711) < 0) {
		perror("moatd-bench: scratch folder");
		return 1;
	}
	snprintf(sock, sizeof(sock), "%s/moatd.sock", dir);
	char la[128], cfg[64];
	loadavg(la, sizeof(la));
	printf("moatd-bench: %s, pool of %u (profile code); load average at start %s\n",
	       geteuid() == 0 ? "as root" : "rootless", opt.pool, la);
	snprintf(cfg, sizeof(cfg), "pool: {code: %u}\n", opt.pool);
	char moat_abs[PATH_MAX];
	if (!realpath(opt.moat, moat_abs)) {
		perror("moatd-bench: --moat");
		return 2;
	}
	opt.moat = moat_abs;
	int rc = 0;
	if (start_moatd(cfg) < 0) {
		fprintf(stderr, "moatd-bench: moatd did not start\n");
		rc = 1;
		goto out;
	}
	pool_full();
	bench_latency();
	bench_throughput();
	stop_moatd();
	/* Idle memory without a pool, as a deployment without one runs. */
	if (start_moatd("") == 0)
		bench_memory();
	loadavg(la, sizeof(la));
	printf("\nload average at end %s\n", la);
out:
	stop_moatd();
	char state[PATH_MAX + 64];
	snprintf(state, sizeof(state), "rm -rf -- '%s'", dir);
	if (system(state) != 0)
		rc = 1;
	return rc;
}
