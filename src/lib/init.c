/* pid 1 of the sandbox. It finishes the setup from inside every namespace
 * (identity, hostname, loopback, root filesystem), then serves a table of
 * commands over the control socket: it starts each one asked for (SPAWN),
 * signals it (SIGNAL), reports how it ended (EXITED, with its resource
 * usage), reaps every other process, and on SHUTDOWN ends them all. A
 * sandbox that ends with its first command (the runner) ends right then.
 * Only the init starts processes in the sandbox: nothing is entered from
 * the host with setns (runc CVE-2016-9962, CVE-2019-5736). Its own command line, environment and file
 * descriptors reveal nothing of the caller: it wipes the first two, closes
 * the rest, and is not dumpable, so the command cannot read /proc/1/environ
 * or reach /proc/1/exe (runc CVE-2019-5736). */
#include "confine.h"
#include "filetrail.h"
#include "landlock.h"
#include "sandbox-internal.h"
#include "sandbox.h"
#include "spawnspec.h"
#include "netnat.h"
#include "netproxy.h"
#include "syscalls.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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
#include <sys/syscall.h>
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
 * the calls that set up the others). The seccomp filter was compiled once
 * by the init (sc), or could not be, for the reason in sc_err. */
static int moat__confine(const moat_config *c, const moat_seccomp_prog *sc, const moat_error *sc_err,
			 moat_isolation *iso, moat_error *err)
{
	int r = moat__caps_drop(iso, err);
	if (r < 0)
		return moat_error_wrap(err, "capabilities");
	r = moat__landlock_apply(c, iso, err);
	if (r < 0)
		return r;
	if (!sc->insns) {
		*err = *sc_err;
		return moat_error_wrap(err, "seccomp");
	}
	r = moat__seccomp_load(sc, iso, err);
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

/* The kernel's sigaction, by the raw system call: glibc's sigaction(),
 * signal() and sigaddset() refuse its two internal signals (32 and 33),
 * yet a caller may hand them over ignored (glibc's own posix_spawn, which
 * make uses, sets them to SIG_IGN in the child), and an ignored signal
 * stays ignored across execve. Only the handler is read; resetting writes
 * SIG_DFL with no flags and an empty mask, valid on every architecture. */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static int kernel_sigaction(int sig, const struct kernel_sigaction *act, struct kernel_sigaction *old)
{
	return (int)syscall(SYS_rt_sigaction, sig, act, old, sizeof(uint64_t));
}

/* What one command is started with. */
typedef struct command_start {
	const moat_init_args *a;
	uint64_t nondefault; /* bit sig-1: a signal whose disposition is not the default */
	const moat_seccomp_prog *seccomp; /* compiled once by the init */
	const moat_error *seccomp_err;    /* why it could not be, if not */
	char *const *argv;
	char *const *envp;
	const char *cwd;
	int report_fd;
	int unused_fd; /* the init's end of the report pipe */
	int tty_slave;
	int stdio[3];  /* the command's stdin, stdout, stderr (MOAT_CTL_SPAWN) */
} command_start;

/* The command's process: from here to execve, nothing but the confinement
 * steps and the exec itself. */
_noreturn_ static void command_child(const command_start *s)
{
	const moat_init_args *a = s->a;
	const moat_config *c = a->config;
	int report_fd = s->report_fd;
	moat_error err = {0};
	char buf[MOAT_ERROR_MAX + 64];

	/* Every disposition that is not the default goes back to it before
	 * the mask opens: a handler inherited from the caller must not run
	 * here, and an ignored signal would stay ignored across execve. */
	for (int sig = 1; sig < NSIG && sig <= 64; sig++)
		if (s->nondefault & (UINT64_C(1) << (sig - 1)))
			(void)kernel_sigaction(sig, &(struct kernel_sigaction){.handler = SIG_DFL}, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* A new session: the command has no controlling terminal unless we
	 * give it the sandbox's own pseudo-terminal (TIOCSTI into the
	 * caller's terminal, bubblewrap CVE-2017-5226, needs one). It also
	 * leads its own process group, which SIGNAL addresses. */
	if (setsid() < 0)
		report_and_exit(report_fd, 2, errno, "setsid");
	int in = s->stdio[0], out = s->stdio[1], errfd = s->stdio[2];
	if (s->tty_slave >= 0) {
		if (ioctl(s->tty_slave, TIOCSCTTY, 0) < 0)
			report_and_exit(report_fd, 2, errno, "set controlling terminal");
		in = out = errfd = s->tty_slave;
	}
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		report_and_exit(report_fd, 2, errno, "set up standard streams");

	/* No core files: they would land in the working directory and could
	 * hold whatever the process had in memory. */
	set_rlimit(RLIMIT_CORE, 0);

	if (chdir(s->cwd) < 0) {
		snprintf(buf, sizeof(buf), "working directory %s", s->cwd);
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
	if (moat__confine(c, s->seccomp, s->seccomp_err, &rep.iso, &err) < 0)
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
	 * O_CLOEXEC (runc CVE-2024-21626) and the init's control socket,
	 * closes at execve. */
	moat__close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);

	/* A filter of the caller's own (an OCI spec's) goes last, on top of
	 * moat's: nothing of moat's setup runs under it, and stacked, it can
	 * only deny more. A failure is reported after the start report, as an
	 * exec failure is. */
	if (c->seccomp_extra) {
		struct sock_fprog prog = {.len = (unsigned short)(c->seccomp_extra_len / sizeof(struct sock_filter)),
					  .filter = c->seccomp_extra};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			report_and_exit(report_fd, 2, errno, "load the container's own seccomp filter");
	}

	int e = exec_command(s->argv, s->envp);
	report_and_exit(report_fd, 3, e, s->argv[0]);
}

static int command_entry(void *p)
{
	const command_start *s = p;
	close(s->unused_fd);
	command_child(s);
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

/* The init's own peak resident size, in KiB: the most its memory ever
 * held, which bounds what the kernel carries into a command's peak at
 * its execve. In a sanitizer build (fork) the child's copy holds the
 * init's private pages only, so the bound holds there too, with a margin
 * for what the child touched before its execve. */
static int64_t own_peak_kb(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return INT64_MAX; /* no bound: no figure is claimed */
#if defined(__SANITIZE_ADDRESS__)
	return ru.ru_maxrss + 1024;
#else
	return ru.ru_maxrss;
#endif
}

/* A fresh pseudo-terminal of the sandbox's own devpts: its master goes to
 * the supervisor (naming command id), its peer is the command's. */
static int open_pty(int ctl, int id, uint16_t rows, uint16_t cols, int *ret_slave, moat_error *err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return moat_error_set(err, errno, "open /dev/ptmx");
	int unlock = 0;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return moat_error_set(err, errno, "unlock pseudo-terminal");
	/* The caller's window size before the command exists: a program that
	 * reads it first thing sees it, not 0x0. */
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	if ((rows || cols) && ioctl(master, TIOCSWINSZ, &ws) < 0)
		return moat_error_set(err, errno, "set the pseudo-terminal's size");
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return moat_error_set(err, errno, "open pseudo-terminal peer");
	int r = moat__ctl_send_fd_for(ctl, MOAT_CTL_FD_PTY_MASTER, id, master);
	if (r < 0) {
		close(slave);
		return moat_error_set(err, r, "hand the pseudo-terminal to the supervisor");
	}
	*ret_slave = slave;
	return 0;
}

/* The commands the init started and has not reaped yet. */
typedef struct command {
	int id;
	pid_t pid; /* 0: a free slot */
	/* The init's peak resident size once the command had execed: an
	 * upper bound of what the kernel carried into the command's
	 * (moat_ctl_exit_usage). */
	int64_t inherited_kb;
} command;

typedef struct init_state {
	const moat_init_args *a;
	int ctl;
	moat_isolation iso; /* what setup put in force; the command adds its layers */
	/* The seccomp filter every command loads, compiled once (libseccomp's
	 * build and compile took most of the CPU time of each session exec).
	 * One that cannot be compiled fails the setup, so a command always
	 * finds it here. */
	moat_seccomp_prog seccomp;
	moat_error seccomp_err;
	/* The signals whose disposition is not the default (inherited from
	 * the caller; the init sets none after), read once: each command
	 * resets those, not all 64 with a call each. */
	uint64_t nondefault; /* as command_start's */
	bool cgroup_joined;
	bool spawned;       /* a command was started (the runner runs one) */
	int first_id;       /* SIGNAL's b = 0 names it */
	command cmds[MOAT_SANDBOX_MAX_COMMANDS];
	size_t n_live;
} init_state;

/* What every command of this sandbox will be confined with, said before
 * any runs (READY): setup's own layers as in force, and the command's as
 * moat__confine puts them, from the same inputs. A command whose layers
 * cannot be put in force does not run (its start fails), so none runs with
 * less than this. Its STARTED then says what the kernel took. */
static void command_layers(const init_state *st, moat_isolation *ret)
{
	*ret = st->iso;
	ret->no_new_privs = true;
	ret->caps_dropped = true;
	if (st->seccomp.insns) {
		ret->seccomp = true;
		snprintf(ret->seccomp_profile, sizeof(ret->seccomp_profile), "%s", st->seccomp.profile);
		ret->seccomp_rules = st->seccomp.rules;
	}
	ret->landlock_abi = 0;
	int abi = moat__landlock_abi();
	_cleanup_free_ moat_ll_plan *plan = abi > 0 ? calloc(1, sizeof(*plan)) : NULL;
	moat_error e = {0};
	if (plan && moat__landlock_plan(st->a->config, abi, plan, &e) == 0) {
		ret->landlock_abi = plan->abi;
		moat__landlock_describe(plan, ret->landlock_rules, sizeof(ret->landlock_rules));
	}
}

static command *find_command(init_state *st, int id)
{
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++)
		if (st->cmds[i].pid > 0 && st->cmds[i].id == id)
			return &st->cmds[i];
	return NULL;
}

static void refuse(init_state *st, int id, int e, const char *text)
{
	moat__ctl_send(st->ctl, MOAT_CTL_REFUSED, e, id, text);
}

/* Reads the spec's sealed memfd into buf. The seals make what was checked
 * what is read; the size is capped before anything is allocated. */
static int read_spec(int fd, char **ret_buf, size_t *ret_len, moat_error *err)
{
	int seals = fcntl(fd, F_GET_SEALS);
	const int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	if (seals < 0 || (seals & need) != need)
		return moat_error_set(err, EBADMSG, "spawn spec: not a sealed memfd");
	struct stat stt;
	if (fstat(fd, &stt) < 0)
		return moat_error_set(err, errno, "spawn spec");
	if (!S_ISREG(stt.st_mode) || stt.st_size <= 0 || (uint64_t)stt.st_size > MOAT_SPAWNSPEC_MAX_BYTES)
		return moat_error_set(err, EBADMSG, "spawn spec: %lld bytes", (long long)stt.st_size);
	size_t len = (size_t)stt.st_size;
	_cleanup_free_ char *buf = malloc(len);
	if (!buf)
		return moat_error_set(err, ENOMEM, "spawn spec");
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return moat_error_set(err, n < 0 ? errno : EBADMSG, "spawn spec: read");
		got += (size_t)n;
	}
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Reads what the command's process reported before its execve (or its
 * _exit): the report pipe holds all of it once a vfork-style start is
 * back. Returns 0 when it ran execve, else a setup (2) or exec (3)
 * failure kind with rep filled. */
static int read_exec_report(int fd, init_state *st, exec_report *rep)
{
	for (;;) {
		ssize_t n = moat__read_all(fd, rep, sizeof(*rep));
		if (n == 0)
			return 0;
		if (n != (ssize_t)sizeof(*rep)) {
			memset(rep, 0, sizeof(*rep));
			rep->kind = 2;
			rep->err = EIO;
			snprintf(rep->text, sizeof(rep->text), "the command's start report was cut short");
			return 2;
		}
		if (rep->kind == 1) {
			st->iso.no_new_privs = rep->iso.no_new_privs;
			st->iso.caps_dropped = rep->iso.caps_dropped;
			st->iso.seccomp = rep->iso.seccomp;
			memcpy(st->iso.seccomp_profile, rep->iso.seccomp_profile, sizeof(st->iso.seccomp_profile));
			st->iso.seccomp_rules = rep->iso.seccomp_rules;
			st->iso.landlock_abi = rep->iso.landlock_abi;
			memcpy(st->iso.landlock_rules, rep->iso.landlock_rules, sizeof(st->iso.landlock_rules));
			continue;
		}
		return rep->kind == 3 ? 3 : 2;
	}
}

/* SPAWN: fds are the command's three streams and its spec; all are closed
 * here. */
static void serve_spawn(init_state *st, int id, int *fds, size_t n)
{
	const moat_init_args *a = st->a;
	moat_error err = {0};
	char msg[MOAT_ERROR_MAX + 64];
	_cleanup_free_ char *spec_buf = NULL;
	moat_spawnspec spec = {0};
	int tty_slave = -1;
	command_start start = {.a = a,
			       .nondefault = st->nondefault,
			       .seccomp = &st->seccomp,
			       .seccomp_err = &st->seccomp_err,
			       .tty_slave = -1,
			       .report_fd = -1,
			       .unused_fd = -1};
	command *slot = NULL;

	if (n != 4) {
		refuse(st, id, EBADMSG, "a command needs its three standard streams and its spec");
		goto out;
	}
	if (a->ends_with_first && st->spawned) {
		refuse(st, id, EALREADY, "this sandbox ends with its first command and runs no other");
		goto out;
	}
	if (a->wait_cgroup && !st->cgroup_joined) {
		refuse(st, id, EPROTO, "a command before the init joined the sandbox's cgroup");
		goto out;
	}
	if (id <= 0 || find_command(st, id)) {
		refuse(st, id, EINVAL, "a command id already in use");
		goto out;
	}
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS && !slot; i++)
		if (st->cmds[i].pid == 0)
			slot = &st->cmds[i];
	if (!slot) {
		snprintf(msg, sizeof(msg), "%d commands are running in this sandbox, the most it runs at once",
			 MOAT_SANDBOX_MAX_COMMANDS);
		refuse(st, id, EAGAIN, msg);
		goto out;
	}
	size_t len = 0;
	if (read_spec(fds[3], &spec_buf, &len, &err) < 0 || moat__spawnspec_decode(spec_buf, len, &spec, &err) < 0) {
		refuse(st, id, err.code, moat_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	start.argv = spec.argv;
	start.envp = spec.envp;
	start.cwd = spec.cwd ? spec.cwd : a->cwd;
	if ((spec.flags & MOAT_SPAWNSPEC_TTY) && open_pty(st->ctl, id, spec.rows, spec.cols, &tty_slave, &err) < 0) {
		refuse(st, id, err.code, moat_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	start.tty_slave = tty_slave;
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0) {
		refuse(st, id, errno, "pipe");
		goto out;
	}
	start.report_fd = rp[1];
	start.unused_fd = rp[0];
	memcpy(start.stdio, fds, sizeof(start.stdio));
	pid_t pid = start_command(&start);
	int fork_errno = errno;
	close(rp[1]);
	st->spawned = true;
	if (pid < 0) {
		close(rp[0]);
		moat_error_set(&err, fork_errno, "fork the command");
		/* The runner's sandbox has nothing else to do. */
		if (a->ends_with_first)
			fail_setup(st->ctl, &err);
		refuse(st, id, fork_errno, moat_error_format(&err, msg, sizeof(msg)));
		goto out;
	}
	slot->id = id;
	slot->pid = pid;
	slot->inherited_kb = own_peak_kb();
	st->n_live++;
	if (st->first_id == 0)
		st->first_id = id;

	exec_report rep;
	int kind = read_exec_report(rp[0], st, &rep);
	close(rp[0]);
	if (kind == 0) {
		moat_ctl_msg m;
		memset(&m, 0, sizeof(m));
		_Static_assert(sizeof(st->iso) <= sizeof(m.text), "isolation fits");
		moat__ctl_send_data(st->ctl, MOAT_CTL_STARTED, pid, id, &st->iso, sizeof(st->iso));
	} else if (kind == 3) {
		moat__ctl_send(st->ctl, MOAT_CTL_EXEC_FAILED, rep.err, id, rep.text);
	} else {
		/* The text names what failed; the reason goes with it, as in
		 * every other setup error (fail_setup). */
		moat_error e = {0};
		moat_error_set(&e, rep.err, "%s", rep.text);
		moat__ctl_send(st->ctl, a->ends_with_first ? MOAT_CTL_SETUP_ERROR : MOAT_CTL_SPAWN_FAILED, rep.err,
			       id, moat_error_format(&e, msg, sizeof(msg)));
	}
out:
	/* The init keeps no copy of a command's streams, so their reader sees
	 * EOF as soon as the last process holding them closes them. */
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (tty_slave >= 0)
		close(tty_slave);
	moat__spawnspec_done(&spec);
}

static void report_exit(init_state *st, command *cmd, int status, const struct rusage *ru)
{
	moat_ctl_exit_usage u = {
		.utime_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
		.stime_us = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
		.maxrss_kb = ru->ru_maxrss,
		.inherited_kb = cmd->inherited_kb,
	};
	moat__ctl_send_data(st->ctl, MOAT_CTL_EXITED, status, cmd->id, &u, sizeof(u));
	cmd->pid = 0;
	st->n_live--;
}

/* Reaps whatever ended: a command's end is reported; an orphan that was
 * reparented to us just goes. flags: WNOHANG, or 0 once every process was
 * killed (the wait then ends with ECHILD). */
static void reap(init_state *st, int flags)
{
	int status;
	struct rusage ru;
	pid_t w;
	while ((w = wait4(-1, &status, flags, &ru)) > 0 || (w < 0 && errno == EINTR)) {
		if (w <= 0)
			continue;
		for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++) {
			command *cmd = &st->cmds[i];
			if (cmd->pid != w)
				continue;
			report_exit(st, cmd, status, &ru);
			/* The runner's sandbox is over when its command is:
			 * nothing it left behind outlives it. */
			if (st->a->ends_with_first) {
				kill(-1, SIGKILL);
				_exit(0);
			}
			break;
		}
	}
}

/* SHUTDOWN, or the supervisor gone: every process ends; with a supervisor
 * still listening, each command's end is reported first. */
_noreturn_ static void end_sandbox(init_state *st, bool report, int code)
{
	kill(-1, SIGKILL);
	if (report)
		reap(st, 0);
	_exit(code);
}

_noreturn_ void moat__init_main(const moat_init_args *a)
{
	moat_error err = {0};
	init_state st = {.a = a, .ctl = a->ctl_fd};
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
	if (moat__userns_become_sandbox_user(a->rootless, a->config->sandbox_uid, a->config->sandbox_gid, &err) < 0)
		fail_setup(ctl, &err);
	const char *hn = a->config->hostname ? a->config->hostname : "moat";
	if (!(a->uts_joined && !a->config->hostname) && sethostname(hn, strlen(hn)) < 0) {
		moat_error_set(&err, errno, "sethostname");
		fail_setup(ctl, &err);
	}
	if (!a->net_joined && moat__net_loopback_up(&err) < 0)
		fail_setup(ctl, &err);
	/* The transparent sockets go first: the supervisor starts the
	 * gateway when the proxy port arrives, with them. */
	if (a->config->net == MOAT_NET_TRANSPARENT && moat__netnat_setup(ctl, &err) < 0)
		fail_setup(ctl, &err);
	if (moat_net_uses_gateway(a->config->net) && moat__netproxy_listen(ctl, &err) < 0)
		fail_setup(ctl, &err);
	/* Before the root is built: /proc here is the procfs the init
	 * started with, whose /proc/sys resolves through the init's (the
	 * sandbox's) namespaces; the sandbox's own is read-only. */
	if (moat__sysctl_write(a->config, &err) < 0)
		fail_setup(ctl, &err);
	if (moat__rootfs_setup(a, &st.iso, &err) < 0)
		fail_setup(ctl, &err);
	if (moat__userns_set_limits(sys_user, moat__confine_profile(a->config), &err) < 0)
		fail_setup(ctl, &err);
	close(TAKE_FD(sys_user));

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
	st.cgroup_joined = !a->wait_cgroup;
	/* A sandbox's creator waits for READY, unless it is a run's (its
	 * SPAWN is already queued), where one more message would wake it
	 * once more for nothing: on a loaded host every wake-up of its waits
	 * for a time slice. */
	/* Compiled before READY: the layers READY reports are those of the
	 * filter every command will load. Every command loads it, so a filter
	 * that cannot be compiled fails the setup: a sandbox where no command
	 * can start would otherwise be made, and report "seccomp": false. */
	if (moat__seccomp_compile(a->config, &st.seccomp, &st.seccomp_err) < 0) {
		err = st.seccomp_err;
		moat_error_wrap(&err, "seccomp");
		fail_setup(ctl, &err);
	}
	if (a->say_ready) {
		moat_isolation planned;
		command_layers(&st, &planned);
		moat__ctl_send_data(ctl, MOAT_CTL_READY, 0, 0, &planned, sizeof(planned));
	}
	st.nondefault = 0;
	for (int sig = 1; sig < NSIG && sig <= 64; sig++) {
		struct kernel_sigaction sa = {0};
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		/* One that cannot be read is reset anyway. */
		if (kernel_sigaction(sig, NULL, &sa) < 0 || sa.handler != SIG_DFL)
			st.nondefault |= UINT64_C(1) << (sig - 1);
	}

	for (;;) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			reap(&st, WNOHANG);
		}
		if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		int fds[MOAT_CTL_MAX_FDS];
		size_t n = 0;
		if (moat__ctl_recv_fds(ctl, &m, fds, MOAT_CTL_MAX_FDS, &n) < 0)
			end_sandbox(&st, false, 1);
		switch (m.type) {
		case MOAT_CTL_CGROUP_JOINED:
			st.cgroup_joined = true;
			break;
		case MOAT_CTL_SPAWN:
			serve_spawn(&st, m.a, fds, n);
			n = 0;
			break;
		case MOAT_CTL_SIGNAL:
			if (m.a > 0 && m.a < NSIG) {
				command *cmd = find_command(&st, m.b ? m.b : st.first_id);
				if (cmd) {
					kill(-cmd->pid, m.a);
					kill(cmd->pid, m.a);
				}
			}
			break;
		case MOAT_CTL_SHUTDOWN:
			end_sandbox(&st, true, 0);
		default:
			break;
		}
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
	}
	end_sandbox(&st, false, 1);
}
