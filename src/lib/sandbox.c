/* The sequencer: what every sandbox shares to come up, and a run.
 *
 *   host side                                   init (pid 1 inside)
 *   ---------------------------------------     ------------------------------
 *   validate config, resolve host paths
 *   clone3(NEWUSER|NEWNS|NEWPID|NEWNET|...)  -> waits for GO
 *   write uid/gid maps, GO, join cgroup      -> identity, hostname, loopback,
 *                                               rootfs, pivot_root; serves
 *                                               SPAWN: fork, confine, execve
 *
 * moat__sandbox_prepare and moat__sandbox_boot are that start; the sandbox
 * object (sandbox-object.c) calls them and owns what they make. A run
 * (moat_sandbox_run, below) is a sandbox object that ends with its first
 * command: this file opens the command's stdin and output pipes, takes the
 * caller's signals into a signalfd, creates the object, spawns the command
 * and hands everything to the supervisor loop (supervise.c; the command's
 * terminal is tty.c). The poll loop is the only place the run waits:
 * every descriptor it writes is non-blocking behind a bounded buffer
 * (iobuf.h), so no consumer can hold a run past its limits or keep a
 * signal unanswered. On a limit the init is killed: the kernel then kills
 * every process of the pid namespace, daemons and double-forked
 * grandchildren included, before the init's exit is reported.
 *
 * Nothing in the spawn path sleeps, polls on a timer or runs a helper
 * program: the only processes are the init and the command. */
#include "sandbox.h"

#include "audit.h"
#include "secretstore.h"
#include "iobuf.h"
#include "sandbox-internal.h"
#include "supervise.h"
#include "hostpath.h"
#include "sweep.h"
#include "netproxy.h"
#include "syscalls.h"

#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

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
	if (!moat_net_uses_gateway(c->net))
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
int moat__sandbox_build_env(const moat_config *c, char ***ret)
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
	_cleanup_close_ int fd = moat__hostpath_open("filesystem.out:", c->out_dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "filesystem.out: %s", c->out_dir);
	if (st.st_uid == 0 && fchown(fd, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_GID) < 0)
		return moat_error_set(err, errno, "filesystem.out: %s: hand it to the sandbox user", c->out_dir);
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
		_cleanup_close_ int fd = moat__hostpath_open("filesystem.read_write:", b->src, O_PATH, 0, err);
		if (fd < 0 && (b->flags & MOAT_BIND_OPTIONAL) && err->code == ENOENT) {
			moat_error_clear(err);
			continue;
		}
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "filesystem.read_write: %s", b->src);
		bool w = (st.st_uid == MOAT_ROOT_HOST_UID && (st.st_mode & S_IWUSR)) ||
			 (st.st_gid == MOAT_ROOT_HOST_GID && (st.st_mode & S_IWGRP)) || (st.st_mode & S_IWOTH);
		if (!w)
			return moat_error_set(err, MOAT_EINPUT,
					      "filesystem.read_write: %s: not writable by the sandbox user (host uid %u) that moat uses "
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
	_cleanup_close_ int src = moat__hostpath_open("stdin:", path, O_RDONLY | O_NONBLOCK, 0, err);
	if (src < 0)
		return src;
	struct stat st;
	if (fstat(src, &st) < 0)
		return moat_error_set(err, errno, "stdin: %s", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT,
				      "stdin: %s: not a regular file (pipe it into moat's standard input instead)", path);
	if ((uint64_t)st.st_size > MOAT_MAX_STDIN_FILE_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "stdin: %s: larger than %llu bytes", path,
				      (unsigned long long)MOAT_MAX_STDIN_FILE_BYTES);
	_cleanup_close_ int mfd = memfd_create("moat-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return moat_error_set(err, errno, "stdin: %s: copy", path);
	char buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "stdin: %s", path);
		if (n == 0)
			break;
		/* The file may grow while it is read; the cap holds anyway. */
		total += (uint64_t)n;
		if (total > MOAT_MAX_STDIN_FILE_BYTES)
			return moat_error_set(err, MOAT_EINPUT, "stdin: %s: larger than %llu bytes", path,
					      (unsigned long long)MOAT_MAX_STDIN_FILE_BYTES);
		int r = moat__write_all(mfd, buf, (size_t)n);
		if (r < 0)
			return moat_error_set(err, -r, "stdin: %s: copy", path);
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(mfd, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "stdin: %s: seal the copy", path);
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
	if (io->stdin_inherit && !isatty(STDIN_FILENO) && fcntl(STDIN_FILENO, F_GETFD) >= 0) {
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

/* The joined sandbox's init zeroed its user namespace's namespace limits
 * once set up (userns.c), and the new init's clone and its root's build
 * make namespaces charged there: the go-between, with every capability in
 * that namespace, lets it have some again. The new init zeroes them once
 * more when its root is built, as every init does; meanwhile no process of
 * the other sandbox can make a namespace anyway (no capability, seccomp). */
static int allow_namespaces(uint64_t flags)
{
	static const struct {
		uint64_t flag;
		const char *name;
	} kinds[] = {
		{CLONE_NEWNS, "max_mnt_namespaces"},       {CLONE_NEWPID, "max_pid_namespaces"},
		{CLONE_NEWCGROUP, "max_cgroup_namespaces"}, {CLONE_NEWNET, "max_net_namespaces"},
		{CLONE_NEWIPC, "max_ipc_namespaces"},       {CLONE_NEWUTS, "max_uts_namespaces"},
	};
	/* Opened after setns: /proc/sys/user is the opener's namespace's. */
	_cleanup_close_ int dfd = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
		if (!(flags & kinds[i].flag))
			continue;
		int r = moat__write_string_at(dfd, kinds[i].name, "64");
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

/* The init of a sandbox that joins another's namespaces (sandbox.h): a
 * go-between process enters that sandbox's user namespace and the ones
 * given, then clones the init with CLONE_PARENT, so that the init is our
 * child as any other (no exit signal, reaped through its pidfd) while its
 * credentials and namespaces are the joined ones. The go-between sends
 * back the init's pid and pidfd (or the errno) and ends. Returns as
 * clone3 does: 0 in the init, its pid here, -1 with errno. */
static long clone_joined(struct clone_args *ca, const moat_sandbox_join *j, int *ret_pidfd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	struct clone_args mid = {.exit_signal = 0};
	long m = moat__clone3(&mid);
	if (m < 0) {
		int e = errno;
		close(sv[0]), close(sv[1]);
		errno = e;
		return -1;
	}
	if (m == 0) {
		close(sv[0]);
		long r[2] = {0, 0};
		int pidfd = -1;
		/* A pod's network namespace first: entering another user
		 * namespace gives up the runtime's privilege over it. */
		if ((j->net_foreign && setns(j->netns_fd, CLONE_NEWNET) < 0) ||
		    (j->userns_fd >= 0 && setns(j->userns_fd, CLONE_NEWUSER) < 0) ||
		    (!j->net_foreign && j->netns_fd >= 0 && setns(j->netns_fd, CLONE_NEWNET) < 0) ||
		    (j->ipcns_fd >= 0 && setns(j->ipcns_fd, CLONE_NEWIPC) < 0) ||
		    (j->utsns_fd >= 0 && setns(j->utsns_fd, CLONE_NEWUTS) < 0)) {
			r[1] = errno;
		} else if (j->userns_fd >= 0 && (r[1] = -allow_namespaces(ca->flags)) != 0) {
			/* r[1] says why. */
		} else {
			ca->flags |= CLONE_PARENT;
			ca->pidfd = (uint64_t)(uintptr_t)&pidfd;
			long pid = moat__clone3(ca);
			if (pid == 0) {
				close(sv[1]);
				return 0;
			}
			r[0] = pid;
			r[1] = pid < 0 ? errno : 0;
		}
		char cbuf[CMSG_SPACE(sizeof(int))] = {0};
		struct iovec iov = {.iov_base = r, .iov_len = sizeof(r)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		if (pidfd >= 0) {
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof(cbuf);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pidfd, sizeof(int));
		}
		_exit(sendmsg(sv[1], &mh, 0) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(sv[1]);
	long r[2] = {0, EIO};
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = r, .iov_len = sizeof(r)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n;
	do
		n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	close(sv[0]);
	while (waitpid((pid_t)m, NULL, __WALL) < 0 && errno == EINTR)
		;
	struct cmsghdr *cm = n == (ssize_t)sizeof(r) ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(ret_pidfd, CMSG_DATA(cm), sizeof(int));
	if (n != (ssize_t)sizeof(r) || r[0] <= 0 || *ret_pidfd < 0) {
		if (*ret_pidfd >= 0)
			close(*ret_pidfd), *ret_pidfd = -1;
		errno = n == (ssize_t)sizeof(r) && r[1] ? (int)r[1] : EIO;
		return -1;
	}
	return r[0];
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

static void restore_signals(const sigset_t *oldmask, const struct sigaction *oldchld)
{
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	sigaction(SIGCHLD, oldchld, NULL);
}

static int pipe_pair(int *ret_read, int *ret_write)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	*ret_read = p[0];
	*ret_write = p[1];
	return 0;
}

static int socket_pair(int *ret_ours, int *ret_init)
{
	int p[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
		return -errno;
	*ret_ours = p[0];
	*ret_init = p[1];
	return 0;
}

int moat__sandbox_prepare(const moat_config *c, const struct moat_gateway_config *gateway, moat_isolation *iso,
			  moat_error *err)
{
	int ret = moat_config_validate(c, err);
	if (ret < 0)
		return ret;
	if (moat_net_uses_gateway(c->net) && !gateway)
		return moat_error_set(err, EINVAL, "network proxy mode without a gateway configuration");

	bool rootless = !moat__userns_host_root();
	iso->rootless = rootless;
	iso->host_uid = rootless ? geteuid() : MOAT_ROOT_HOST_UID;
	iso->host_gid = rootless ? getegid() : MOAT_ROOT_HOST_GID;
	iso->uid = c->sandbox_uid;
	iso->gid = c->sandbox_gid;

	/* What a killed moat of this user left (sweep.h); its cgroups go when
	 * ours is made. */
	(void)moat__sweep_stages(NULL);

	ret = check_rw_sources(c, rootless, err);
	if (ret < 0)
		return ret;
	return prepare_out_dir(c, rootless, err);
}

/* The init starts with nothing of its caller's but the control socket:
 * a caller's descriptors (a server's other sandboxes, its logs, its
 * terminal) would otherwise live on in pid 1 of this sandbox. */
static void init_drop_inherited_fds(int keep)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (fd != keep && null >= 0 && null != fd)
			dup2(null, fd);
	/* keep may be below 3 when the caller runs with a standard stream
	 * closed: it stays, the others are /dev/null. */
	if (keep > 3)
		moat__close_range(3, (unsigned)keep - 1, 0);
	moat__close_range(keep >= 3 ? (unsigned)keep + 1 : 3, ~0U, 0);
}

int moat__sandbox_boot(moat_boot *b, moat_error *err)
{
	const moat_config *c = b->c;
	moat_isolation *iso = b->iso;
	_cleanup_(host_srcs_freep) moat_host_srcs *srcs = calloc(1, sizeof(*srcs));
	_cleanup_close_ int ctl = -1, ctl_init = -1;
	b->ctl = b->pidfd = -1;
	b->pid = 0;
	int ret = srcs ? moat__rootfs_resolve_sources(c, srcs, err) : moat_error_set(err, ENOMEM, "host paths");
	if (ret < 0)
		return ret;
	if ((ret = socket_pair(&ctl, &ctl_init)) < 0)
		return moat_error_set(err, ret, "control socket");

	moat_init_args ia = {
		.config = c,
		.ctl_fd = ctl_init,
		.ends_with_first = b->ends_with_first,
		.say_ready = b->say_ready,
		.rootless = iso->rootless,
		.cwd = c->cwd ? c->cwd : (c->out_dir ? "/out" : "/tmp"),
		.out_bound = c->out_dir != NULL,
		.wait_cgroup = moat__limits_attach_pending(b->lim),
		.file_trail = b->file_trail,
		.host_srcs = srcs,
	};
	moat__limits_rlimit_plan(b->lim, &ia.rlimits);
	ia.n_cgroup_mounts = moat__limits_cgroup_mounts(b->lim, ia.cgroup_mounts);

	int pidfd = -1;
	struct clone_args ca = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
			 CLONE_NEWCGROUP | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		/* No exit signal: the caller's SIGCHLD handler never sees
		 * the init, and a caller that ignores SIGCHLD cannot have the
		 * kernel reap it behind our back (sandbox-object.c). */
		.exit_signal = 0,
	};
	b->t0 = moat__now_ns();
	long pid;
	if (b->join) {
		if (b->join->userns_fd >= 0)
			ca.flags &= ~(uint64_t)CLONE_NEWUSER;
		if (b->join->netns_fd >= 0)
			ca.flags &= ~(uint64_t)CLONE_NEWNET;
		if (b->join->ipcns_fd >= 0)
			ca.flags &= ~(uint64_t)CLONE_NEWIPC;
		if (b->join->utsns_fd >= 0)
			ca.flags &= ~(uint64_t)CLONE_NEWUTS;
		ia.uts_joined = b->join->utsns_fd >= 0;
		ia.net_joined = b->join->netns_fd >= 0;
		/* Not into the cgroup at clone time: the go-between may be in
		 * another user namespace; the cgroup is joined below. */
		pid = clone_joined(&ca, b->join, &pidfd);
	} else {
		pid = clone_into_cgroup(&ca, b->lim);
	}
	if (pid < 0)
		return moat_error_set(err, errno, "create the sandbox's namespaces (clone3)");
	if (pid == 0) {
		init_drop_inherited_fds(ctl_init);
		moat__init_main(&ia);
	}
	iso->userns = iso->mountns = iso->pidns = iso->netns = iso->ipcns = iso->utsns = iso->cgroupns = true;
	/* A run whose transparent egress cannot be set up fails in the init
	 * (netnat.h): a sandbox that gets this far has the mode it asked for. */
	snprintf(iso->egress, sizeof(iso->egress), "%s",
		 b->c->net == MOAT_NET_TRANSPARENT ? "transparent"
		 : b->c->net == MOAT_NET_PROXY     ? "proxy"
		 : b->c->net == MOAT_NET_POD       ? "pod"
						   : "none");
	close(TAKE_FD(ctl_init));
	b->pidfd = pidfd;
	b->pid = (pid_t)pid;
	if (b->keep_ns_fds) {
		/* Before GO: the init is as its clone made it (dumpable). */
		static const char *const names[] = {"user", "net", "ipc", "uts"};
		for (size_t i = 0; i < ELEMENTSOF(names); i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%ld/ns/%s", pid, names[i]);
			b->keep_ns_fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		}
	}

	/* Secret values reach ordinary memory only now that the init, a copy
	 * of this process, exists (secretstore.h). */
	ret = b->secrets ? moat_secrets_arm(b->secrets, b->audit, err) : 0;
	if (ret >= 0 && b->after_clone)
		ret = b->after_clone(b->after_clone_arg, err);
	/* A joined user namespace has its maps already. */
	if (ret >= 0 && (!b->join || b->join->userns_fd < 0))
		ret = moat__userns_write_maps((pid_t)pid, iso->rootless, iso->uid, iso->gid, iso->host_uid, iso->host_gid,
					      err);
	if (ret >= 0) {
		/* As for CGROUP_JOINED: an init already gone is reported by
		 * the loop with what it said, not as a broken pipe here. */
		int e = moat__ctl_send(ctl, MOAT_CTL_GO, MOAT_CTL_VERSION, 0, NULL);
		if (e < 0 && e != -EPIPE && e != -ECONNRESET)
			ret = moat_error_set(err, -e, "start the sandbox");
	}
	if (ret >= 0)
		ret = join_cgroup(b->lim, ctl, (pid_t)pid, ca.flags & CLONE_INTO_CGROUP, ia.wait_cgroup, err);
	b->ctl = TAKE_FD(ctl);
	return ret;
}

int moat__sandbox_out_finish(const moat_config *c, int out_fs, moat_result *r, int *ret_errno)
{
	moat_error serr = {0};
	int sr;
	if (!moat__out_capped(c))
		sr = moat__out_sanitize(c->out_dir, &r->out_removed, &r->out_fixed, &serr);
	else if (out_fs < 0)
		sr = moat_error_set(&serr, EIO, "the run's /out never reached moat; nothing was copied to filesystem.out %s",
				    c->out_dir);
	else
		sr = moat__out_copy_out(c, out_fs, &r->out_removed, &r->out_fixed, &serr);
	if (sr == 0) {
		r->out_checked = true;
		return 0;
	}
	/* Fail closed: output that could not be checked is never reported
	 * as a normal end. */
	moat_error_format(&serr, r->error, sizeof(r->error));
	r->status = MOAT_STATUS_SETUP_ERROR;
	r->exit_status = 125;
	*ret_errno = serr.code;
	return sr;
}

/* A run's audit when no sandbox could be made to write it. */
static void audit_failed_run(const moat_config *c, const moat_run_io *io, moat_result *r)
{
	if (!io->audit)
		return;
	moat__audit_run_started(io->audit, c, &r->isolation, 0, false);
	moat__audit_run_finished(io->audit, c, r, NULL);
}

/* A run is a sandbox object that ends with its first command: create, spawn
 * that command with the output pipes, the supervisor loop until the
 * sandbox is destroyed. What the object leaves to its caller, the run does
 * here: the caller's signals, its stdin and terminal, the output's counts
 * and cap. */
int moat_sandbox_run(const moat_config *c, const moat_run_io *io_in, moat_result *r, moat_error *err)
{
	moat_run_io io_default;
	if (!io_in) {
		moat_run_io_init(&io_default);
		io_in = &io_default;
	}
	moat_result_init(r);
	_cleanup_close_ int stdin_child = -1, stdin_feed = -1, sigfd = -1;
	_cleanup_close_ int out_r = -1, out_w = -1, err_r = -1, err_w = -1;
	moat_super s;
	moat__super_init(&s, c, io_in, r);
	s.t0 = moat__now_ns();
	sigset_t mask, oldmask;
	struct sigaction oldchld;
	int ret;

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
	/* The sandbox object reaps its init itself (it has no exit signal);
	 * SIGCHLD is at its default for the run's length all the same, as
	 * callers have always found it. */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, &oldchld);

	if (moat__sink_open(&s.out, io_in->forward_stdout_fd, false) < 0 ||
	    moat__sink_open(&s.err, io_in->forward_stderr_fd, false) < 0) {
		ret = moat_error_set(err, ENOMEM, "output buffers");
		goto fail;
	}
	ret = open_stdin(c, io_in, &stdin_child, &stdin_feed, err);
	if (ret < 0)
		goto fail;
	bool direct = io_in->stdout_direct;
	if (direct) {
		/* Only a pipe's end crosses into the sandbox: never a
		 * terminal (TIOCSTI, as for stdin above), a host file it
		 * could then write anywhere in, nor a socket it could pass
		 * descriptors or credentials over. */
		struct stat st;
		if (c->tty) {
			ret = moat_error_set(err, MOAT_EINPUT, "the command's stdout cannot be both a terminal and given directly");
			goto fail;
		}
		if (fstat(io_in->stdout_direct_fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
			ret = moat_error_set(err, MOAT_EINPUT, "a stdout given directly must be a pipe");
			goto fail;
		}
		if ((out_w = fcntl(io_in->stdout_direct_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
			ret = moat_error_set(err, errno, "duplicate stdout");
			goto fail;
		}
	}
	/* With a terminal the command's three streams are the terminal the
	 * sandbox makes for it: no pipes, and no stdin but what is typed. */
	if (c->tty) {
		close(TAKE_FD(stdin_child));
		close(TAKE_FD(stdin_feed));
	} else if ((!direct && (ret = pipe_pair(&out_r, &out_w)) < 0) || (ret = pipe_pair(&err_r, &err_w)) < 0) {
		ret = moat_error_set(err, ret, "pipes");
		goto fail;
	}
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		ret = moat_error_set(err, errno, "signalfd");
		goto fail;
	}

	moat_sandbox_opts o;
	moat_sandbox_opts_init(&o);
	o.ends_with_first_command = true;
	o.audit = io_in->audit;
	o.gateway = io_in->gateway;
	o.secrets = io_in->secrets;
	o.after_clone = io_in->after_clone;
	o.after_clone_arg = io_in->after_clone_arg;
	/* The object writes the audit of a run it could not make. */
	ret = moat_sandbox_create(c, &o, &s.sb, err);
	if (ret < 0) {
		moat_error_format(err, r->error, sizeof(r->error));
		goto out;
	}
	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = c->argv;
	spec.tty = c->tty;
	if (c->tty)
		moat__tty_caller_size(&spec.tty_rows, &spec.tty_cols);
	if (!c->tty) {
		spec.stdin_fd = stdin_child;
		spec.stdout_fd = out_w;
		spec.stderr_fd = err_w;
	}
	moat_command cmd;
	ret = moat_sandbox_spawn(s.sb, &spec, &cmd, err);
	/* Our copies go, so the loop sees end-of-file when the sandbox's last
	 * one closes. */
	close(TAKE_FD(out_w));
	close(TAKE_FD(err_w));
	close(TAKE_FD(stdin_child));
	if (ret < 0) {
		/* Refused before it ran (a confinement that fails is a setup
		 * error the loop reports, not a refusal). */
		moat_sandbox_destroy(TAKE_PTR(s.sb), r, NULL);
		r->status = MOAT_STATUS_SETUP_ERROR;
		r->exit_status = 125;
		moat_error_format(err, r->error, sizeof(r->error));
		goto out;
	}
	s.id = cmd.id;
	if (cmd.pty_fd >= 0 && !moat__tty_attach(&s.tty, cmd.pty_fd))
		close(cmd.pty_fd);
	s.out_fd = TAKE_FD(out_r);
	s.err_fd = TAKE_FD(err_r);
	s.stdin_feed = TAKE_FD(stdin_feed);
	s.sig_fd = sigfd;
	/* A stdout handed over directly is read by the caller alone: moat
	 * has no count of it to give. */
	r->stdout_uncounted = direct;
	moat__supervise(&s);
	/* Drop a SIGPIPE or interrupt that is still pending before restoring
	 * the caller's mask, so it does not kill us on the way out. */
	struct timespec zero = {0, 0};
	while (sigtimedwait(&mask, NULL, &zero) > 0)
		;
	ret = 0;
	if (s.destroy_rc < 0 || r->status == MOAT_STATUS_SETUP_ERROR) {
		/* The text already carries the reason; the code stays for
		 * callers that act on it. */
		int code = s.destroy_rc < 0 ? s.destroy_err.code : 0;
		ret = moat_error_set_said(err, code ? code : EIO, "%s", r->error);
	}
	goto out;

fail:
	r->status = MOAT_STATUS_SETUP_ERROR;
	r->exit_status = 125;
	moat_error_format(err, r->error, sizeof(r->error));
	audit_failed_run(c, io_in, r);
out:
	moat__super_close(&s);
	/* Last, once the cgroup is gone: after a failure, a signal the caller
	 * sent meanwhile now takes its course. */
	restore_signals(&oldmask, &oldchld);
	return ret;
}
