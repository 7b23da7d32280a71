/* The client side of a keeper (keeper.h): starting one, and a blocking
 * connection to one; and the socket I/O both sides share. */
#include "keeper.h"

#include "syscalls.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

/* ---- one message on the wire ---- */

int moat__keeper_send(int fd, const moat_keeper_msg *m, const int *fds, size_t n_fds, moat_error *err)
{
	_cleanup_free_ char *s = NULL;
	int r = moat__keeper_encode(m, &s, err);
	if (r < 0)
		return r;
	if (n_fds > 3)
		return moat_error_set(err, EINVAL, "%s: at most 3 descriptors ride along",
				      moat_keeper_msg_type_to_string(m->type));
	struct iovec iov = {.iov_base = s, .iov_len = strlen(s)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n_fds > 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	for (;;) {
		if (sendmsg(fd, &msg, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			return moat_error_errno(err, errno, "keeper socket: send %s",
						moat_keeper_msg_type_to_string(m->type));
	}
}

int moat__keeper_recv(int fd, moat_keeper_msg *m, int *fds, size_t max, size_t *ret_n, moat_error *err)
{
	*ret_n = 0;
	_cleanup_free_ char *buf = malloc(MOAT_KEEPER_MAX_MSG + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "out of memory");
	struct iovec iov = {.iov_base = buf, .iov_len = MOAT_KEEPER_MAX_MSG + 1};
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n;
	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : moat_error_errno(err, errno, "keeper socket: receive");
	/* Descriptors first, so that none leaks whatever the message holds. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int got[8];
		memcpy(got, CMSG_DATA(c), k * sizeof(int));
		for (size_t i = 0; i < k; i++) {
			if (*ret_n < max)
				fds[(*ret_n)++] = got[i];
			else
				close(got[i]);
		}
	}
	if (n == 0)
		return moat_error_set(err, EPIPE, "keeper socket: closed");
	int r = 0;
	if (msg.msg_flags & MSG_CTRUNC)
		r = moat_error_set(err, E2BIG, "message: more descriptors than 3 came along");
	else if (msg.msg_flags & MSG_TRUNC || (size_t)n > MOAT_KEEPER_MAX_MSG)
		r = moat_error_set(err, E2BIG, "message: larger than %d bytes", MOAT_KEEPER_MAX_MSG);
	else
		r = moat__keeper_decode(buf, (size_t)n, m, err);
	if (r < 0) {
		for (size_t i = 0; i < *ret_n; i++)
			close(fds[i]);
		*ret_n = 0;
	}
	return r;
}

/* ---- starting a keeper ---- */

/* Hands the keeper its policy on the socket and ends that direction. A
 * keeper gone already is not an error here: its report says why. */
static void send_policy(int fd, const char *policy_yaml)
{
	size_t len = strlen(policy_yaml);
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, policy_yaml + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		off += (size_t)n;
	}
	(void)shutdown(fd, SHUT_WR);
}

/* In the forked child: only async-signal-safe calls until execve, since the
 * caller may have threads (a daemon). */
_noreturn_ static void exec_keeper(int setup, int devnull, const char *exe, char *const *argv, char *const *envp)
{
	/* Its own session: no controlling terminal, no signal of the
	 * creator's terminal or process group. Then a second fork, so that
	 * the keeper is nobody's child but the system's reaper, like any
	 * daemon. */
	if (setsid() < 0)
		_exit(1);
	pid_t pid = fork();
	if (pid != 0)
		_exit(pid < 0 ? 1 : 0);
	int s = fcntl(setup, F_DUPFD, 10), n = fcntl(devnull, F_DUPFD, 10);
	if (s < 0 || n < 0 || dup2(n, 0) < 0 || dup2(n, 1) < 0 || dup2(n, 2) < 0 || dup2(s, 3) < 0)
		_exit(1);
	/* Nothing else of the creator's crosses: not a descriptor (inherited
	 * without O_CLOEXEC or not), not a blocked or ignored signal. */
	if (moat__close_range(4, ~0U, 0) < 0)
		for (int fd = 4; fd < 65536; fd++)
			(void)close(fd);
	sigset_t none;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &dfl, NULL);
	if (chdir("/") < 0)
		_exit(1);
	execve(exe, argv, envp);
	_exit(127);
}

static int read_ready(int fd, moat_keeper_info *ret, moat_error *err)
{
	char buf[MOAT_KEEPER_READY_MAX];
	size_t len = 0;
	while (len < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_errno(err, errno, "keeper: read its setup report");
		if (n == 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	return moat_keeper_ready_parse(buf, len, ret, err);
}

int moat_keeper_ready_parse(const char *buf, size_t len, moat_keeper_info *ret, moat_error *err)
{
	const char *nl = memchr(buf, '\n', len);
	if (!nl)
		return moat_error_set(err, EPIPE, "keeper: ended before it said it was ready");
	json_error_t je;
	json_t *o = json_loadb(buf, (size_t)(nl - buf), 0, &je);
	int ready = 0, code = 0, pid = 0;
	const char *msg = NULL, *id = NULL, *sock = NULL;
	int r;
	if (!o || json_unpack(o, "{s:b}", "ready", &ready) < 0)
		r = moat_error_set(err, EPROTO, "keeper: its setup report is not one moat writes");
	else if (!ready) {
		if (json_unpack(o, "{s:i, s:s}", "errno", &code, "error", &msg) < 0)
			r = moat_error_set(err, EPROTO, "keeper: its setup report is not one moat writes");
		else
			r = moat_error_set_said(err, code > 0 ? code : EIO, "%s", msg);
	} else if (json_unpack(o, "{s:s, s:i, s:s}", "sandbox", &id, "pid", &pid, "socket", &sock) < 0 ||
		   !moat__keeper_id_valid(id) || pid <= 0 || strlen(sock) >= sizeof(ret->socket))
		r = moat_error_set(err, EPROTO, "keeper: its setup report is not one moat writes");
	else {
		snprintf(ret->id, sizeof(ret->id), "%s", id);
		ret->pid = pid;
		snprintf(ret->socket, sizeof(ret->socket), "%s", sock);
		r = 0;
	}
	json_decref(o);
	return r;
}

int moat_keeper_start(const char *policy_yaml, const moat_keeper_start_opts *opts, moat_keeper_info *ret,
		      moat_error *err)
{
	const char *exe = opts && opts->exe ? opts->exe : "/proc/self/exe";
	static char *const empty_env[] = {NULL};
	char *const *envp = opts && opts->envp ? opts->envp : empty_env;
	char *argv[] = {(char *)exe, "__keeper", NULL};
	if (access(exe, X_OK) < 0)
		return moat_error_errno(err, errno, "keeper: %s", exe);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return moat_error_errno(err, errno, "keeper: make its setup channel");
	_cleanup_close_ int mine = sp[0], theirs = sp[1];
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return moat_error_errno(err, errno, "keeper: open /dev/null");
	pid_t pid = fork();
	if (pid < 0)
		return moat_error_errno(err, errno, "keeper: fork");
	if (pid == 0)
		exec_keeper(theirs, devnull, exe, argv, envp);
	close(TAKE_FD(theirs));
	/* The first child only forks the keeper and exits; a caller that
	 * ignores SIGCHLD or reaps on its own makes this fail, harmlessly. */
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	send_policy(mine, policy_yaml);
	return read_ready(mine, ret, err);
}

int moat_keeper_spawn_process(const char *policy_yaml, const moat_keeper_start_opts *opts, pid_t *ret_pid,
			      int *ret_fd, moat_error *err)
{
	const char *exe = opts && opts->exe ? opts->exe : "/proc/self/exe";
	static char *const empty_env[] = {NULL};
	char *const *envp = opts && opts->envp ? opts->envp : empty_env;
	char *argv[] = {(char *)exe, "__keeper", NULL};
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return moat_error_errno(err, errno, "keeper: make its setup channel");
	_cleanup_close_ int mine = sp[0], theirs = sp[1];
	/* What exec_keeper does by hand, done by posix_spawn, which starts
	 * the child in the caller's memory (CLONE_VM|CLONE_VFORK) instead of
	 * a copy of it: a fork of a daemon copies its page tables and then
	 * every page either side writes, the largest part of a pooled
	 * sandbox's making. Nothing of the caller's crosses the exec but
	 * the setup channel (fd 3) and /dev/null: descriptors from 4 up are
	 * closed, every signal is default and unblocked, and the keeper has
	 * a session of its own. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return moat_error_set(err, ENOMEM, "keeper: spawn");
	if (posix_spawnattr_init(&at) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return moat_error_set(err, ENOMEM, "keeper: spawn");
	}
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	int r = 0;
	if ((r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0)) != 0 ||
	    (r = posix_spawn_file_actions_adddup2(&fa, 0, 1)) != 0 ||
	    (r = posix_spawn_file_actions_adddup2(&fa, 0, 2)) != 0 ||
	    (r = posix_spawn_file_actions_adddup2(&fa, theirs, 3)) != 0 ||
	    (r = posix_spawn_file_actions_addclosefrom_np(&fa, 4)) != 0 ||
	    (r = posix_spawn_file_actions_addchdir_np(&fa, "/")) != 0 ||
	    (r = posix_spawnattr_setsigdefault(&at, &all)) != 0 || (r = posix_spawnattr_setsigmask(&at, &none)) != 0 ||
	    (r = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) !=
		    0)
		r = moat_error_set(err, r, "keeper: spawn");
	pid_t pid = 0;
	if (r == 0 && (r = posix_spawn(&pid, exe, &fa, &at, argv, envp)) != 0)
		r = moat_error_errno(err, r, "keeper: %s", exe);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r < 0)
		return r;
	close(TAKE_FD(theirs));
	/* The keeper reads the whole policy before it does anything else,
	 * so this write does not wait on anything but the keeper's start. */
	send_policy(mine, policy_yaml);
	*ret_pid = pid;
	*ret_fd = TAKE_FD(mine);
	return 0;
}

/* ---- a connection ---- */

struct moat_keeper {
	int fd;
	uint64_t tag;
	unsigned version;
	char id[MOAT_KEEPER_ID_LEN];
	pid_t pid;
	unsigned timeout_s; /* each call's bound (0: none) */
};

const char *moat_keeper_sandbox_id(const moat_keeper *k) { return k->id; }
pid_t moat_keeper_pid(const moat_keeper *k) { return k->pid; }

void moat_keeper_close(moat_keeper *k)
{
	if (!k)
		return;
	if (k->fd >= 0)
		close(k->fd);
	free(k);
}

/* The socket's send and receive timeouts (0: none). */
static int set_timeouts(int fd, unsigned seconds)
{
	struct timeval tv = {.tv_sec = (time_t)seconds};
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* A send or receive that ran out of its timeout (a blocking socket says
 * EAGAIN): ETIMEDOUT in words; any other result unchanged. */
static int timed_out(int r, unsigned seconds, const char *what, moat_error *err)
{
	if (r != -EAGAIN && r != -EWOULDBLOCK)
		return r;
	return moat_error_set(err, ETIMEDOUT, "keeper: no answer to %s within %u s", what, seconds);
}

int moat_keeper_set_timeout(moat_keeper *k, unsigned seconds, moat_error *err)
{
	int r = set_timeouts(k->fd, seconds);
	if (r < 0)
		return moat_error_errno(err, -r, "keeper socket: set its timeout");
	k->timeout_s = seconds;
	return 0;
}

/* Sends req and receives the answer with its tag into *ans (an error
 * answer becomes the return value, its message in err). */
static int call(moat_keeper *k, moat_keeper_msg *req, const int *fds, size_t n_fds, moat_keeper_msg *ans,
		int *ret_fd, moat_error *err)
{
	req->tag = ++k->tag;
	const char *what = moat_keeper_msg_type_to_string(req->type);
	int r = moat__keeper_send(k->fd, req, fds, n_fds, err);
	if (r < 0)
		return timed_out(r, k->timeout_s, what, err);
	for (;;) {
		int got[3];
		size_t n = 0;
		moat_keeper_msg_init(ans, _MOAT_KEEPER_MSG_INVALID);
		r = moat__keeper_recv(k->fd, ans, got, 3, &n, err);
		if (r < 0) {
			moat_keeper_msg_done(ans);
			if (r == -EAGAIN || r == -EWOULDBLOCK)
				return timed_out(r, k->timeout_s, what, err);
			return moat_error_wrap(err, "keeper");
		}
		if (ans->tag != req->tag && ans->type != MOAT_KEEPER_ERROR) {
			/* Not ours (a sync client has one request open at a
			 * time, so this is only a late answer): dropped. */
			for (size_t i = 0; i < n; i++)
				close(got[i]);
			moat_keeper_msg_done(ans);
			continue;
		}
		if (ans->type == MOAT_KEEPER_ERROR) {
			for (size_t i = 0; i < n; i++)
				close(got[i]);
			r = moat_error_set_said(err, ans->error_errno ? ans->error_errno : EIO, "keeper: %s",
						ans->message ? ans->message : "error");
			moat_keeper_msg_done(ans);
			return r;
		}
		for (size_t i = 0; i < n; i++) {
			if (ret_fd && i == 0)
				*ret_fd = got[i];
			else
				close(got[i]);
		}
		return 0;
	}
}

int moat_keeper_connect(const char *path, moat_keeper **ret, moat_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return moat_error_set(err, ENAMETOOLONG, "keeper socket %s: path too long", path);
	memcpy(sa.sun_path, path, strlen(path));
	moat_keeper *k = calloc(1, sizeof(*k));
	if (!k)
		return moat_error_set(err, ENOMEM, "out of memory");
	k->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	/* Bounded, so that a stopped keeper (its listen queue full, or its
	 * hello never sent) cannot hold the caller forever. */
	int e = k->fd < 0 ? errno : -set_timeouts(k->fd, MOAT_KEEPER_HELLO_TIMEOUT_S);
	if (e == 0 && connect(k->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		e = errno;
	if (e == EAGAIN || e == EWOULDBLOCK) {
		moat_keeper_close(k);
		return moat_error_set(err, ETIMEDOUT, "keeper socket %s: not taken within %d s", path,
				      MOAT_KEEPER_HELLO_TIMEOUT_S);
	}
	if (e) {
		moat_keeper_close(k);
		return moat_error_errno(err, e, "keeper socket %s: connect", path);
	}
	moat_keeper_msg h, a;
	moat_keeper_msg_init(&h, MOAT_KEEPER_HELLO);
	for (unsigned v = MOAT_KEEPER_PROTO_MIN; v <= MOAT_KEEPER_PROTO_MAX; v++)
		h.versions[h.n_versions++] = v;
	int r = moat__keeper_send(k->fd, &h, NULL, 0, err);
	/* A keeper that refuses the connection (at its cap) sends one error
	 * and closes at once: the hello may find the door shut (EPIPE), and
	 * a hello it left unread makes the first receive a reset. The error
	 * still waits in the socket behind either, and says why. */
	if (r >= 0 || r == -EPIPE || r == -ECONNRESET) {
		int got[3];
		size_t n = 0;
		moat_keeper_msg_init(&a, _MOAT_KEEPER_MSG_INVALID);
		int s = r;
		r = moat__keeper_recv(k->fd, &a, got, 3, &n, err);
		if (r == -ECONNRESET) {
			moat_keeper_msg_done(&a);
			moat_keeper_msg_init(&a, _MOAT_KEEPER_MSG_INVALID);
			r = moat__keeper_recv(k->fd, &a, got, 3, &n, err);
		}
		/* Nothing behind a failed hello: its own error is the one. */
		if (s < 0 && (r < 0 || a.type != MOAT_KEEPER_ERROR))
			r = moat_error_set(err, -s, "keeper socket %s: closed at its hello", path);
		for (size_t i = 0; i < n; i++)
			close(got[i]);
		if (r == -EAGAIN || r == -EWOULDBLOCK)
			r = moat_error_set(err, ETIMEDOUT, "keeper socket %s: no hello within %d s", path,
					   MOAT_KEEPER_HELLO_TIMEOUT_S);
		else if (r >= 0 && a.type == MOAT_KEEPER_ERROR)
			r = moat_error_set_said(err, a.error_errno ? a.error_errno : EPROTO, "keeper: %s",
						a.message ? a.message : "error");
		else if (r >= 0 && (a.type != MOAT_KEEPER_HELLO || a.n_versions))
			r = moat_error_set(err, EPROTO, "keeper: answered hello with %s",
					   moat_keeper_msg_type_to_string(a.type));
		else if (r >= 0) {
			k->version = a.version;
			k->pid = a.pid;
			snprintf(k->id, sizeof(k->id), "%s", a.sandbox);
			/* Past the hello, a call waits as long as its command
			 * (a wait on a long run), unless the caller bounds it. */
			if (set_timeouts(k->fd, 0) < 0)
				r = moat_error_errno(err, errno, "keeper socket %s: clear its timeout", path);
		}
		moat_keeper_msg_done(&a);
	} else
		r = timed_out(r, (unsigned)MOAT_KEEPER_HELLO_TIMEOUT_S, "hello", err);
	if (r < 0) {
		moat_keeper_close(k);
		return r;
	}
	*ret = k;
	return 0;
}

int moat_keeper_spawn(moat_keeper *k, const moat_spawn_spec *spec, moat_command *ret, moat_error *err)
{
	return moat_keeper_spawn_attached(k, spec, false, ret, err);
}

int moat_keeper_spawn_attached(moat_keeper *k, const moat_spawn_spec *spec, bool attached, moat_command *ret,
			       moat_error *err)
{
	return moat_keeper_spawn_recorded(k, spec, attached, NULL, ret, err);
}

/* A spawn request for spec, its descriptors into fds (*ret_n of them). */
static void spawn_msg(moat_keeper_msg *m, const moat_spawn_spec *spec, bool attached, const char *record, int *fds,
		      size_t *ret_n)
{
	moat_keeper_msg_init(m, MOAT_KEEPER_SPAWN);
	m->attached = attached;
	m->record = (char *)record;
	m->argv = (char **)spec->argv;
	m->env = (char **)spec->env;
	m->cwd = (char *)spec->cwd;
	m->tty = spec->tty;
	m->rows = spec->tty ? spec->tty_rows : 0;
	m->cols = spec->tty ? spec->tty_cols : 0;
	size_t n = 0;
	const int std[3] = {spec->stdin_fd, spec->stdout_fd, spec->stderr_fd};
	for (size_t i = 0; i < 3; i++)
		if (std[i] >= 0) {
			m->stdio[i] = true;
			fds[n++] = std[i];
		}
	*ret_n = n;
}

int moat_keeper_spawn_wait_send(moat_keeper *k, const moat_spawn_spec *spec, bool attached, moat_error *err)
{
	if (spec->tty)
		return moat_error_set(err, EINVAL, "spawn: a terminal's master cannot be polled for");
	moat_keeper_msg m;
	int fds[3];
	size_t n = 0;
	spawn_msg(&m, spec, attached, NULL, fds, &n);
	m.and_wait = true;
	m.tag = ++k->tag;
	return moat__keeper_send(k->fd, &m, fds, n, err);
}

int moat_keeper_spawn_wait_recv(moat_keeper *k, moat_command *ret_cmd, moat_keeper_exit *ret_exit,
				json_t **ret_sandbox, moat_error *err)
{
	moat_keeper_msg a;
	int got[3];
	size_t n = 0;
	moat_keeper_msg_init(&a, _MOAT_KEEPER_MSG_INVALID);
	int r = moat__keeper_recv(k->fd, &a, got, 3, &n, err);
	for (size_t i = 0; i < n; i++)
		close(got[i]);
	if (r < 0) {
		moat_keeper_msg_done(&a);
		return r == -EAGAIN ? MOAT_KEEPER_RECV_OTHER : moat_error_wrap(err, "keeper");
	}
	if (a.tag != k->tag)
		r = MOAT_KEEPER_RECV_OTHER;
	else if (a.type == MOAT_KEEPER_ERROR)
		r = moat_error_set_said(err, a.error_errno ? a.error_errno : EIO, "keeper: %s",
					a.message ? a.message : "error");
	else if (a.type == MOAT_KEEPER_SPAWNED) {
		ret_cmd->id = a.id;
		ret_cmd->pid = a.pid;
		ret_cmd->pty_fd = -1;
		r = MOAT_KEEPER_RECV_SPAWNED;
	} else if (a.type == MOAT_KEEPER_EXIT) {
		*ret_exit = a.exit;
		if (ret_sandbox)
			*ret_sandbox = TAKE_PTR(a.sandbox_report);
		r = MOAT_KEEPER_RECV_EXIT;
	} else
		r = moat_error_set(err, EPROTO, "keeper: answered spawn with %s", moat_keeper_msg_type_to_string(a.type));
	moat_keeper_msg_done(&a);
	return r;
}

int moat_keeper_spawn_recorded(moat_keeper *k, const moat_spawn_spec *spec, bool attached, const char *record,
			       moat_command *ret, moat_error *err)
{
	moat_keeper_msg m, a;
	int fds[3];
	size_t n = 0;
	spawn_msg(&m, spec, attached, record, fds, &n);
	int pty = -1;
	int r = call(k, &m, fds, n, &a, &pty, err);
	if (r < 0)
		return r;
	if (a.type != MOAT_KEEPER_SPAWNED) {
		if (pty >= 0)
			close(pty);
		moat_keeper_msg_done(&a);
		return moat_error_set(err, EPROTO, "keeper: answered spawn with %s", moat_keeper_msg_type_to_string(a.type));
	}
	ret->id = a.id;
	ret->pid = a.pid;
	ret->pty_fd = pty;
	moat_keeper_msg_done(&a);
	return 0;
}

int moat_keeper_wait(moat_keeper *k, uint32_t id, moat_keeper_exit *ret, moat_error *err)
{
	moat_keeper_msg m, a;
	moat_keeper_msg_init(&m, MOAT_KEEPER_WAIT);
	m.id = id;
	int r = call(k, &m, NULL, 0, &a, NULL, err);
	if (r < 0)
		return r;
	if (a.type != MOAT_KEEPER_EXIT) {
		moat_keeper_msg_done(&a);
		return moat_error_set(err, EPROTO, "keeper: answered wait with %s", moat_keeper_msg_type_to_string(a.type));
	}
	*ret = a.exit;
	moat_keeper_msg_done(&a);
	return 0;
}

int moat_keeper_fd(const moat_keeper *k) { return k->fd; }

int moat_keeper_wait_send(moat_keeper *k, uint32_t id, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_WAIT);
	m.id = id;
	m.tag = ++k->tag;
	return moat__keeper_send(k->fd, &m, NULL, 0, err);
}

int moat_keeper_wait_recv(moat_keeper *k, moat_keeper_exit *ret, moat_error *err)
{
	return moat_keeper_wait_recv_report(k, ret, NULL, err);
}

int moat_keeper_wait_recv_report(moat_keeper *k, moat_keeper_exit *ret, json_t **ret_sandbox, moat_error *err)
{
	for (;;) {
		moat_keeper_msg a;
		int got[3];
		size_t n = 0;
		moat_keeper_msg_init(&a, _MOAT_KEEPER_MSG_INVALID);
		int r = moat__keeper_recv(k->fd, &a, got, 3, &n, err);
		for (size_t i = 0; i < n; i++)
			close(got[i]);
		if (r < 0) {
			moat_keeper_msg_done(&a);
			return moat_error_wrap(err, "keeper");
		}
		if (a.type == MOAT_KEEPER_ERROR) {
			r = moat_error_set_said(err, a.error_errno ? a.error_errno : EIO, "keeper: %s",
						a.message ? a.message : "error");
			moat_keeper_msg_done(&a);
			return r;
		}
		bool mine = a.type == MOAT_KEEPER_EXIT && a.tag == k->tag;
		if (mine) {
			*ret = a.exit;
			if (ret_sandbox)
				*ret_sandbox = TAKE_PTR(a.sandbox_report);
		}
		moat_keeper_msg_done(&a);
		if (mine)
			return 0;
	}
}

static int call_ok(moat_keeper *k, moat_keeper_msg *m, moat_error *err)
{
	moat_keeper_msg a;
	int r = call(k, m, NULL, 0, &a, NULL, err);
	if (r < 0)
		return r;
	moat_keeper_msg_type t = a.type;
	moat_keeper_msg_done(&a);
	if (t != MOAT_KEEPER_OK)
		return moat_error_set(err, EPROTO, "keeper: answered %s with %s", moat_keeper_msg_type_to_string(m->type),
				      moat_keeper_msg_type_to_string(t));
	return 0;
}

int moat_keeper_signal(moat_keeper *k, uint32_t id, int sig, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_SIGNAL);
	m.id = id;
	m.signal = sig;
	return call_ok(k, &m, err);
}

int moat_keeper_stop(moat_keeper *k, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_STOP);
	return call_ok(k, &m, err);
}

int moat_keeper_status(moat_keeper *k, moat_keeper_msg *ret, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_STATUS);
	int r = call(k, &m, NULL, 0, ret, NULL, err);
	if (r < 0)
		return r;
	if (ret->type != MOAT_KEEPER_STATUS || !ret->state[0]) {
		moat_keeper_msg_done(ret);
		return moat_error_set(err, EPROTO, "keeper: answered status with something else");
	}
	return 0;
}

int moat_keeper_approvals(moat_keeper *k, json_t *body, json_t **ret, moat_error *err)
{
	moat_keeper_msg m, a;
	moat_keeper_msg_init(&m, MOAT_KEEPER_APPROVALS);
	m.body = body;
	int r = call(k, &m, NULL, 0, &a, NULL, err);
	if (r < 0)
		return r;
	if (a.type != MOAT_KEEPER_APPROVALS || !a.body) {
		moat_keeper_msg_done(&a);
		return moat_error_set(err, EPROTO, "keeper: answered approvals with something else");
	}
	*ret = json_incref(a.body);
	moat_keeper_msg_done(&a);
	return 0;
}

int moat_keeper_lifetime(moat_keeper *k, uint64_t ttl_ms, uint64_t idle_ms, int end_dir, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_LIFETIME);
	m.ttl_ms = ttl_ms;
	m.idle_ms = idle_ms;
	moat_keeper_msg a;
	int r = call(k, &m, end_dir >= 0 ? &end_dir : NULL, end_dir >= 0 ? 1 : 0, &a, NULL, err);
	if (r < 0)
		return r;
	moat_keeper_msg_type t = a.type;
	moat_keeper_msg_done(&a);
	if (t != MOAT_KEEPER_OK)
		return moat_error_set(err, EPROTO, "keeper: answered lifetime with %s", moat_keeper_msg_type_to_string(t));
	return 0;
}

int moat_keeper_copied(moat_keeper *k, bool into, const char *host, const char *path, uint64_t files, uint64_t dirs,
		       uint64_t bytes, const char *error, moat_error *err)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_COPIED);
	m.into = into;
	m.host = (char *)host;
	m.path = (char *)path;
	m.files = files;
	m.dirs = dirs;
	m.bytes = bytes;
	m.message = (char *)error;
	/* The strings are the caller's: not freed with m. */
	return call_ok(k, &m, err);
}
