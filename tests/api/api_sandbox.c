/* Drives libmoat's sandbox object (sandbox.h) directly, as a program
 * embedding it would: one live sandbox, commands spawned one after another
 * and at once, each one's exit status, output (through pipes this program
 * gives) and accounting; a signal to one command; the policy's confinement
 * on every command; the caller's signals untouched; stop and destroy
 * leaving no process, cgroup or mount behind. Prints TAP; run by
 * tests/integration/api_sandbox.sh as root and rootless. */
#include "audit.h"
#include "config.h"
#include "error.h"
#include "result.h"
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int n_test, n_fail;

static void ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(bool cond, const char *fmt, ...)
{
	va_list ap;
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - ", cond ? "" : "not ", n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void diag(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	printf("# %s\n", moat_error_format(err, buf, sizeof(buf)));
}

static moat_config *new_config(uint64_t wall_ms)
{
	moat_config *c = moat_config_new();
	if (!c)
		abort();
	moat_limits_default_code(&c->limits);
	c->limits.wall_ms = wall_ms;
	c->limits.pids = 512;
	return c;
}

/* One command with its stdout and stderr through pipes of ours. */
typedef struct job {
	moat_command cmd;
	int out_r, err_r;
	char out[4096];
	size_t out_len;
} job;

static int spawn(moat_sandbox *sb, job *j, char *const *argv, char *const *env, const char *cwd, int stdin_fd,
		 moat_error *err)
{
	int po[2], pe[2];
	memset(j, 0, sizeof(*j));
	j->out_r = j->err_r = -1;
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		return -errno;
	moat_spawn_spec s;
	moat_spawn_spec_init(&s);
	s.argv = argv;
	s.env = env;
	s.cwd = cwd;
	s.stdin_fd = stdin_fd;
	s.stdout_fd = po[1];
	s.stderr_fd = pe[1];
	int r = moat_sandbox_spawn(sb, &s, &j->cmd, err);
	/* The command has its copies: ours go, so EOF comes when it ends. */
	close(po[1]);
	close(pe[1]);
	j->out_r = po[0];
	j->err_r = pe[0];
	if (r < 0) {
		close(po[0]);
		close(pe[0]);
		j->out_r = j->err_r = -1;
	}
	return r;
}

/* Reads a job's stdout to EOF (the command has ended or will). */
static void collect(job *j)
{
	ssize_t n;
	while (j->out_r >= 0 && (n = read(j->out_r, j->out + j->out_len, sizeof(j->out) - 1 - j->out_len)) > 0)
		j->out_len += (size_t)n;
	j->out[j->out_len] = '\0';
	if (j->out_r >= 0)
		close(j->out_r);
	if (j->err_r >= 0)
		close(j->err_r);
	j->out_r = j->err_r = -1;
}

static char *sh(const char *script)
{
	static char *argv[4];
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	argv[3] = NULL;
	return (char *)argv;
}
#define SH(script) ((char *const *)sh(script))

/* The host pids whose parent is parent. */
static int children_of(pid_t parent, pid_t *ret, int max);
static int children(pid_t *ret, int max)
{
	return children_of(getpid(), ret, max);
}

static int children_of(pid_t parent, pid_t *ret, int max)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[64], buf[512];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		char *p = strrchr(buf, ')');
		int ppid = 0;
		if (p && sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == parent && n < max)
			ret[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* Cgroup directories named for this process (limits.c names them
 * moat-PID-N), anywhere under /sys/fs/cgroup up to depth 8. */
static int count_cgroups(const char *dir, int depth)
{
	if (depth > 8)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "moat-%d-", (int)getpid());
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		n += count_cgroups(sub, depth + 1);
	}
	closedir(d);
	return n;
}


/* The mount namespace of a process ("mnt:[N]"). */
static void mnt_ns(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	ssize_t n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* The mount namespace's 64-bit id, never reused while the system runs
 * (NS_GET_MNTNS_ID, Linux 6.9; older headers lack it); 0 when unknown. */
#ifndef NS_GET_MNTNS_ID
#define NS_GET_MNTNS_ID _IOR(0xb7, 0x5, uint64_t)
#endif
static uint64_t mnt_ns_id(pid_t pid)
{
	char path[64];
	uint64_t id = 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (ioctl(fd, NS_GET_MNTNS_ID, &id) < 0)
		id = 0;
	close(fd);
	return id;
}

/* How many processes of the host are in mount namespace ns: with none,
 * the namespace and every mount in it are gone (this program holds no
 * descriptor on it). Its inode number names it only while it lives: the
 * kernel hands the number to the next namespace made, another sandbox's on
 * a busy host. So a process found under that number counts only if its
 * namespace also has the id (when id is known; a namespace whose id cannot
 * be read counts, so the check never passes for want of it). */
static int procs_in_mnt_ns(const char *ns, uint64_t id)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char buf[64];
		pid_t pid = atoi(e->d_name);
		mnt_ns(pid, buf, sizeof(buf));
		if (strcmp(buf, ns) != 0)
			continue;
		uint64_t its = id ? mnt_ns_id(pid) : 0;
		n += its == 0 || its == id;
	}
	if (d)
		closedir(d);
	return n;
}

static volatile sig_atomic_t sigchld_seen;
static void on_sigchld(int sig)
{
	(void)sig;
	sigchld_seen++;
}

static bool proc_gone(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) < 0;
}

/* Short commands on a terminal, each ending before the caller has read
 * that it started (as on a loaded host). short_tty_commands runs in a
 * child process: a sandbox, SHORT_TTY_RUNS times a command that writes to
 * its terminal and ends. Its exit status is how many outputs were lost,
 * 100 when it could not run. */
#define SHORT_TTY_RUNS 20
static int short_tty_commands(int ready_fd)
{
	moat_error err = {0};
	moat_sandbox *sb = NULL;
	moat_config *c = new_config(120000);
	moat_sandbox_opts o;
	moat_sandbox_opts_init(&o);
	if (moat_sandbox_create(c, &o, &sb, &err) < 0)
		return 100;
	if (write(ready_fd, "r", 1) != 1)
		return 100;
	close(ready_fd);
	char *echo[] = {"/bin/sh", "-c", "echo written-before-the-end", NULL};
	int lost = 0;
	for (int i = 0; i < SHORT_TTY_RUNS; i++) {
		moat_spawn_spec s;
		moat_spawn_spec_init(&s);
		s.argv = echo;
		s.tty = true;
		moat_command tc;
		moat_command_result res;
		if (moat_sandbox_spawn(sb, &s, &tc, &err) < 0) {
			lost++;
			continue;
		}
		char buf[256];
		size_t len = 0;
		ssize_t n;
		struct pollfd p = {.fd = tc.pty_fd, .events = POLLIN};
		/* EIO once the command's side is closed and all is read. */
		while (tc.pty_fd >= 0 && len < sizeof(buf) - 1 && poll(&p, 1, 10000) > 0 &&
		       (n = read(tc.pty_fd, buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)n;
		buf[len] = '\0';
		moat_sandbox_wait(sb, tc.id, -1, &res, &err);
		lost += strstr(buf, "written-before-the-end") == NULL;
		if (tc.pty_fd >= 0)
			close(tc.pty_fd);
	}
	moat_sandbox_destroy(sb, NULL, &err);
	moat_config_free(c);
	return lost;
}

/* The first child of pid, 0 for none (the kernel's list, cheap enough to
 * read in a tight loop). */
static pid_t first_child(pid_t pid)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return (pid_t)atoi(buf);
}

/* Runs short_tty_commands and holds it stopped whenever its sandbox forks
 * a command, until the init has reaped that command and had time to say
 * so: spawn then reads the command's start and its end in one go. Returns
 * how many outputs were lost; *ret_held how many commands the caller was
 * held over. */
static int short_tty_held(int *ret_held)
{
	int ready[2];
	*ret_held = 0;
	if (pipe2(ready, O_CLOEXEC) < 0)
		return 100;
	fflush(NULL);
	pid_t child = fork();
	if (child == 0) {
		close(ready[0]);
		_exit(short_tty_commands(ready[1]));
	}
	close(ready[1]);
	char ch;
	pid_t init = 0;
	if (child > 0 && read(ready[0], &ch, 1) == 1)
		init = first_child(child);
	close(ready[0]);
	if (child < 0)
		return 100;
	if (init <= 0)
		kill(child, SIGKILL);
	int st = 0;
	pid_t w;
	while ((w = waitpid(child, &st, WNOHANG)) == 0) {
		pid_t cmd = first_child(init);
		if (cmd <= 0)
			continue;
		kill(child, SIGSTOP);
		while (kill(cmd, 0) == 0 && first_child(init) == cmd)
			usleep(1000);
		/* The init sends EXITED right after it reaps. */
		usleep(100000);
		(*ret_held)++;
		kill(child, SIGCONT);
	}
	return w == child && WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* "hold SECS": a live sandbox whose two commands sleep SECS (a number the
 * caller can look for) until this process is killed; api_sandbox.sh kills
 * it with SIGKILL and looks for what is left. */
static int hold(const char *secs)
{
	moat_error err = {0};
	moat_sandbox *sb = NULL;
	moat_config *c = new_config(MOAT_UNLIMITED);
	if (moat_sandbox_create(c, NULL, &sb, &err) < 0) {
		diag(&err);
		return 1;
	}
	char *argv[] = {"sleep", (char *)secs, NULL};
	job a, b;
	if (spawn(sb, &a, argv, NULL, NULL, -1, &err) < 0 || spawn(sb, &b, argv, NULL, NULL, -1, &err) < 0) {
		diag(&err);
		return 1;
	}
	printf("started\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "hold") == 0)
		return hold(argv[2]);
	moat_error err = {0};
	moat_sandbox *sb = NULL;
	moat_config *c = new_config(120000);

	/* The caller's signals: a SIGCHLD handler and a blocked SIGUSR1 that
	 * the library must leave exactly as they are. */
	struct sigaction sa = {.sa_handler = on_sigchld};
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t usr1, mask_before, mask_after;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	sigprocmask(SIG_BLOCK, NULL, &mask_before);

	moat_sandbox_opts o;
	moat_sandbox_opts_init(&o);
	int r = moat_sandbox_create(c, &o, &sb, &err);
	ok(r == 0 && sb, "create: the sandbox is up");
	if (r < 0) {
		diag(&err);
		printf("1..%d\n", n_test);
		return 1;
	}
	pid_t kids[8];
	int nk = children(kids, 8);
	ok(nk == 1, "create: one process of ours, the init (%d)", nk);
	pid_t init_pid = nk >= 1 ? kids[0] : 0;
	/* The sandbox's mount namespace, seen through a command (the init is
	 * not dumpable: its namespaces are not the caller's to read). */
	char sandbox_ns[64] = "", own_ns[64] = "";
	uint64_t sandbox_ns_id = 0;
	{
		job probe;
		char *sleeper[] = {"sleep", "1000", NULL};
		pid_t cmd_pid[4];
		moat_command_result pr;
		r = spawn(sb, &probe, sleeper, NULL, NULL, -1, &err);
		if (r == 0 && children_of(init_pid, cmd_pid, 4) == 1)
		{
			mnt_ns(cmd_pid[0], sandbox_ns, sizeof(sandbox_ns));
			sandbox_ns_id = mnt_ns_id(cmd_pid[0]);
			ok(procs_in_mnt_ns(sandbox_ns, sandbox_ns_id) >= 1,
			   "while it lives, its mount namespace is found by name and id");
		}
		mnt_ns(getpid(), own_ns, sizeof(own_ns));
		if (r == 0) {
			moat_sandbox_signal(sb, probe.cmd.id, SIGKILL, &err);
			moat_sandbox_wait(sb, probe.cmd.id, -1, &pr, &err);
			collect(&probe);
		}
	}
	ok(sandbox_ns[0] && strcmp(sandbox_ns, own_ns) != 0, "create: the sandbox has a mount namespace of its own (%s)",
	   sandbox_ns);
	ok(count_cgroups("/sys/fs/cgroup", 0) > 0 || geteuid() != 0, "create: as root the sandbox has a cgroup");
	ok(moat_sandbox_fd(sb) >= 0, "the sandbox's fd is there to poll");

	/* One after another. */
	job j;
	r = spawn(sb, &j, SH("echo one; exit 3"), NULL, NULL, -1, &err);
	ok(r == 0 && j.cmd.pid > 0 && j.cmd.pty_fd < 0, "first command started");
	moat_command_result res;
	r = moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err);
	collect(&j);
	ok(r == 0 && res.status == MOAT_STATUS_EXITED && res.exit_code == 3 && res.exit_status == 3,
	   "first command: exit code 3 (%d %d)", r, res.exit_code);
	ok(strcmp(j.out, "one\n") == 0, "first command: its output through our pipe");
	/* A shell smaller than the init: rusage's peak would be the
	 * init's, carried over at execve, so none is claimed. */
	ok(res.max_rss_bytes == 0, "first command: no memory peak claimed below the init's (max rss %llu)",
	   (unsigned long long)res.max_rss_bytes);

	char *env[] = {"FOO=bar", "HOME=/out-not", NULL};
	r = spawn(sb, &j, SH("echo $FOO $HOME; pwd; cat"), env, "/proc", -1, &err);
	ok(r == 0, "second command started in the same sandbox");
	r = moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err);
	collect(&j);
	ok(r == 0 && res.exit_code == 0 && strcmp(j.out, "bar /out-not\n/proc\n") == 0,
	   "second command: its environment and working directory, stdin /dev/null ('%s')", j.out);

	/* Its stdin a pipe of ours. */
	int pin[2];
	if (pipe2(pin, O_CLOEXEC) < 0)
		return 1;
	char *cat[] = {"cat", NULL};
	r = spawn(sb, &j, cat, NULL, NULL, pin[0], &err);
	close(pin[0]);
	ssize_t w = write(pin[1], "fed\n", 4);
	close(pin[1]);
	r = r == 0 ? moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err) : r;
	collect(&j);
	ok(r == 0 && w == 4 && strcmp(j.out, "fed\n") == 0, "stdin through a pipe of ours");

	/* CPU time is accounted per command. */
	r = spawn(sb, &j, SH("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"), NULL, NULL, -1, &err);
	r = r == 0 ? moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err) : r;
	collect(&j);
	ok(r == 0 && res.exit_code == 0 && res.cpu_user_ms + res.cpu_sys_ms > 0,
	   "a busy command: its CPU time (%llu ms)", (unsigned long long)(res.cpu_user_ms + res.cpu_sys_ms));

	/* Several at once, each held until this program closes its stdin,
	 * released last to first: every end is reported as it happens,
	 * collected through the fd and dispatch as an event loop would. */
	job many[4];
	int hold_w[4];
	char scripts[4][128];
	bool started_all = true;
	for (int i = 0; i < 4; i++) {
		int hp[2];
		if (pipe2(hp, O_CLOEXEC) < 0)
			return 1;
		hold_w[i] = hp[1];
		snprintf(scripts[i], sizeof(scripts[i]), "read x; echo job%d; exit %d", i, 10 + i);
		started_all &= spawn(sb, &many[i], SH(scripts[i]), NULL, NULL, hp[0], &err) == 0;
		close(hp[0]);
	}
	ok(started_all, "four commands at once");
	int ended = 0, order[4] = {-1, -1, -1, -1};
	bool statuses_ok = true, one_at_a_time = true;
	for (int k = 3; k >= 0; k--) {
		close(hold_w[k]);
		int before = ended;
		while (ended == before) {
			struct pollfd p = {.fd = moat_sandbox_fd(sb), .events = POLLIN};
			if (poll(&p, 1, 30000) <= 0)
				break;
			moat_sandbox_event ev;
			while ((r = moat_sandbox_dispatch(sb, &ev, &err)) == 1) {
				if (ev.type != MOAT_SANDBOX_EVENT_EXITED)
					continue;
				for (int i = 0; i < 4; i++)
					if (many[i].cmd.id == ev.command.id) {
						statuses_ok &= ev.command.exit_code == 10 + i;
						order[ended++] = i;
					}
			}
			if (r < 0)
				break;
		}
		one_at_a_time &= ended == before + 1;
	}
	bool outputs_ok = true;
	for (int i = 0; i < 4; i++) {
		collect(&many[i]);
		char want[16];
		snprintf(want, sizeof(want), "job%d\n", i);
		outputs_ok &= strcmp(many[i].out, want) == 0;
	}
	ok(ended == 4 && statuses_ok, "four at once: each one's exit status");
	ok(outputs_ok, "four at once: each one's output on its own pipe");
	ok(one_at_a_time && order[0] == 3 && order[1] == 2 && order[2] == 1 && order[3] == 0,
	   "four at once: each end reported as it happened (%d %d %d %d)", order[0], order[1], order[2], order[3]);

	/* A signal to one command; the other goes on. */
	job a, b;
	char *sleep_long[] = {"sleep", "1000", NULL};
	r = spawn(sb, &a, sleep_long, NULL, NULL, -1, &err);
	r |= spawn(sb, &b, sleep_long, NULL, NULL, -1, &err);
	ok(r == 0, "two sleepers started");
	r = moat_sandbox_signal(sb, a.cmd.id, SIGTERM, &err);
	int r2 = moat_sandbox_wait(sb, a.cmd.id, 30000, &res, &err);
	ok(r == 0 && r2 == 0 && res.status == MOAT_STATUS_SIGNALED && res.signal == SIGTERM && res.exit_status == 143,
	   "signal: the one signalled ended by SIGTERM");
	r = moat_sandbox_wait(sb, b.cmd.id, 300, &res, &err);
	ok(r == -ETIMEDOUT, "signal: the other still runs");
	ok(moat_sandbox_signal(sb, a.cmd.id, SIGTERM, &err) == -ESRCH, "signal: an ended command is ESRCH");
	ok(moat_sandbox_signal(sb, b.cmd.id, 0, &err) == -EINVAL, "signal: 0 is not a signal");
	moat_sandbox_signal(sb, b.cmd.id, SIGKILL, &err);
	r = moat_sandbox_wait(sb, b.cmd.id, 30000, &res, &err);
	ok(r == 0 && res.signal == SIGKILL, "signal: SIGKILL ends the other");
	collect(&a);
	collect(&b);

	/* The policy's confinement holds in every command: the root is
	 * read-only, /tmp is writable, and no namespace can be made. */
	r = spawn(sb, &j, SH("echo x > /etc/moat-api-test 2>/dev/null && echo wrote; echo y > /tmp/ok && echo tmp"),
		  NULL, NULL, -1, &err);
	r = r == 0 ? moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err) : r;
	collect(&j);
	ok(r == 0 && strcmp(j.out, "tmp\n") == 0, "confinement: no write outside the allowed paths ('%s')", j.out);
	char *unshare[] = {"unshare", "-U", "true", NULL};
	r = spawn(sb, &j, unshare, NULL, NULL, -1, &err);
	r = r == 0 ? moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err) : r;
	collect(&j);
	ok(r == 0 && res.exit_code != 0, "confinement: no user namespace inside (exit %d)", res.exit_code);

	/* A command that cannot be executed. */
	char *missing[] = {"/no/such/program", NULL};
	r = spawn(sb, &j, missing, NULL, NULL, -1, &err);
	ok(r == 0 && j.cmd.pid == 0, "not found: spawn says it never ran");
	r = moat_sandbox_wait(sb, j.cmd.id, -1, &res, &err);
	collect(&j);
	ok(r == 0 && res.exit_code == 127 && strstr(res.error, "not found"), "not found: exit 127 and why");

	/* Bad specs are refused with the reason, and nothing starts. */
	moat_spawn_spec s;
	moat_spawn_spec_init(&s);
	ok(moat_sandbox_spawn(sb, &s, &j.cmd, &err) == -EINVAL, "a spec without argv is refused");
	char *bad_env[] = {"NOEQUALS", NULL};
	s.argv = cat;
	s.env = bad_env;
	ok(moat_sandbox_spawn(sb, &s, &j.cmd, &err) == -EINVAL && strstr(err.msg, "NOEQUALS"),
	   "an env entry without '=' is refused, named");
	s.env = NULL;
	s.cwd = "relative";
	ok(moat_sandbox_spawn(sb, &s, &j.cmd, &err) == -EINVAL, "a relative cwd is refused");

	/* A terminal of the sandbox's own. */
	moat_spawn_spec_init(&s);
	char *tty[] = {"sh", "-c", "tty; stty size 2>/dev/null; echo done", NULL};
	s.argv = tty;
	s.tty = true;
	moat_command tc;
	r = moat_sandbox_spawn(sb, &s, &tc, &err);
	ok(r == 0 && tc.pty_fd >= 0, "tty: the terminal's master comes back");
	if (r == 0) {
		char tbuf[512] = "";
		size_t tl = 0;
		ssize_t n;
		struct pollfd p = {.fd = tc.pty_fd, .events = POLLIN};
		while (tl < sizeof(tbuf) - 1 && poll(&p, 1, 10000) > 0 &&
		       (n = read(tc.pty_fd, tbuf + tl, sizeof(tbuf) - 1 - tl)) > 0)
			tl += (size_t)n;
		tbuf[tl] = '\0';
		r = moat_sandbox_wait(sb, tc.id, -1, &res, &err);
		ok(r == 0 && res.exit_code == 0 && strncmp(tbuf, "/dev/pts/", 9) == 0,
		   "tty: the command's streams are the sandbox's own terminal");
		close(tc.pty_fd);
	}

	/* A terminal's output outlives a command that ends before spawn
	 * returns. */
	{
		/* This child's end is no SIGCHLD the library sent. */
		struct sigaction dfl = {.sa_handler = SIG_DFL}, was;
		sigaction(SIGCHLD, &dfl, &was);
		int held = 0;
		int lost = short_tty_held(&held);
		sigaction(SIGCHLD, &was, NULL);
		ok(lost == 0 && held > 0,
		   "tty: %d short commands' output, the caller held until %d of them ended: %d lost",
		   SHORT_TTY_RUNS, held, lost);
	}

	/* An end that a later call reads off the init's socket (here the
	 * second spawn, waiting for its own start) wakes the caller's poll
	 * all the same: the fd promises to be readable while dispatch has an
	 * event to give. */
	{
		moat_spawn_spec q;
		moat_spawn_spec_init(&q);
		char *quick[] = {"true", NULL};
		char *slow[] = {"sleep", "30", NULL};
		moat_command qa, qb;
		q.argv = quick;
		int q1 = moat_sandbox_spawn(sb, &q, &qa, &err);
		struct timespec nap = {0, 300 * 1000000L};
		nanosleep(&nap, NULL); /* its end now waits on the socket */
		q.argv = slow;
		int q2 = moat_sandbox_spawn(sb, &q, &qb, &err);
		struct pollfd p = {.fd = moat_sandbox_fd(sb), .events = POLLIN};
		int pr = poll(&p, 1, 0);
		moat_sandbox_event ev;
		int d = moat_sandbox_dispatch(sb, &ev, &err);
		ok(q1 == 0 && q2 == 0 && pr == 1 && d == 1 && ev.type == MOAT_SANDBOX_EVENT_EXITED &&
			   ev.command.id == qa.id,
		   "an end read during another call makes the fd readable (poll %d, dispatch %d)", pr, d);
		if (q2 == 0) {
			moat_sandbox_signal(sb, qb.id, SIGKILL, &err);
			moat_sandbox_wait(sb, qb.id, -1, &res, &err);
		}
		p.revents = 0;
		ok(poll(&p, 1, 0) == 0 || moat_sandbox_dispatch(sb, &ev, &err) == 0 || ev.command.id != qb.id,
		   "the fd is quiet again once the queue is empty");
	}

	/* The table is bounded. */
	job fill[MOAT_SANDBOX_MAX_COMMANDS];
	int started = 0;
	for (int i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++)
		if (spawn(sb, &fill[i], sleep_long, NULL, NULL, -1, &err) == 0)
			started++;
		else
			diag(&err);
	ok(started == MOAT_SANDBOX_MAX_COMMANDS, "%d commands live at once", started);
	r = spawn(sb, &j, sleep_long, NULL, NULL, -1, &err);
	ok(r == -EAGAIN && strstr(err.msg, "most"), "one more is refused with EAGAIN, saying why");

	/* stop: every command ends, each reported, then the sandbox. */
	ok(moat_sandbox_stop(sb, &err) == 0, "stop");
	int exited = 0;
	bool got_end = false;
	moat_sandbox_event ev;
	while (!got_end) {
		struct pollfd p = {.fd = moat_sandbox_fd(sb), .events = POLLIN};
		if (poll(&p, 1, 30000) <= 0)
			break;
		while ((r = moat_sandbox_dispatch(sb, &ev, &err)) == 1) {
			if (ev.type == MOAT_SANDBOX_EVENT_EXITED)
				exited += ev.command.signal == SIGKILL;
			else if (ev.type == MOAT_SANDBOX_EVENT_ENDED)
				got_end = ev.status == MOAT_STATUS_EXITED;
		}
	}
	ok(got_end && exited == started, "stop: %d commands killed and reported, then the sandbox's end", exited);
	for (int i = 0; i < started; i++)
		collect(&fill[i]);
	ok(moat_sandbox_dispatch(sb, &ev, &err) == 0, "after the end, no more events");
	ok(moat_sandbox_spawn(sb, &s, &tc, &err) == -ESRCH, "after the end, spawn is ESRCH");

	moat_result rr;
	r = moat_sandbox_destroy(sb, &rr, &err);
	sb = NULL;
	ok(r == 0 && rr.status == MOAT_STATUS_EXITED && rr.cpu_ms > 0, "destroy: the sandbox's account (%llu ms cpu)",
	   (unsigned long long)rr.cpu_ms);
	ok(init_pid > 0 && proc_gone(init_pid) && children(kids, 8) == 0, "destroy: no process is left");
	ok(count_cgroups("/sys/fs/cgroup", 0) == 0, "destroy: no cgroup is left");
	/* Probed: without the id (before Linux 6.9) the inode alone names
	 * the namespace, and another sandbox started meanwhile may reuse it. */
	if (!sandbox_ns_id)
		printf("# the kernel gives no mount namespace id: %s is compared by inode alone\n", sandbox_ns);
	ok(sandbox_ns_id || !getenv("CI") || strcmp(getenv("CI"), "true") != 0,
	   "the sandbox's mount namespace has an id (NS_GET_MNTNS_ID)");
	ok(procs_in_mnt_ns(sandbox_ns, sandbox_ns_id) == 0, "destroy: no mount is left (no process in %s, id %llu)",
	   sandbox_ns, (unsigned long long)sandbox_ns_id);

	/* destroy with commands still running, no stop before. */
	r = moat_sandbox_create(c, &o, &sb, &err);
	ok(r == 0, "a second sandbox");
	nk = children(kids, 8);
	init_pid = nk == 1 ? kids[0] : 0;
	for (int i = 0; i < 3 && r == 0; i++)
		r = spawn(sb, &fill[i], sleep_long, NULL, NULL, -1, &err);
	r = moat_sandbox_destroy(sb, &rr, &err);
	sb = NULL;
	for (int i = 0; i < 3; i++)
		collect(&fill[i]);
	ok(r == 0 && init_pid > 0 && proc_gone(init_pid) && children(kids, 8) == 0 &&
		   count_cgroups("/sys/fs/cgroup", 0) == 0,
	   "destroy with commands running: nothing is left");

	/* The runner's model: the sandbox ends with its first command. */
	o.ends_with_first_command = true;
	r = moat_sandbox_create(c, &o, &sb, &err);
	ok(r == 0, "a sandbox that ends with its first command");
	r = spawn(sb, &a, SH("sleep 1000 & echo first"), NULL, NULL, -1, &err);
	r2 = spawn(sb, &b, cat, NULL, NULL, -1, &err);
	ok(r == 0 && r2 == -EALREADY, "it runs no second command");
	r = moat_sandbox_wait(sb, a.cmd.id, -1, &res, &err);
	collect(&a);
	got_end = false;
	while (!got_end) {
		struct pollfd p = {.fd = moat_sandbox_fd(sb), .events = POLLIN};
		if (poll(&p, 1, 30000) <= 0)
			break;
		while (moat_sandbox_dispatch(sb, &ev, &err) == 1)
			got_end |= ev.type == MOAT_SANDBOX_EVENT_ENDED;
	}
	ok(r == 0 && res.exit_code == 0 && strcmp(a.out, "first\n") == 0 && got_end,
	   "its first command's end ends it, the background sleep with it");
	moat_sandbox_destroy(sb, &rr, &err);
	sb = NULL;

	/* The wall limit ends a live sandbox. */
	moat_config *cw = new_config(1000);
	o.ends_with_first_command = false;
	r = moat_sandbox_create(cw, &o, &sb, &err);
	r = r == 0 ? spawn(sb, &a, sleep_long, NULL, NULL, -1, &err) : r;
	got_end = false;
	moat_status why = _MOAT_STATUS_INVALID;
	while (r == 0 && !got_end) {
		struct pollfd p = {.fd = moat_sandbox_fd(sb), .events = POLLIN};
		if (poll(&p, 1, 60000) <= 0)
			break;
		while (moat_sandbox_dispatch(sb, &ev, &err) == 1)
			if (ev.type == MOAT_SANDBOX_EVENT_ENDED) {
				got_end = true;
				why = ev.status;
			}
	}
	collect(&a);
	moat_sandbox_destroy(sb, &rr, &err);
	sb = NULL;
	ok(got_end && why == MOAT_STATUS_TIMEOUT && rr.status == MOAT_STATUS_TIMEOUT,
	   "limits.wall ends a live sandbox: timeout");
	moat_config_free(cw);

	/* A setup error comes back from create with its reason. */
	moat_config *bad = new_config(10000);
	bad->cwd = strdup("relative/cwd");
	r = moat_sandbox_create(bad, &o, &sb, &err);
	ok(r < 0 && !sb, "create refuses a bad configuration");
	moat_config_free(bad);

	/* A seccomp filter that cannot be compiled (here a profile no filter
	 * exists for) fails the create, naming seccomp: no command could start
	 * in that sandbox, and its isolation report would have said "seccomp":
	 * false of a sandbox that never runs anything without it. */
	moat_config *nosc = new_config(10000);
	nosc->profile = strdup("no-such-profile");
	r = moat_sandbox_create(nosc, &o, &sb, &err);
	{
		char buf[MOAT_ERROR_MAX + 64];
		moat_error_format(&err, buf, sizeof(buf));
		ok(r < 0 && !sb && strstr(buf, "seccomp") && strstr(buf, "no-such-profile"),
		   "create fails when the seccomp filter cannot be compiled (%s)", r < 0 ? buf : "created");
	}
	if (sb) {
		moat_sandbox_destroy(sb, &rr, &err);
		sb = NULL;
	}
	moat_config_free(nosc);

	/* The file and exec trail in a sandbox of many commands: each
	 * command's exec and opens are in the sandbox's log, one trail each. */
	{
		char dir[] = "/tmp/moat-api-trail.XXXXXX", logp[64];
		moat_audit *au = NULL;
		moat_config *ct = new_config(120000);
		ct->audit_files = true;
		bool made = mkdtemp(dir) != NULL;
		snprintf(logp, sizeof(logp), "%s/a.jsonl", dir);
		r = made ? moat_audit_open(logp, NULL, &au, &err) : -errno;
		moat_sandbox_opts ot;
		moat_sandbox_opts_init(&ot);
		ot.audit = au;
		r = r == 0 ? moat_sandbox_create(ct, &ot, &sb, &err) : r;
		ok(r == 0, "a sandbox of many commands with the file trail");
		if (r < 0)
			diag(&err);
		char *const first[] = {"/bin/cat", "/etc/passwd", NULL};
		char *const second[] = {"/bin/cat", "/etc/group", NULL};
		int r1 = -1, r2t = -1;
		moat_command_result res1, res2;
		if (r == 0 && (r1 = spawn(sb, &a, first, NULL, NULL, -1, &err)) == 0) {
			r1 = moat_sandbox_wait(sb, a.cmd.id, -1, &res1, &err);
			collect(&a);
		}
		if (r == 0 && (r2t = spawn(sb, &b, second, NULL, NULL, -1, &err)) == 0) {
			r2t = moat_sandbox_wait(sb, b.cmd.id, -1, &res2, &err);
			collect(&b);
		}
		ok(r1 == 0 && r2t == 0 && res1.exit_code == 0 && res2.exit_code == 0, "both commands ran");
		if (r1 != 0 || r2t != 0)
			diag(&err);
		moat_sandbox_destroy(sb, &rr, &err);
		sb = NULL;
		moat_audit_close(au);
		char log[65536] = "";
		int lfd = open(logp, O_RDONLY | O_CLOEXEC);
		ssize_t ln = lfd >= 0 ? read(lfd, log, sizeof(log) - 1) : -1;
		log[ln > 0 ? ln : 0] = '\0';
		if (lfd >= 0)
			close(lfd);
		int execs = 0;
		for (const char *q = log; (q = strstr(q, "\"type\":\"exec\"")); q++)
			execs++;
		ok(execs == 2, "the trail logged each command's exec (%d)", execs);
		ok(strstr(log, "\"path\":\"/etc/passwd\"") && strstr(log, "\"path\":\"/etc/group\""),
		   "and what each one opened");
		ok(strstr(log, "\"trail\":{") != NULL, "session.stop counts the trail's notifications");
		unlink(logp);
		rmdir(dir);
		moat_config_free(ct);
	}

	sigprocmask(SIG_BLOCK, NULL, &mask_after);
	struct sigaction now;
	sigaction(SIGCHLD, NULL, &now);
	ok(sigismember(&mask_after, SIGUSR1) && !sigismember(&mask_after, SIGCHLD) &&
		   !sigismember(&mask_after, SIGTERM) && !sigismember(&mask_after, SIGINT) &&
		   now.sa_handler == on_sigchld,
	   "the caller's signal mask and SIGCHLD handler are untouched");
	ok(sigchld_seen == 0, "no SIGCHLD reached the caller (%d)", (int)sigchld_seen);
	(void)mask_before;

	moat_config_free(c);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
