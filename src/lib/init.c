/* pid 1 of the sandbox. It finishes the setup from inside every namespace
 * (identity, hostname, loopback, root filesystem), forks the command, reaps
 * every process, relays signals the supervisor asks for, and reports how
 * the command ended. Its own command line, environment and file
 * descriptors reveal nothing of the caller: it wipes the first two, closes
 * the rest, and is not dumpable, so the command cannot read /proc/1/environ
 * or reach /proc/1/exe (runc CVE-2019-5736). */
#include "confine.h"
#include "filetrail.h"
#include "sandbox-internal.h"
#include "netnat.h"
#include "netproxy.h"
#include "syscalls.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>

_Static_assert(sizeof(moat_isolation) < sizeof(((moat_ctl_msg *)0)->text), "isolation report fits a message");

/* What the command's process tells the init over the exec-report pipe: a
 * report of the layers it put in force just before execve, or why it could
 * not get there. The pipe is close-on-exec, so EOF means execve succeeded. */
typedef struct exec_report {
	int kind; /* 1 = layers report, 2 = setup failure, 3 = exec failure */
	int err;
	moat_isolation iso;
	char text[512];
} exec_report;

_noreturn_ static void fail_setup(int ctl, const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	moat_error_format(err, buf, sizeof(buf));
	moat__ctl_send(ctl, MOAT_CTL_SETUP_ERROR, err->code, 0, buf);
	_exit(1);
}

/* Overwrites the argv and environment strings the init inherited from the
 * caller by fork, so /proc/1/cmdline and /proc/1/environ show nothing. */
static void wipe_inherited_strings(void)
{
	_cleanup_free_ char *stat = NULL;
	if (moat__read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &stat) < 0)
		return;
	char *p = strrchr(stat, ')');
	if (!p)
		return;
	/* Fields after the command name start at 3 (state); we need
	 * arg_start..env_end, fields 48 to 51. */
	unsigned long long v[4] = {0};
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		field++;
		if (field >= 48 && field <= 51)
			v[field - 48] = strtoull(tok, NULL, 10);
	}
	if (v[1] > v[0] && v[1] - v[0] < (1u << 24)) {
		memset((void *)(uintptr_t)v[0], 0, v[1] - v[0]);
		memcpy((void *)(uintptr_t)v[0], "moat-init", v[1] - v[0] < 10 ? v[1] - v[0] : 10);
	}
	if (v[3] > v[2] && v[3] - v[2] < (1u << 24))
		memset((void *)(uintptr_t)v[2], 0, v[3] - v[2]);
}

/* Finds argv[0] on the sandbox's PATH the way a shell does, and runs it.
 * Returns only on failure, with the errno that best explains it: EACCES
 * when something was found but could not run, ENOENT when nothing was. */
static int exec_command(char *const argv[], char *const envp[])
{
	const char *cmd = argv[0];
	if (strchr(cmd, '/')) {
		execve(cmd, argv, envp);
		return errno;
	}
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (char *const *e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	int best = ENOENT;
	char buf[MOAT_MAX_PATH];
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n > 0 && n + strlen(cmd) + 2 < sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, cmd);
			execve(buf, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR)
				best = errno;
		}
		if (!end)
			break;
		path = end + 1;
	}
	return best;
}

static int set_rlimit(int res, uint64_t v)
{
	if (v == MOAT_UNLIMITED)
		return 0;
	struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
	return setrlimit(res, &rl);
}

/* The confinement layers, in order: capabilities and no_new_privs first,
 * then Landlock, then seccomp last (its filter would otherwise have to allow
 * the calls that set up the others). */
static int moat__confine(const moat_config *c, moat_isolation *iso, moat_error *err)
{
	int r = moat__caps_drop(iso, err);
	if (r < 0)
		return moat_error_wrap(err, "capabilities");
	r = moat__landlock_apply(c, iso, err);
	if (r < 0)
		return r;
	r = moat__seccomp_apply(c, iso, err);
	if (r < 0)
		return moat_error_wrap(err, "seccomp");
	return 0;
}

_noreturn_ static void report_and_exit(int fd, int kind, int e, const char *text)
{
	exec_report rep;
	memset(&rep, 0, sizeof(rep));
	rep.kind = kind;
	rep.err = e;
	snprintf(rep.text, sizeof(rep.text), "%s", text);
	moat__write_all(fd, &rep, sizeof(rep));
	_exit(127);
}

/* The command's process: from here to execve, nothing but the confinement
 * steps and the exec itself. */
_noreturn_ static void command_child(const moat_init_args *a, const int stdio[3], int report_fd, int tty_slave)
{
	const moat_config *c = a->config;
	moat_error err = {0};
	char buf[MOAT_ERROR_MAX + 64];

	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);

	/* A new session: the command has no controlling terminal unless we
	 * give it the sandbox's own pseudo-terminal (TIOCSTI into the
	 * caller's terminal, bubblewrap CVE-2017-5226, needs one). */
	if (setsid() < 0)
		report_and_exit(report_fd, 2, errno, "setsid");
	int in = stdio[0], out = stdio[1], errfd = stdio[2];
	if (tty_slave >= 0) {
		if (ioctl(tty_slave, TIOCSCTTY, 0) < 0)
			report_and_exit(report_fd, 2, errno, "set controlling terminal");
		in = out = errfd = tty_slave;
	}
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		report_and_exit(report_fd, 2, errno, "set up standard streams");

	/* No core files: they would land in the working directory and could
	 * hold whatever the process had in memory. */
	set_rlimit(RLIMIT_CORE, 0);

	if (chdir(a->cwd) < 0) {
		snprintf(buf, sizeof(buf), "working directory %s", a->cwd);
		report_and_exit(report_fd, 2, errno, buf);
	}

	/* The file trail's notify filter goes first, so that the confinement
	 * filter that follows cannot hide the calls it watches. Its listener
	 * goes straight to the supervisor over the control socket, and this
	 * process drops its own copy before making any watched call. */
	if (a->file_trail) {
		int lfd = moat__filetrail_install(&err);
		if (lfd < 0)
			report_and_exit(report_fd, 2, err.code, moat_error_format(&err, buf, sizeof(buf)));
		int r = moat__ctl_send_fd(a->ctl_fd, MOAT_CTL_FD_NOTIFY, lfd);
		close(lfd);
		if (r < 0)
			report_and_exit(report_fd, 2, -r, "file trail: hand the listener to the supervisor");
	}

	exec_report rep;
	memset(&rep, 0, sizeof(rep));
	rep.kind = 1;
	if (moat__confine(c, &rep.iso, &err) < 0)
		report_and_exit(report_fd, 2, err.code, moat_error_format(&err, buf, sizeof(buf)));
	/* The rlimits that stand in for a missing cgroup (address space,
	 * processes, CPU) come last: nothing of moat's own setup may run
	 * under them, and an instrumented build's runtime could not map its
	 * memory. */
	if (moat__rlimit_plan_apply(&a->rlimits) < 0)
		report_and_exit(report_fd, 2, errno, "set resource limits");
	/* The descriptor and file size limits are the command's, not moat's:
	 * set last, so that a small --files bounds what the command opens, not
	 * the Landlock rules above. The supervisor checked them against the
	 * hard limits (limits.c), so a failure here is the host's doing. */
	if (set_rlimit(RLIMIT_NOFILE, c->limits.files) < 0)
		report_and_exit(report_fd, 2, errno, "limits.files: set RLIMIT_NOFILE");
	if (set_rlimit(RLIMIT_FSIZE, c->limits.fsize) < 0)
		report_and_exit(report_fd, 2, errno, "limits.fsize: set RLIMIT_FSIZE");
	moat__write_all(report_fd, &rep, sizeof(rep));

	/* Only stdin, stdout and stderr cross into the command: everything
	 * else, including descriptors the caller leaked to us without
	 * O_CLOEXEC (runc CVE-2024-21626), closes at execve. */
	moat__close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);

	int e = exec_command(c->argv, a->envp);
	report_and_exit(report_fd, 3, e, c->argv[0]);
}

typedef struct command_start {
	const moat_init_args *a;
	int report_fd;
	int unused_fd; /* the init's end of the report pipe */
	int tty_slave;
	int stdio[3];  /* the command's stdin, stdout, stderr (MOAT_CTL_SPAWN) */
} command_start;

static int command_entry(void *p)
{
	const command_start *s = p;
	close(s->unused_fd);
	command_child(s->a, s->stdio, s->report_fd, s->tty_slave);
}

/* Starts the command's process the way posix_spawn does: it shares the
 * init's memory, on a stack of its own, until its execve, and the init is
 * suspended until then (CLONE_VM | CLONE_VFORK). No page tables are
 * copied, no copy-on-write faults follow, and no copied address space is
 * torn down at execve: 2.5 ms less CPU time per run on the reference
 * machine, about 14% of a run (docs/performance.md).
 *
 * This holds because the init has a single thread and waits: whatever
 * command_child does to the shared memory (its allocations included: they
 * land in the init's heap, consistent, merely unused) happens while
 * nothing else runs in it, and the child never returns into the init's
 * frames, only execs or _exits. Signal dispositions, the signal mask, the
 * descriptor table, credentials, seccomp and Landlock are per process or
 * per thread, so its confinement reaches the init in no way. Sanitizer
 * builds fork: AddressSanitizer cannot follow a switched stack. */
static pid_t start_command(command_start *s)
{
#if defined(__SANITIZE_ADDRESS__)
	pid_t pid = fork();
	if (pid == 0)
		command_entry(s);
	return pid;
#else
	const size_t size = 256 * 1024;
	void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	pid_t pid = clone(command_entry, (char *)stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, s);
	/* Back here the child has execed or exited: its stack is free. */
	int e = errno;
	munmap(stack, size);
	errno = e;
	return pid;
#endif
}

static int open_pty(int ctl, int *ret_slave, moat_error *err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return moat_error_set(err, errno, "open /dev/ptmx");
	int unlock = 0;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return moat_error_set(err, errno, "unlock pseudo-terminal");
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return moat_error_set(err, errno, "open pseudo-terminal peer");
	int r = moat__ctl_send_fd(ctl, MOAT_CTL_FD_PTY_MASTER, master);
	if (r < 0) {
		close(slave);
		return moat_error_set(err, r, "hand the pseudo-terminal to the supervisor");
	}
	*ret_slave = slave;
	return 0;
}

/* Nothing of the command may run outside the run's cgroup: the command is
 * forked only once the supervisor says the init has joined it. */
static int wait_cgroup_joined(int ctl)
{
	moat_ctl_msg m;
	for (;;) {
		if (moat__ctl_recv(ctl, &m, NULL) < 0)
			return -EPIPE;
		if (m.type == MOAT_CTL_CGROUP_JOINED)
			return 0;
	}
}

/* Waits for the request to start the command, with its three streams. */
static int wait_spawn(int ctl, int stdio[3])
{
	moat_ctl_msg m;
	for (;;) {
		size_t n = 0;
		if (moat__ctl_recv_fds(ctl, &m, stdio, 3, &n) < 0)
			return -EPIPE;
		if (m.type == MOAT_CTL_SPAWN && n == 3)
			return 0;
		for (size_t i = 0; i < n; i++)
			close(stdio[i]);
		if (m.type == MOAT_CTL_SPAWN)
			return -EBADMSG;
	}
}

_noreturn_ void moat__init_main(const moat_init_args *a)
{
	moat_error err = {0};
	moat_isolation iso;
	memset(&iso, 0, sizeof(iso));
	int ctl = a->ctl_fd;

	/* If the supervisor dies, so does the whole sandbox. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);

	moat_ctl_msg m;
	if (moat__ctl_recv(ctl, &m, NULL) < 0 || m.type != MOAT_CTL_GO)
		_exit(1);
	if (m.a != MOAT_CTL_VERSION) {
		moat_error_set(&err, EPROTO, "control protocol version %d, expected %d", m.a, MOAT_CTL_VERSION);
		fail_setup(ctl, &err);
	}

	/* The per-namespace limits are written once the root filesystem is
	 * built (making it takes mount namespaces of its own: open_tree and
	 * fsmount clones), through the procfs we start with: the sandbox's
	 * own /proc/sys is read-only. */
	_cleanup_close_ int sys_user = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sys_user < 0) {
		moat_error_set(&err, errno, "open /proc/sys/user");
		fail_setup(ctl, &err);
	}
	if (moat__userns_become_sandbox_user(a->rootless, &err) < 0)
		fail_setup(ctl, &err);
	const char *hn = a->config->hostname ? a->config->hostname : "moat";
	if (sethostname(hn, strlen(hn)) < 0) {
		moat_error_set(&err, errno, "sethostname");
		fail_setup(ctl, &err);
	}
	if (moat__net_loopback_up(&err) < 0)
		fail_setup(ctl, &err);
	/* The transparent sockets go first: the supervisor starts the
	 * gateway when the proxy port arrives, with them. */
	if (a->config->net == MOAT_NET_TRANSPARENT && moat__netnat_setup(ctl, &err) < 0)
		fail_setup(ctl, &err);
	if (moat_net_uses_gateway(a->config->net) && moat__netproxy_listen(ctl, &err) < 0)
		fail_setup(ctl, &err);
	if (moat__rootfs_setup(a, &iso, &err) < 0)
		fail_setup(ctl, &err);
	if (moat__userns_set_limits(sys_user, moat__confine_profile(a->config), &err) < 0)
		fail_setup(ctl, &err);
	close(TAKE_FD(sys_user));

	int tty_slave = -1;
	if (a->tty && open_pty(ctl, &tty_slave, &err) < 0)
		fail_setup(ctl, &err);

	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_NAME, "moat-init");
	wipe_inherited_strings();

	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		moat_error_set(&err, errno, "signalfd");
		fail_setup(ctl, &err);
	}
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0) {
		moat_error_set(&err, errno, "pipe");
		fail_setup(ctl, &err);
	}

	if (a->wait_cgroup && wait_cgroup_joined(ctl) < 0)
		_exit(1);
	command_start start = {.a = a, .report_fd = rp[1], .unused_fd = rp[0], .tty_slave = tty_slave};
	if (wait_spawn(ctl, start.stdio) < 0)
		_exit(1);
	pid_t cmd = start_command(&start);
	if (cmd < 0) {
		moat_error_set(&err, errno, "fork the command");
		fail_setup(ctl, &err);
	}
	close(rp[1]);
	if (tty_slave >= 0)
		close(tty_slave);
	/* The init keeps no copy of the command's streams, so the supervisor
	 * sees EOF as soon as the run's last process closes them. */
	for (int i = 0; i < 3; i++)
		close(start.stdio[i]);

	exec_report rep;
	bool started = false;
	for (;;) {
		ssize_t n = moat__read_all(rp[0], &rep, sizeof(rep));
		if (n == 0) {
			started = true;
			break;
		}
		if (n != (ssize_t)sizeof(rep))
			break;
		if (rep.kind == 1) {
			iso.no_new_privs = rep.iso.no_new_privs;
			iso.caps_dropped = rep.iso.caps_dropped;
			iso.seccomp = rep.iso.seccomp;
			memcpy(iso.seccomp_profile, rep.iso.seccomp_profile, sizeof(iso.seccomp_profile));
			iso.seccomp_rules = rep.iso.seccomp_rules;
			iso.landlock_abi = rep.iso.landlock_abi;
			memcpy(iso.landlock_rules, rep.iso.landlock_rules, sizeof(iso.landlock_rules));
			continue;
		}
		if (rep.kind == 2) {
			/* The text names what failed; the reason goes with it,
			 * as in every other setup error (fail_setup). */
			moat_error e = {0};
			char msg[MOAT_ERROR_MAX + 64];
			moat_error_set(&e, rep.err, "%s", rep.text);
			moat__ctl_send(ctl, MOAT_CTL_SETUP_ERROR, rep.err, 0, moat_error_format(&e, msg, sizeof(msg)));
			break;
		}
		if (rep.kind == 3) {
			moat__ctl_send(ctl, MOAT_CTL_EXEC_FAILED, rep.err, 0, rep.text);
			break;
		}
	}
	close(rp[0]);
	if (started)
		moat__ctl_send_data(ctl, MOAT_CTL_STARTED, cmd, 0, &iso, sizeof(iso));

	/* Reap until the command itself ends; orphans reparented to us are
	 * reaped as they go. */
	for (;;) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
				if (w == cmd) {
					moat__ctl_send(ctl, MOAT_CTL_EXITED, st, 0, NULL);
					/* The run is over when its command is: nothing it
					 * left behind outlives it. */
					kill(-1, SIGKILL);
					_exit(0);
				}
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (moat__ctl_recv(ctl, &m, NULL) < 0) {
				kill(-1, SIGKILL);
				_exit(1);
			}
			if (m.type == MOAT_CTL_SIGNAL && m.a > 0 && m.a < NSIG) {
				kill(-cmd, m.a);
				kill(cmd, m.a);
			}
		}
	}
	kill(-1, SIGKILL);
	_exit(1);
}
