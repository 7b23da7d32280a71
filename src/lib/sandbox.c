/* The sequencer: one sandboxed run from start to finish.
 *
 *   supervisor (this process, host side)        init (pid 1 inside)
 *   ---------------------------------------     ------------------------------
 *   validate config, open stdin, make pipes
 *   clone3(NEWUSER|NEWNS|NEWPID|NEWNET|...)  -> waits for GO
 *   write uid/gid maps, join cgroup, GO      -> identity, hostname, loopback,
 *                                               rootfs, pivot_root
 *                                               fork command: confine, execve
 *   poll: output pipes (count, cap, forward),   reap; report the command's end
 *         wall timer, caller's signals,
 *         control messages, init's pidfd
 *   kill init on a limit: the kernel then kills every process of the pid
 *   namespace, daemons and double-forked grandchildren included, before
 *   init's exit is reported; reap, account, remove the cgroup, report;
 *   then deliver what consumers have not taken yet, for a bounded time.
 *
 * The poll loop is the only place the supervisor waits: every descriptor
 * it writes is non-blocking behind a bounded buffer (iobuf.h), so no
 * consumer can hold a run past its limits or keep a signal unanswered.
 *
 * Nothing in the spawn path sleeps, polls on a timer or runs a helper
 * program: the only processes are the init and the command. */
#include "sandbox.h"

#include "audit.h"
#include "filetrail.h"
#include "iobuf.h"
#include "record.h"
#include "sandbox-internal.h"
#include "hostpath.h"
#include "sweep.h"
#include "netproxy.h"
#include "syscalls.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>

void moat_run_io_init(moat_run_io *io)
{
	memset(io, 0, sizeof(*io));
	io->forward_stdout_fd = STDOUT_FILENO;
	io->forward_stderr_fd = STDERR_FILENO;
}

static int env_set(char ***envp, const char *kv)
{
	size_t nlen = strcspn(kv, "=");
	for (char **e = *envp; e && *e; e++) {
		if (strncmp(*e, kv, nlen) == 0 && (*e)[nlen] == '=') {
			char *d = strdup(kv);
			if (!d)
				return -ENOMEM;
			free(*e);
			*e = d;
			return 0;
		}
	}
	return moat__strv_push(envp, kv);
}

/* With egress through the gateway, the sandbox learns where the proxy is
 * from the variables every HTTP library reads; a --env may override them. */
static int proxy_env(const moat_config *c, char ***envp)
{
	if (c->net != MOAT_NET_PROXY)
		return 0;
	_cleanup_strv_free_ char **pe = moat_gateway_proxy_env(MOAT_PROXY_PORT);
	if (!pe)
		return -ENOMEM;
	for (char **e = pe; *e; e++) {
		size_t nlen = strcspn(*e, "=");
		bool set_by_user = false;
		for (char **u = c->env; u && *u && !set_by_user; u++)
			set_by_user = strncmp(*u, *e, nlen) == 0 && (*u)[nlen] == '=';
		if (!set_by_user && env_set(envp, *e) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The environment starts empty apart from a sane PATH, HOME, LANG and TERM;
 * --env adds to it. Nothing of the caller's environment leaks by default. */
static int build_env(const moat_config *c, char ***ret)
{
	_cleanup_strv_free_ char **env = NULL;
	const char *term = "dumb";
	if (c->tty && getenv("TERM"))
		term = getenv("TERM");
	char termkv[128];
	snprintf(termkv, sizeof(termkv), "TERM=%s", term);
	/* ASAN_OPTIONS: LeakSanitizer stops the process's threads with
	 * ptrace, which seccomp refuses inside (ptrace would let a process
	 * of the sandbox rewrite another's system calls), so every ASan
	 * program would exit 1 at its end. Memory errors are still found;
	 * leak reports are off unless --env ASAN_OPTIONS says otherwise. */
	const char *base[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", termkv,
			      "ASAN_OPTIONS=detect_leaks=0"};
	for (size_t i = 0; i < ELEMENTSOF(base); i++)
		if (env_set(&env, base[i]) < 0)
			return -ENOMEM;
	if (c->policy_yaml && env_set(&env, "MOAT_PARENT_POLICY=" MOAT_POLICY_INSIDE) < 0)
		return -ENOMEM;
	for (char **e = c->env; e && *e; e++)
		if (env_set(&env, *e) < 0)
			return -ENOMEM;
	if (proxy_env(c, &env) < 0)
		return -ENOMEM;
	if (!env && moat__strv_push(&env, "PATH=/usr/bin:/bin") < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(env);
	return 0;
}

/* As root, the sandbox user is an unprivileged host id; hand it a
 * root-owned output directory so it can write there, and files it creates
 * stay owned by that id, never by host root. */
static int prepare_out_dir(const moat_config *c, bool rootless, moat_error *err)
{
	if (!c->out_dir || rootless || moat__out_capped(c))
		return 0;
	/* A link planted where --out points would make this fchown hand any
	 * root-owned folder of the host to the sandbox (hostpath.h). */
	_cleanup_close_ int fd = moat__hostpath_open("--out", c->out_dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "--out %s", c->out_dir);
	if (st.st_uid == 0 && fchown(fd, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_GID) < 0)
		return moat_error_set(err, errno, "--out %s: hand it to the sandbox user", c->out_dir);
	return 0;
}

/* As root, the sandbox writes as MOAT_ROOT_HOST_UID: a --rw source it
 * cannot write would fail inside with a bare EACCES, so say so up front. We
 * do not remap root-owned sources onto the sandbox user: files it created
 * there would be owned by host root, setuid bits included. */
static int check_rw_sources(const moat_config *c, bool rootless, moat_error *err)
{
	if (rootless)
		return 0;
	for (size_t i = 0; i < c->n_binds; i++) {
		const moat_bind *b = &c->binds[i];
		struct stat st;
		if (!(b->flags & MOAT_BIND_RW))
			continue;
		_cleanup_close_ int fd = moat__hostpath_open("--rw", b->src, O_PATH, 0, err);
		if (fd < 0 && (b->flags & MOAT_BIND_OPTIONAL) && err->code == ENOENT) {
			moat_error_clear(err);
			continue;
		}
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "--rw %s", b->src);
		bool w = (st.st_uid == MOAT_ROOT_HOST_UID && (st.st_mode & S_IWUSR)) ||
			 (st.st_gid == MOAT_ROOT_HOST_GID && (st.st_mode & S_IWGRP)) || (st.st_mode & S_IWOTH);
		if (!w)
			return moat_error_set(err, MOAT_EINPUT,
					      "--rw %s: not writable by the sandbox user (host uid %u) that moat uses "
					      "as root; chown it to %u or run moat as an ordinary user",
					      b->src, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_UID);
	}
	return 0;
}

/* --stdin FILE: the file is opened read-only with the caller's rights,
 * never through a link the sandbox could plant, and copied into a sealed
 * memfd. The sandbox never holds a descriptor on the host file: through
 * one it could fchmod or futimens the file, or reopen it for writing via
 * /proc/self/fd when the caller owns it. */
static int stdin_copy(const char *path, moat_error *err)
{
	_cleanup_close_ int src = moat__hostpath_open("--stdin", path, O_RDONLY | O_NONBLOCK, 0, err);
	if (src < 0)
		return src;
	struct stat st;
	if (fstat(src, &st) < 0)
		return moat_error_set(err, errno, "--stdin %s", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT,
				      "--stdin %s: not a regular file (pipe it into moat's standard input instead)", path);
	if ((uint64_t)st.st_size > MOAT_MAX_STDIN_FILE_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "--stdin %s: larger than %llu bytes", path,
				      (unsigned long long)MOAT_MAX_STDIN_FILE_BYTES);
	_cleanup_close_ int mfd = memfd_create("moat-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return moat_error_set(err, errno, "--stdin %s: copy", path);
	char buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "--stdin %s", path);
		if (n == 0)
			break;
		/* The file may grow while it is read; the cap holds anyway. */
		total += (uint64_t)n;
		if (total > MOAT_MAX_STDIN_FILE_BYTES)
			return moat_error_set(err, MOAT_EINPUT, "--stdin %s: larger than %llu bytes", path,
					      (unsigned long long)MOAT_MAX_STDIN_FILE_BYTES);
		int r = moat__write_all(mfd, buf, (size_t)n);
		if (r < 0)
			return moat_error_set(err, -r, "--stdin %s: copy", path);
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(mfd, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "--stdin %s: seal the copy", path);
	return TAKE_FD(mfd);
}

static int open_stdin(const moat_config *c, const moat_run_io *io, int *ret_child, int *ret_feed, moat_error *err)
{
	*ret_feed = -1;
	if (io->stdin_data_set) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return moat_error_set(err, errno, "stdin pipe");
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		*ret_child = p[0];
		*ret_feed = p[1];
		return 0;
	}
	if (c->stdin_path) {
		int fd = stdin_copy(c->stdin_path, err);
		if (fd < 0)
			return fd;
		*ret_child = fd;
		return 0;
	}
	/* The caller's terminal never crosses into the sandbox (TIOCSTI,
	 * bubblewrap CVE-2017-5226): a terminal stdin becomes /dev/null unless
	 * -t gives the command a pseudo-terminal of its own. */
	if (!isatty(STDIN_FILENO) && fcntl(STDIN_FILENO, F_GETFD) >= 0) {
		int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return moat_error_set(err, errno, "duplicate stdin");
		*ret_child = fd;
		return 0;
	}
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open /dev/null");
	*ret_child = fd;
	return 0;
}

static void host_srcs_freep(moat_host_srcs **s)
{
	moat__rootfs_sources_free(*s);
	free(*s);
}

typedef struct run {
	const moat_config *c;
	const moat_run_io *io;
	moat_result *r;
	int pidfd;
	pid_t pid;
	bool killed;
	moat_status kill_reason;
	bool got_exit;
	int wait_status;
	bool setup_failed;
	int setup_errno;
	bool exec_failed;
	uint64_t out_total;
	int pty_master;
	moat_netproxy *netproxy;
	int netproxy_errno;
	moat_filetrail *trail; /* the file and exec trail, when on */
	bool session_logged;   /* session.start is in the audit log */
	/* Where output goes, and the caller's terminal input on its way to
	 * the pseudo-terminal: never written with a blocking call (iobuf.h). */
	moat_sink out, err, pty_in;
	bool sandbox_gone;     /* the init is reaped: take what pipes hold */
	uint64_t grace_end_ns; /* a caller's signal was passed on: end by then */
	int caller_signal;     /* the last signal the caller sent us, or 0 */
	int out_fs;            /* the capped /out's tmpfs (outdir.c), or -1 */
} run;

/* How long the command has to end by itself after moat passed it the
 * caller's SIGINT, SIGTERM, SIGHUP or SIGQUIT; then the run is ended. */
#define MOAT_SIGNAL_GRACE_MS 1000
/* How long output still held for a consumer that does not read may keep
 * moat alive past the wall-clock limit (or past the caller's signal). */
#define MOAT_DRAIN_GRACE_MS 500

static void kill_sandbox(run *s, moat_status why, const char *limit)
{
	if (!s->killed) {
		s->killed = true;
		s->kill_reason = why;
		if (limit)
			snprintf(s->r->limit_hit, sizeof(s->r->limit_hit), "%s", limit);
	}
	moat__pidfd_send_signal(s->pidfd, SIGKILL);
}

/* clone3, into the run's v2 cgroup when there is one (the child then
 * never exists outside it). Kernels before 5.7 refuse CLONE_INTO_CGROUP
 * with EINVAL; the child is then attached by a write, like on v1. */
static long clone_into_cgroup(struct clone_args *ca, moat_run_limits *lim)
{
	int cgfd = moat__limits_clone_fd(lim);
	if (cgfd >= 0) {
		ca->flags |= CLONE_INTO_CGROUP;
		ca->cgroup = (uint64_t)cgfd;
		long pid = moat__clone3(ca);
		if (pid >= 0 || errno != EINVAL)
			return pid;
		ca->flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		ca->cgroup = 0;
	}
	return moat__clone3(ca);
}

/* Joins the init to the run's cgroup(s) while it builds its root
 * filesystem, then lets it fork the command. */
static int join_cgroup(moat_run_limits *lim, int ctl, pid_t pid, bool cloned_into, bool wait, moat_error *err)
{
	int r = moat__limits_attach(lim, pid, cloned_into, err);
	if (r < 0)
		return r;
	/* An init that failed its setup has already said why on the control
	 * channel and closed its end: that is not a start failure of ours.
	 * The loop reads its SETUP_ERROR and reports it. */
	if (wait) {
		int e = moat__ctl_send(ctl, MOAT_CTL_CGROUP_JOINED, 0, 0, NULL);
		if (e < 0 && e != -EPIPE && e != -ECONNRESET)
			return moat_error_set(err, -e, "start the sandbox");
	}
	return 0;
}

/* The cgroup notified an event or the budget timer fired. */
static void check_limits(run *s, moat_run_limits *lim)
{
	const char *limit = NULL;
	moat_status v = moat__limits_check(lim, &limit);
	if (v != MOAT_STATUS_EXITED)
		kill_sandbox(s, v, limit);
}

/* Counts, caps and forwards one chunk of output. */
static void handle_output(run *s, int stream, const char *buf, size_t n)
{
	uint64_t cap = s->c->limits.output_bytes;
	size_t keep = n;
	if (cap != MOAT_UNLIMITED && s->out_total + n > cap) {
		keep = (size_t)(cap - s->out_total);
		s->r->output_truncated = true;
	}
	s->out_total += keep;
	if (stream == 1)
		s->r->stdout_bytes += keep;
	else
		s->r->stderr_bytes += keep;
	if (keep > 0) {
		if (s->io->record)
			moat_record_write(s->io->record, 'o', buf, keep, NULL);
		if (s->io->on_output)
			s->io->on_output(s->io->userdata, stream, buf, keep);
		moat_sink *k = stream == 1 ? &s->out : &s->err;
		if (s->sandbox_gone)
			moat__sink_put_final(k, buf, keep);
		else
			moat__sink_put(k, buf, keep);
	}
	if (keep < n)
		kill_sandbox(s, MOAT_STATUS_OUTPUT_LIMIT, "output");
}

/* Serves the proxy port the init passed out. When the gateway cannot start,
 * the run is ended as a setup error: a sandbox that was promised egress and
 * finds a dead port would only fail later and less clearly. */
static void start_gateway(run *s, int fd)
{
	moat_error gerr = {0};
	if (moat__netproxy_start(s->io->gateway, fd, &s->netproxy, &gerr) < 0) {
		s->setup_failed = true;
		s->setup_errno = gerr.code == MOAT_EINPUT ? EINVAL : gerr.code;
		moat_error_format(&gerr, s->r->error, sizeof(s->r->error));
		moat__pidfd_send_signal(s->pidfd, SIGKILL);
	}
}

static void handle_ctl(run *s, int ctl, bool *ctl_open)
{
	moat_ctl_msg m;
	int fd = -1;
	int r = moat__ctl_recv(ctl, &m, &fd);
	if (r < 0) {
		*ctl_open = false;
		return;
	}
	switch (m.type) {
	case MOAT_CTL_SETUP_ERROR:
		s->setup_failed = true;
		s->setup_errno = m.a;
		snprintf(s->r->error, sizeof(s->r->error), "%s", m.text);
		break;
	case MOAT_CTL_EXEC_FAILED:
		s->exec_failed = true;
		s->setup_errno = m.a;
		snprintf(s->r->error, sizeof(s->r->error), "%s: %s", m.text,
			 m.a == ENOENT ? "command not found" : strerror(m.a));
		break;
	case MOAT_CTL_STARTED: {
		moat_isolation in;
		memcpy(&in, m.text, sizeof(in));
		moat_isolation *iso = &s->r->isolation;
		iso->rootfs_readonly = in.rootfs_readonly;
		iso->proc_masked = in.proc_masked;
		iso->no_new_privs = in.no_new_privs;
		iso->caps_dropped = in.caps_dropped;
		iso->seccomp = in.seccomp;
		memcpy(iso->seccomp_profile, in.seccomp_profile, sizeof(iso->seccomp_profile));
		iso->seccomp_rules = in.seccomp_rules;
		iso->landlock_abi = in.landlock_abi;
		memcpy(iso->landlock_rules, in.landlock_rules, sizeof(iso->landlock_rules));
		if (s->io->audit && !s->session_logged) {
			moat__audit_run_started(s->io->audit, s->c, iso, (pid_t)m.a, s->trail != NULL);
			s->session_logged = true;
			moat__filetrail_session_started(s->trail);
		}
		break;
	}
	case MOAT_CTL_EXITED:
		s->got_exit = true;
		s->wait_status = m.a;
		break;
	case MOAT_CTL_FD:
		if (m.b == MOAT_CTL_FD_PROXY_LISTENER && fd >= 0 && !s->netproxy) {
			start_gateway(s, TAKE_FD(fd));
		} else if (m.b == MOAT_CTL_FD_PTY_MASTER && fd >= 0 && s->pty_master < 0 &&
			   moat__sink_open(&s->pty_in, fd, true) == 0) {
			s->pty_master = TAKE_FD(fd);
			struct winsize ws;
			if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
				ioctl(s->pty_master, TIOCSWINSZ, &ws);
		} else if (m.b == MOAT_CTL_FD_NOTIFY && fd >= 0 && !s->trail && s->io->audit) {
			moat__filetrail_start(TAKE_FD(fd), s->io->audit, &s->trail, NULL);
		} else if (m.b == MOAT_CTL_FD_OUT_TMPFS && fd >= 0 && s->out_fs < 0) {
			s->out_fs = TAKE_FD(fd);
		}
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

static void finish_result(run *s, struct rusage *ru)
{
	moat_result *r = s->r;
	r->cpu_user_ms = (uint64_t)ru->ru_utime.tv_sec * 1000 + (uint64_t)ru->ru_utime.tv_usec / 1000;
	r->cpu_sys_ms = (uint64_t)ru->ru_stime.tv_sec * 1000 + (uint64_t)ru->ru_stime.tv_usec / 1000;
	r->cpu_ms = r->cpu_user_ms + r->cpu_sys_ms;

	if (s->killed && s->kill_reason != MOAT_STATUS_EXITED) {
		/* A limit ended the run; the command died of our SIGKILL. */
		r->status = s->kill_reason;
		r->exit_code = -1;
		r->signal = SIGKILL;
		r->exit_status = 128 + SIGKILL;
		if (s->got_exit && WIFEXITED(s->wait_status) && r->status == MOAT_STATUS_OUTPUT_LIMIT) {
			/* It finished on its own right at the cap. */
			r->signal = 0;
		}
		return;
	}
	if (s->setup_failed) {
		r->status = MOAT_STATUS_SETUP_ERROR;
		r->exit_status = 125;
		return;
	}
	if (s->exec_failed) {
		r->status = MOAT_STATUS_EXITED;
		r->exit_code = s->setup_errno == ENOENT ? 127 : 126;
		r->exit_status = r->exit_code;
		return;
	}
	if (s->got_exit) {
		if (WIFEXITED(s->wait_status)) {
			r->status = MOAT_STATUS_EXITED;
			r->exit_code = WEXITSTATUS(s->wait_status);
			r->exit_status = r->exit_code;
		} else if (WIFSIGNALED(s->wait_status)) {
			r->status = MOAT_STATUS_SIGNALED;
			r->signal = WTERMSIG(s->wait_status);
			r->exit_status = 128 + r->signal;
		}
		return;
	}
	r->status = MOAT_STATUS_SETUP_ERROR;
	r->exit_status = 125;
	if (!r->error[0])
		snprintf(r->error, sizeof(r->error), "the sandbox's init ended before the command did");
}

static void restore_signals(const sigset_t *oldmask, const struct sigaction *oldchld)
{
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	sigaction(SIGCHLD, oldchld, NULL);
}

static int ms_until(uint64_t now_ns, uint64_t then_ns)
{
	if (then_ns <= now_ns)
		return 0;
	uint64_t ms = (then_ns - now_ns + 999999) / 1000000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Reads one chunk of the sandbox's stdout, stderr or terminal: while the
 * sandbox lives, no more than the sink it goes to has room for, so a
 * consumer that does not read holds the sandbox's writes up, never moat.
 * Returns false at EOF or on an error. */
static bool read_stream(run *s, int fd, int stream, char *buf, size_t size)
{
	size_t room = s->sandbox_gone ? size : moat__sink_room(stream == 1 ? &s->out : &s->err);
	if (room < size)
		size = room;
	ssize_t n = read(fd, buf, size);
	if (n > 0) {
		handle_output(s, stream, buf, (size_t)n);
		return true;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* The caller's SIGINT, SIGTERM, SIGHUP and SIGQUIT: the first is passed to
 * the command, which then has MOAT_SIGNAL_GRACE_MS to end by itself; a
 * second one ends the run at once. SIGPIPE (a consumer that went away) is
 * absorbed. */
static void handle_signals(run *s, int sigfd, int ctl, bool ctl_open, bool init_alive)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGPIPE)
			continue;
		bool first = s->caller_signal == 0;
		s->caller_signal = (int)si.ssi_signo;
		if (!init_alive)
			continue;
		if (first && ctl_open && moat__ctl_send(ctl, MOAT_CTL_SIGNAL, (int)si.ssi_signo, 0, NULL) == 0)
			s->grace_end_ns = moat__now_ns() + (uint64_t)MOAT_SIGNAL_GRACE_MS * 1000000ull;
		else
			kill_sandbox(s, MOAT_STATUS_SIGNALED, NULL);
	}
}

/* The run is over and cleaned up; what the sinks still hold goes to
 * consumers that take it, until give_up_ns or a signal of the caller. */
static void drain_sinks(run *s, int sigfd, uint64_t give_up_ns)
{
	for (;;) {
		struct pollfd p[3];
		int n = 0, i_out = -1, i_err = -1, i_sig = -1;
		if (moat__sink_pending(&s->out))
			p[i_out = n++] = (struct pollfd){.fd = s->out.fd, .events = POLLOUT};
		if (moat__sink_pending(&s->err))
			p[i_err = n++] = (struct pollfd){.fd = s->err.fd, .events = POLLOUT};
		if (n == 0)
			return;
		if (sigfd >= 0)
			p[i_sig = n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		int timeout = -1;
		if (give_up_ns != UINT64_MAX) {
			uint64_t now = moat__now_ns();
			if (now >= give_up_ns)
				return;
			timeout = ms_until(now, give_up_ns);
		}
		if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
			return;
		if (i_out >= 0 && p[i_out].revents)
			moat__sink_flush(&s->out);
		if (i_err >= 0 && p[i_err].revents)
			moat__sink_flush(&s->err);
		if (i_sig >= 0 && p[i_sig].revents) {
			struct signalfd_siginfo si;
			bool stop = false;
			while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop |= si.ssi_signo != SIGPIPE;
			if (stop)
				return;
		}
	}
}

/* When moat stops waiting for consumers: output of a run with a wall-clock
 * limit is delivered by the limit plus MOAT_DRAIN_GRACE_MS at the latest,
 * and soon after the caller asked moat to stop; without either, moat waits
 * for the consumer as long as it reads (like cat), and a signal still ends
 * the wait. */
static uint64_t drain_deadline(const run *s, uint64_t t0)
{
	const uint64_t grace = (uint64_t)MOAT_DRAIN_GRACE_MS * 1000000ull;
	uint64_t now = moat__now_ns(), end = UINT64_MAX;
	uint64_t wall = s->c->limits.wall_ms;
	if (wall != MOAT_UNLIMITED && wall < UINT64_MAX / 1000000ull - t0 / 1000000ull - 1000) {
		uint64_t limit = t0 + wall * 1000000ull;
		end = (limit > now ? limit : now) + grace;
	}
	if (s->caller_signal && now + grace < end)
		end = now + grace;
	return end;
}

static void close_sinks(run *s)
{
	moat__sink_close(&s->out);
	moat__sink_close(&s->err);
	moat__sink_close(&s->pty_in);
}

int moat_sandbox_run(const moat_config *c, const moat_run_io *io_in, moat_result *r, moat_error *err)
{
	moat_run_io io_default;
	if (!io_in) {
		moat_run_io_init(&io_default);
		io_in = &io_default;
	}
	moat_result_init(r);
	_cleanup_strv_free_ char **envp = NULL;
	_cleanup_close_ int stdin_child = -1, stdin_feed = -1, tfd = -1, sigfd = -1;
	_cleanup_limits_ moat_run_limits *lim = NULL;
	_cleanup_(host_srcs_freep) moat_host_srcs *srcs = calloc(1, sizeof(*srcs));
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, ctl[2] = {-1, -1};
	run s = {.c = c, .io = io_in, .r = r, .pidfd = -1, .pty_master = -1, .out_fs = -1, .out = MOAT_SINK_INIT,
		 .err = MOAT_SINK_INIT, .pty_in = MOAT_SINK_INIT};
	sigset_t mask, oldmask;
	struct sigaction oldchld;
	bool signals_held = false;
	int ret = moat_config_validate(c, err);
	if (ret < 0)
		goto fail;
	if (c->net == MOAT_NET_PROXY && !io_in->gateway) {
		ret = moat_error_set(err, EINVAL, "network proxy mode without a gateway configuration");
		goto fail;
	}

	bool rootless = geteuid() != 0;
	uid_t host_uid = rootless ? geteuid() : MOAT_ROOT_HOST_UID;
	gid_t host_gid = rootless ? getegid() : MOAT_ROOT_HOST_GID;
	moat_isolation *iso = &r->isolation;
	iso->rootless = rootless;
	iso->host_uid = host_uid;
	iso->host_gid = host_gid;
	iso->uid = MOAT_SANDBOX_UID;
	iso->gid = MOAT_SANDBOX_GID;

	/* What a killed moat of this user left (sweep.h); its cgroups go when
	 * ours is made. */
	(void)moat__sweep_stages(NULL);

	ret = check_rw_sources(c, rootless, err);
	if (ret < 0)
		goto fail;
	ret = prepare_out_dir(c, rootless, err);
	if (ret < 0)
		goto fail;

	/* The caller's signals arrive through a signalfd from before the
	 * run's cgroup exists until it is gone, so a SIGTERM always ends the
	 * run through the path that cleans up; SIGPIPE on a closed stdout is
	 * absorbed the same way. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	/* A caller that ignores SIGCHLD would have the kernel reap the init
	 * behind our back, losing its status and resource usage. */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, &oldchld);
	signals_held = true;

	/* The cgroup exists before the child does, so nothing of the run
	 * escapes its limits or its accounting. */
	ret = moat__limits_prepare(&c->limits, &lim, err);
	if (ret < 0)
		goto fail;

	if (build_env(c, &envp) < 0) {
		ret = moat_error_set(err, ENOMEM, "environment");
		goto fail;
	}
	if (moat__sink_open(&s.out, io_in->forward_stdout_fd, false) < 0 ||
	    moat__sink_open(&s.err, io_in->forward_stderr_fd, false) < 0) {
		ret = moat_error_set(err, ENOMEM, "output buffers");
		goto fail;
	}

	ret = srcs ? moat__rootfs_resolve_sources(c, srcs, err) : moat_error_set(err, ENOMEM, "host paths");
	if (ret < 0)
		goto fail;

	ret = open_stdin(c, io_in, &stdin_child, &stdin_feed, err);
	if (ret < 0)
		goto fail;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
		ret = moat_error_set(err, errno, "pipes");
		goto fail_fds;
	}
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		ret = moat_error_set(err, errno, "signalfd");
		goto fail_fds;
	}

	moat_init_args ia = {
		.config = c,
		.ctl_fd = ctl[1],
		.stdin_fd = stdin_child,
		.stdout_fd = outp[1],
		.stderr_fd = errp[1],
		.rootless = rootless,
		.tty = c->tty,
		.envp = envp,
		.cwd = c->cwd ? c->cwd : (c->out_dir ? "/out" : "/tmp"),
		.out_bound = c->out_dir != NULL,
		.wait_cgroup = moat__limits_attach_pending(lim),
		.file_trail = c->audit_files && io_in->audit,
		.host_srcs = srcs,
	};
	moat__limits_rlimit_plan(lim, &ia.rlimits);
	ia.n_cgroup_mounts = moat__limits_cgroup_mounts(lim, ia.cgroup_mounts);

	int pidfd = -1;
	struct clone_args ca = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
			 CLONE_NEWCGROUP | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	uint64_t t0 = moat__now_ns();
	long pid = clone_into_cgroup(&ca, lim);
	if (pid < 0) {
		ret = moat_error_set(err, errno, "create the sandbox's namespaces (clone3)");
		goto fail_fds;
	}
	if (pid == 0) {
		close(ctl[0]);
		close(outp[0]);
		close(errp[0]);
		if (stdin_feed >= 0)
			close(stdin_feed);
		moat__init_main(&ia);
	}
	iso->userns = iso->mountns = iso->pidns = iso->netns = iso->ipcns = iso->utsns = iso->cgroupns = true;
	close(ctl[1]);
	close(outp[1]);
	close(errp[1]);
	ctl[1] = outp[1] = errp[1] = -1;
	close(TAKE_FD(stdin_child));
	s.pidfd = pidfd;
	s.pid = (pid_t)pid;

	ret = moat__userns_write_maps((pid_t)pid, rootless, host_uid, host_gid, err);
	if (ret >= 0) {
		/* As for CGROUP_JOINED: an init already gone is reported by
		 * the loop with what it said, not as a broken pipe here. */
		int e = moat__ctl_send(ctl[0], MOAT_CTL_GO, 0, 0, NULL);
		if (e < 0 && e != -EPIPE && e != -ECONNRESET)
			ret = moat_error_set(err, -e, "start the sandbox");
	}
	if (ret >= 0)
		ret = join_cgroup(lim, ctl[0], (pid_t)pid, ca.flags & CLONE_INTO_CGROUP, ia.wait_cgroup, err);
	if (ret >= 0 && c->limits.wall_ms != MOAT_UNLIMITED) {
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec its = {.it_value = {.tv_sec = (time_t)(c->limits.wall_ms / 1000),
						      .tv_nsec = (long)(c->limits.wall_ms % 1000) * 1000000}};
		if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0)
			ret = moat_error_set(err, errno, "wall-clock timer");
	}
	if (ret < 0) {
		/* The init may have failed its setup before it could be told
		 * to go on (a fast refusal of a mount target): its reason is
		 * waiting on the socket and says more than our own error. */
		struct pollfd q = {.fd = ctl[0], .events = POLLIN};
		moat_ctl_msg m;
		int mfd = -1;
		if (poll(&q, 1, 0) > 0 && moat__ctl_recv(ctl[0], &m, &mfd) == 0 && m.type == MOAT_CTL_SETUP_ERROR)
			ret = moat_error_set(err, MOAT_EINPUT, "%s", m.text);
		if (mfd >= 0)
			close(mfd);
		moat__pidfd_send_signal(pidfd, SIGKILL);
		waitpid((pid_t)pid, NULL, 0);
		close(pidfd);
		goto fail_fds;
	}
	int limfd = moat__limits_fd(lim);

	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	bool out_open = true, err_open = true, ctl_open = true, init_alive = true;
	size_t fed = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	char buf[65536];
	bool tty_in_open = c->tty && isatty(STDIN_FILENO);
	struct termios saved_tio;
	bool tio_saved = false;

	/* The loop never blocks but in poll: every descriptor it reads or
	 * writes is non-blocking, and it reads the sandbox's output only as
	 * far as the consumer keeps up (iobuf.h). So the wall timer, the
	 * limits and the caller's signals are served whatever the consumers
	 * do. */
	while (init_alive || out_open || err_open || s.pty_master >= 0) {
		struct pollfd p[14];
		int n = 0, i_out = -1, i_err = -1, i_ctl = -1, i_pid = -1, i_t = -1, i_sig = -1, i_feed = -1,
		    i_pty = -1, i_tin = -1, i_lim = -1, i_sout = -1, i_serr = -1;
		bool out_room = s.sandbox_gone || moat__sink_room(&s.out) > 0;
		bool err_room = s.sandbox_gone || moat__sink_room(&s.err) > 0;
		if (limfd >= 0 && init_alive && !s.killed)
			p[i_lim = n++] = (struct pollfd){.fd = limfd, .events = POLLIN};
		if (out_open && out_room)
			p[i_out = n++] = (struct pollfd){.fd = outp[0], .events = POLLIN};
		if (err_open && err_room)
			p[i_err = n++] = (struct pollfd){.fd = errp[0], .events = POLLIN};
		if (ctl_open)
			p[i_ctl = n++] = (struct pollfd){.fd = ctl[0], .events = POLLIN};
		if (init_alive)
			p[i_pid = n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (tfd >= 0 && init_alive)
			p[i_t = n++] = (struct pollfd){.fd = tfd, .events = POLLIN};
		p[i_sig = n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		if (stdin_feed >= 0)
			p[i_feed = n++] = (struct pollfd){.fd = stdin_feed, .events = POLLOUT};
		if (s.pty_master >= 0) {
			short ev = (short)((out_room ? POLLIN : 0) | (moat__sink_pending(&s.pty_in) ? POLLOUT : 0));
			if (ev)
				p[i_pty = n++] = (struct pollfd){.fd = s.pty_master, .events = ev};
		}
		if (s.pty_master >= 0 && tty_in_open && moat__sink_room(&s.pty_in) > 0)
			p[i_tin = n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		if (moat__sink_pending(&s.out))
			p[i_sout = n++] = (struct pollfd){.fd = s.out.fd, .events = POLLOUT};
		if (moat__sink_pending(&s.err))
			p[i_serr = n++] = (struct pollfd){.fd = s.err.fd, .events = POLLOUT};
		int timeout = -1;
		if (s.grace_end_ns && init_alive)
			timeout = ms_until(moat__now_ns(), s.grace_end_ns);
		if (poll(p, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (i_sout >= 0 && p[i_sout].revents)
			moat__sink_flush(&s.out);
		if (i_serr >= 0 && p[i_serr].revents)
			moat__sink_flush(&s.err);
		if (i_out >= 0 && p[i_out].revents)
			out_open = read_stream(&s, outp[0], 1, buf, sizeof(buf));
		if (i_err >= 0 && p[i_err].revents)
			err_open = read_stream(&s, errp[0], 2, buf, sizeof(buf));
		if (i_pty >= 0 && p[i_pty].revents) {
			short rev = p[i_pty].revents;
			if (rev & POLLOUT)
				moat__sink_flush(&s.pty_in);
			if (!tio_saved && tty_in_open && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
				struct termios raw = saved_tio;
				cfmakeraw(&raw);
				tcsetattr(STDIN_FILENO, TCSANOW, &raw);
				tio_saved = true;
			}
			bool open = true;
			if (rev & (POLLIN | POLLHUP | POLLERR)) {
				if (out_room)
					open = read_stream(&s, s.pty_master, 1, buf, sizeof(buf));
				else /* a hung-up terminal takes no more input */
					moat__sink_close(&s.pty_in);
			}
			if (!open) {
				moat__sink_close(&s.pty_in);
				close(s.pty_master);
				s.pty_master = -1;
			}
		}
		if (i_tin >= 0 && p[i_tin].revents) {
			size_t room = moat__sink_room(&s.pty_in);
			ssize_t k = read(STDIN_FILENO, buf, room < sizeof(buf) ? room : sizeof(buf));
			if (k > 0 && s.pty_master >= 0) {
				if (io_in->record)
					moat_record_write(io_in->record, 'i', buf, (size_t)k, NULL);
				moat__sink_put(&s.pty_in, buf, (size_t)k);
			} else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
				tty_in_open = false;
			}
		}
		if (i_ctl >= 0 && p[i_ctl].revents)
			handle_ctl(&s, ctl[0], &ctl_open);
		if (i_feed >= 0 && p[i_feed].revents) {
			if (p[i_feed].revents & POLLOUT && fed < io_in->stdin_len) {
				ssize_t k = write(stdin_feed, io_in->stdin_data + fed, io_in->stdin_len - fed);
				if (k > 0)
					fed += (size_t)k;
				else if (k < 0 && errno != EAGAIN && errno != EINTR)
					fed = io_in->stdin_len;
			}
			if (fed >= io_in->stdin_len || (p[i_feed].revents & (POLLERR | POLLHUP)))
				close(TAKE_FD(stdin_feed));
		}
		if (i_t >= 0 && p[i_t].revents)
			kill_sandbox(&s, MOAT_STATUS_TIMEOUT, "wall");
		if (i_lim >= 0 && p[i_lim].revents)
			check_limits(&s, lim);
		if (p[i_sig].revents)
			handle_signals(&s, sigfd, ctl[0], ctl_open, init_alive);
		if (s.grace_end_ns && init_alive && moat__now_ns() >= s.grace_end_ns)
			kill_sandbox(&s, MOAT_STATUS_SIGNALED, NULL);
		if (i_pid >= 0 && p[i_pid].revents) {
			/* Every process of the pid namespace is gone once the
			 * init's exit is visible here. Read what it last said. */
			while (ctl_open) {
				struct pollfd q = {.fd = ctl[0], .events = POLLIN};
				if (poll(&q, 1, 0) <= 0)
					break;
				handle_ctl(&s, ctl[0], &ctl_open);
			}
			int st;
			if (wait4((pid_t)pid, &st, 0, &ru) == (pid_t)pid) {
				init_alive = false;
				s.sandbox_gone = true;
			}
			r->wall_ms = (moat__now_ns() - t0) / 1000000;
		}
	}
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (init_alive) {
		moat__pidfd_send_signal(pidfd, SIGKILL);
		wait4((pid_t)pid, NULL, 0, &ru);
		r->wall_ms = (moat__now_ns() - t0) / 1000000;
	}
	close(pidfd);
	moat__netproxy_stop(s.netproxy, NULL);
	finish_result(&s, &ru);
	moat__limits_account(lim, &c->limits, r, s.killed);
	moat__out_enforced(c, r);
	/* Nothing of the run is left once its cgroup is gone: remove it
	 * before waiting on any consumer. */
	moat__limits_free(TAKE_PTR(lim));
	if (io_in->audit) {
		/* Every process of the run is gone: the trail's listener has hung
		 * up, and what the thread holds is written before session.stop. */
		moat_filetrail_stats st = {0};
		if (!s.session_logged)
			moat__audit_run_started(io_in->audit, c, iso, 0, s.trail != NULL);
		moat__filetrail_session_started(s.trail);
		moat__filetrail_stop(TAKE_PTR(s.trail), &st);
		moat__audit_run_finished(io_in->audit, c, r, &st);
	}
	close(outp[0]);
	close(errp[0]);
	close(ctl[0]);

	drain_sinks(&s, sigfd, drain_deadline(&s, t0));
	close_sinks(&s);
	r->output_dropped_bytes = s.out.dropped + s.err.dropped;

	/* Drop a SIGPIPE or interrupt that is still pending before restoring
	 * the caller's mask, so it does not kill us on the way out. */
	struct timespec zero = {0, 0};
	while (sigtimedwait(&mask, NULL, &zero) > 0)
		;
	restore_signals(&oldmask, &oldchld);

	if (c->out_dir && (!moat__out_capped(c) || r->status != MOAT_STATUS_SETUP_ERROR)) {
		moat_error serr = {0};
		int sr;
		if (!moat__out_capped(c))
			sr = moat__out_sanitize(c->out_dir, &r->out_removed, &r->out_fixed, &serr);
		else if (s.out_fs < 0)
			sr = moat_error_set(&serr, EIO, "the run's /out never reached moat; nothing was copied to --out %s",
					    c->out_dir);
		else
			sr = moat__out_copy_out(c, s.out_fs, &r->out_removed, &r->out_fixed, &serr);
		if (sr == 0) {
			r->out_checked = true;
		} else {
			/* Fail closed: output that could not be checked is never
			 * reported as a normal end. */
			moat_error_format(&serr, r->error, sizeof(r->error));
			r->status = MOAT_STATUS_SETUP_ERROR;
			r->exit_status = 125;
			s.setup_errno = serr.code == MOAT_EINPUT ? EINVAL : serr.code;
		}
	}

	/* The capped /out's last reference: its tmpfs goes with it. */
	if (s.out_fs >= 0)
		close(TAKE_FD(s.out_fs));

	if (r->status == MOAT_STATUS_SETUP_ERROR) {
		ret = moat_error_set(err, s.setup_errno ? s.setup_errno : EIO, "%s", r->error);
		/* The text already carries the reason. */
		err->code = MOAT_EINPUT;
		return ret;
	}
	return 0;

fail_fds:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (ctl[i] >= 0)
			close(ctl[i]);
	}
fail:
	close_sinks(&s);
	moat__limits_free(TAKE_PTR(lim));
	r->status = MOAT_STATUS_SETUP_ERROR;
	r->exit_status = 125;
	moat_error_format(err, r->error, sizeof(r->error));
	if (io_in->audit) {
		moat__audit_run_started(io_in->audit, c, &r->isolation, 0, false);
		moat__audit_run_finished(io_in->audit, c, r, NULL);
	}
	/* Last, once the cgroup is gone: a signal the caller sent meanwhile
	 * now takes its course. */
	if (signals_held)
		restore_signals(&oldmask, &oldchld);
	return ret;
}
