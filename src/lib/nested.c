/* Delegated nested runs: the server thread and the inside client
 * (nested.h, docs/nested.md). */
#include "nested.h"
#include "sweep.h"
#include "nestproto.h"
#include "policy-internal.h"
#include "syscalls.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* moat's own failure, as `moat run` exits with it. */
#define NEST_EXIT_ERROR 125
/* How long a sibling gets to end after SIGTERM when the outer run ends. */
#define SIBLING_GRACE_MS 2000
/* The most of a sibling's audit log copied into the outer one. */
#define SIBLING_LOG_MAX (4u << 20)
/* How often a running sibling's new events are copied into the outer
 * log, so that they arrive while it runs rather than at its end. */
#define SIBLING_LOG_POLL_MS 200

typedef struct nest_client {
	int fd;     /* the connection; -1: slot free */
	int pidfd;  /* the sibling's, once started; else -1 */
	pid_t pid;
	unsigned id;
	char log[MOAT_MAX_PATH];
	char yaml[MOAT_MAX_PATH];
	off_t log_off;    /* how far its log has been copied */
	size_t log_total; /* and how much of it, against SIBLING_LOG_MAX */
} nest_client;

struct moat_nest_server {
	moat_policy *outer;  /* the outer effective policy, host view */
	moat_policy *inside; /* the same as the sandbox sees it: requests are checked against it */
	char dir[MOAT_MAX_PATH];
	char sockdir[MOAT_MAX_PATH];
	int listen_fd, stop_fd;
	moat_audit *audit;
	pthread_t thread;
	bool started;
	/* Served from its owner's event loop instead (the keeper): one epoll
	 * descriptor over the listener, the connections and the siblings'
	 * pidfds, and what is in it besides the listener. */
	bool attached;
	int epfd;
	int timer_fd; /* fires every SIBLING_LOG_POLL_MS while a sibling runs */
	bool timer_armed;
	int reg[2 * MOAT_NEST_MAX_RUNS];
	size_t n_reg;
	unsigned next_id;
	nest_client c[MOAT_NEST_MAX_RUNS];
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the front's side ------------------------------------------------- */

int moat_nest_server_new(moat_policy *p, moat_nest_server **ret, moat_error *err)
{
	moat_nest_server *s = calloc(1, sizeof(*s));
	if (!s)
		return moat_error_set(err, ENOMEM, "nested runs");
	s->listen_fd = s->stop_fd = s->epfd = s->timer_fd = -1;
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++)
		s->c[i].fd = s->c[i].pidfd = -1;
	const char *tmp = getenv("TMPDIR");
	/* Named after our pid: if we are killed, the next moat of this user
	 * removes what we left (sweep.h). */
	int n = snprintf(s->dir, sizeof(s->dir), "%s/" MOAT_NEST_PREFIX "%d-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp",
			 (int)getpid());
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (n < 0 || (size_t)n >= sizeof(s->dir) - 16 || !mkdtemp(s->dir)) {
		s->dir[0] = 0;
		moat_nest_server_free(s);
		return moat_error_set(err, errno ? errno : ENAMETOOLONG, "nested runs: cannot make a folder for the socket");
	}
	/* The folder holds the siblings' policies and logs: the sandbox sees
	 * only sock/, bound at /run/moat. 0711 so that a sandbox user that is
	 * not this user (root mode) can reach sock/ctl, and no one can list. */
	snprintf(s->sockdir, sizeof(s->sockdir), "%s/sock", s->dir);
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl", s->sockdir);
	int r = 0;
	/* The modes are set, not left to the umask: the keeper runs with 077,
	 * which would keep the sandbox user out of sock/. */
	if (chmod(s->dir, 0711) < 0 || mkdir(s->sockdir, 0755) < 0 || chmod(s->sockdir, 0755) < 0)
		r = -errno;
	else if ((size_t)n >= sizeof(sa.sun_path))
		r = -ENAMETOOLONG;
	else if ((s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0 ||
		 bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0666) < 0 ||
		 listen(s->listen_fd, MOAT_NEST_MAX_RUNS) < 0 ||
		 (s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		r = -errno;
	if (r < 0) {
		moat_nest_server_free(s);
		return moat_error_set(err, r, "nested runs: socket");
	}
	/* The bind goes in before the copies: the inside view shows it, and a
	 * sibling never gets it (sibling_policy). */
	if ((r = moat_policy_add_bind(p, s->sockdir, MOAT_NEST_SOCKET_DIR, 0, err)) < 0) {
		moat_nest_server_free(s);
		return r;
	}
	_cleanup_free_ char *yaml = moat_policy_to_yaml_inside(p);
	if (!(s->outer = moat_policy_copy(p)) || !yaml) {
		moat_nest_server_free(s);
		return moat_error_set(err, ENOMEM, "nested runs");
	}
	if ((r = moat__policy_parse_ex(yaml, strlen(yaml), "the outer policy", "/", "/", false, &s->inside, err)) < 0) {
		moat_nest_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

static void audit_event(moat_nest_server *s, const char *type, json_t *fields)
{
	moat_error e = {0};
	if (s->audit)
		moat_audit_event(s->audit, type, fields, 0, &e);
	else
		json_decref(fields);
}

static void reply(int fd, int status, const char *msg)
{
	moat_nest_reply r = {.magic = MOAT_NEST_MAGIC, .version = MOAT_NEST_VERSION, .type = MOAT_NEST_EXIT,
			     .status = status};
	snprintf(r.error, sizeof(r.error), "%s", msg ? msg : "");
	(void)!send(fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static bool path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The sibling's policy: the inner request narrowed by the outer policy
 * (moat_policy_intersect against the outer policy as the sandbox sees it),
 * then the outer's binds read-only in place of the inner's, and none of
 * the front's outputs but the log the server copies. */
static int sibling_policy(moat_nest_server *s, const moat_nest_request *rq, const char *log, moat_policy **ret,
			  moat_error *err)
{
	_cleanup_policy_ moat_policy *inner = NULL, *r = NULL;
	int e = moat__policy_parse_ex(rq->yaml, strlen(rq->yaml), "nested request", "/", "/", false, &inner, err);
	if (e < 0)
		return e;
	for (size_t i = 0; i < inner->n_binds; i++) {
		const moat_bind *b = &inner->binds[i];
		if (b->flags & MOAT_BIND_RW)
			return moat_error_set(err, MOAT_EINPUT,
					      "filesystem.read_write: %s: a nested run sees its parent's files read-only", b->dst);
		if (strcmp(b->src, b->dst) != 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "filesystem.read_only: %s: a nested run sees its parent's files where the parent does",
					      b->src);
	}
	if (inner->out_dir)
		return moat_error_set(err, MOAT_EINPUT, "filesystem.out: a nested run has no writable folder of its own");
	if (inner->n_secrets)
		return moat_error_set(err, MOAT_EINPUT, "secrets: a nested run cannot be given secrets");
	if (inner->stdin_path)
		return moat_error_set(err, MOAT_EINPUT, "stdin: a nested run reads the stdin it is handed");
	if (inner->tty)
		return moat_error_set(err, MOAT_EINPUT, "tty: a nested run has no terminal of its own");
	for (char **v = inner->env; v && *v; v++)
		if (!strchr(*v, '='))
			return moat_error_set(err, MOAT_EINPUT, "env: %s: a name without a value would be read on the host",
					      *v);
	if ((e = moat_policy_intersect(s->inside, inner, &r, err)) < 0)
		return e;
	/* The outer's binds, read-only, at the same places; never the
	 * delegation socket. */
	for (size_t i = 0; i < r->n_binds; i++) {
		free(r->binds[i].src);
		free(r->binds[i].dst);
	}
	free(r->binds);
	r->binds = NULL;
	r->n_binds = 0;
	for (size_t i = 0; i < s->outer->n_binds; i++) {
		const moat_bind *b = &s->outer->binds[i];
		if (path_within(b->dst, MOAT_NEST_SOCKET_DIR))
			continue;
		if ((e = moat_policy_add_bind(r, b->src, b->dst, b->flags & ~(unsigned)MOAT_BIND_RW, err)) < 0)
			return e;
	}
	bool cwd_ok = false;
	for (size_t i = 0; i < r->n_binds && rq->cwd[0] == '/'; i++)
		cwd_ok |= path_within(rq->cwd, r->binds[i].dst);
	if (!r->cwd && cwd_ok && !(r->cwd = strdup(rq->cwd)))
		return moat_error_set(err, ENOMEM, "nested run");
	r->exec_delegate = false;
	r->record = false;
	free(r->record_path), r->record_path = NULL;
	free(r->result_path), r->result_path = NULL;
	free(r->audit_log);
	free(r->path), r->path = NULL;
	if (!(r->audit_log = strdup(log)))
		return moat_error_set(err, ENOMEM, "nested run");
	*ret = TAKE_PTR(r);
	return 0;
}

static int write_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t n = strlen(text);
	if (fd < 0)
		return -errno;
	return moat__write_all(fd, text, n) < 0 ? -EIO : 0;
}

/* fork and exec `moat run --policy YAML -- argv` with fds as 0, 1, 2. */
static int spawn_sibling(nest_client *c, char *const *argv, const int fds[3])
{
	size_t n = moat__strv_length((char **)argv);
	_cleanup_free_ char **av = calloc(n + 6, sizeof(char *));
	if (!av)
		return -ENOMEM;
	av[0] = (char *)"moat";
	av[1] = (char *)"run";
	av[2] = (char *)"--policy";
	av[3] = c->yaml;
	av[4] = (char *)"--";
	memcpy(av + 5, argv, n * sizeof(char *));
	sigset_t none;
	sigemptyset(&none);
	pid_t ppid = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Only async-signal-safe calls: the front is threaded. The
		 * sibling dies with the server's thread. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != ppid)
			_exit(125);
		for (int i = 0; i < 3; i++)
			if (dup2(fds[i], i) < 0)
				_exit(125);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve("/proc/self/exe", av, environ);
		_exit(125);
	}
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd < 0) {
		int r = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		c->pid = 0;
		return r;
	}
	return 0;
}

/* Only what can be a command's stream: a pipe, a socket, a character
 * device or a regular file opened for I/O. No directory, no O_PATH. */
static bool stdio_fd_ok(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || fstat(fd, &st) < 0)
		return false;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) || S_ISREG(st.st_mode);
}

static void refuse(moat_nest_server *s, nest_client *c, const char *why)
{
	audit_event(s, "nested.refused", json_pack("{s:I,s:s}", "nested", (json_int_t)c->id, "reason", why));
	reply(c->fd, NEST_EXIT_ERROR, why);
	close_fd(&c->fd);
}

/* One request on c's connection: checked, then its sibling started. */
static void handle_request(moat_nest_server *s, nest_client *c)
{
	_cleanup_free_ char *buf = malloc(MOAT_NEST_MAX_MSG + 1);
	char cbuf[CMSG_SPACE(sizeof(int) * 4)] __attribute__((aligned(8)));
	struct iovec iov = {buf, MOAT_NEST_MAX_MSG + 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	if (!buf)
		return refuse(s, c, "nested run: out of memory");
	ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	int fds[4] = {-1, -1, -1, -1};
	size_t nfds = 0;
	for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nfds < ELEMENTSOF(fds))
					fds[nfds++] = fd;
				else
					close(fd);
			}
		}
	moat_error err = {0};
	char why[MOAT_ERROR_MAX + 64];
	moat_nest_request rq = {0};
	const char *problem = NULL;
	if (n <= 0) {
		/* Closed without asking: nothing to log (a loop of these must
		 * not fill the outer log). */
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		close_fd(&c->fd);
		return;
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		problem = "nested run: request or descriptors cut (too large)";
	else if (nfds != 3)
		problem = "nested run: expected exactly 3 descriptors (stdin, stdout, stderr)";
	else
		for (int i = 0; i < 3 && !problem; i++)
			if (!stdio_fd_ok(fds[i]))
				problem = "nested run: a stdio descriptor is not a pipe, socket, terminal or file";
	_cleanup_policy_ moat_policy *sib = NULL;
	_cleanup_free_ char *yaml = NULL;
	if (!problem && moat_nest_decode(buf, (size_t)n, &rq, &err) < 0)
		problem = moat_error_format(&err, why, sizeof(why));
	if (!problem) {
		snprintf(c->log, sizeof(c->log), "%s/n%u.log", s->dir, c->id);
		snprintf(c->yaml, sizeof(c->yaml), "%s/n%u.yaml", s->dir, c->id);
		if (sibling_policy(s, &rq, c->log, &sib, &err) < 0)
			problem = moat_error_format(&err, why, sizeof(why));
		else if (!(yaml = moat_policy_to_yaml(sib)) || write_file(c->yaml, yaml) < 0)
			problem = "nested run: cannot write the sibling's policy";
	}
	if (!problem) {
		json_t *av = json_array();
		for (char **a = rq.argv; a && *a; a++)
			json_array_append_new(av, json_string(*a));
		_cleanup_free_ char *run_yaml = moat_policy_to_yaml_run(sib);
		char hash[MOAT_AUDIT_HASH_HEX];
		moat_audit_hash(run_yaml ? run_yaml : "", run_yaml ? strlen(run_yaml) : 0, hash);
		audit_event(s, "nested.start",
			    json_pack("{s:I,s:o,s:s,s:I,s:I}", "nested", (json_int_t)c->id, "argv", av, "policy_sha256", hash,
				      "memory_bytes", (json_int_t)sib->limits.memory_bytes, "wall_ms",
				      (json_int_t)sib->limits.wall_ms));
		int r = spawn_sibling(c, rq.argv, fds);
		if (r < 0)
			problem = "nested run: cannot start the sibling";
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	moat_nest_request_done(&rq);
	if (problem)
		refuse(s, c, problem);
}

/* Copies what the sibling's log gained since the last copy, one
 * nested.event per line, into the outer log. While the sibling runs
 * (final false) only whole lines are taken: the one it is writing waits
 * for the next copy. */
static void copy_log(moat_nest_server *s, nest_client *c, bool final)
{
	if (c->log_total > SIBLING_LOG_MAX)
		return;
	FILE *f = fopen(c->log, "re");
	if (!f)
		return;
	if (fseeko(f, c->log_off, SEEK_SET) < 0) {
		fclose(f);
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (!final && line[n - 1] != '\n')
			break;
		c->log_off += n;
		if ((c->log_total += (size_t)n) > SIBLING_LOG_MAX)
			break;
		json_t *ev = json_loadb(line, (size_t)n, 0, NULL);
		if (ev)
			audit_event(s, "nested.event", json_pack("{s:I,s:o}", "nested", (json_int_t)c->id, "event", ev));
	}
	free(line);
	fclose(f);
}

/* The running siblings' new events. */
static void copy_logs(moat_nest_server *s)
{
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++)
		if (s->c[i].pidfd >= 0)
			copy_log(s, &s->c[i], false);
}

static bool siblings_run(const moat_nest_server *s)
{
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++)
		if (s->c[i].pidfd >= 0)
			return true;
	return false;
}

static void finish_sibling(moat_nest_server *s, nest_client *c)
{
	siginfo_t si = {0};
	if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED) < 0)
		si.si_code = 0;
	int status = si.si_code == CLD_EXITED ? si.si_status : si.si_code ? 128 + si.si_status : NEST_EXIT_ERROR;
	close_fd(&c->pidfd);
	copy_log(s, c, true);
	audit_event(s, "nested.end", json_pack("{s:I,s:i}", "nested", (json_int_t)c->id, "exit_status", status));
	if (c->fd >= 0)
		reply(c->fd, status, NULL);
	close_fd(&c->fd);
	unlink(c->log);
	unlink(c->yaml);
	c->pid = 0;
}

static void accept_one(moat_nest_server *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++)
		if (s->c[i].fd < 0 && s->c[i].pidfd < 0) {
			s->c[i].fd = fd;
			s->c[i].log_off = 0;
			s->c[i].log_total = 0;
			s->c[i].id = ++s->next_id;
			return;
		}
	/* Bounded: the rest are told so at once, never queued. */
	reply(fd, NEST_EXIT_ERROR, "nested run: busy (4 nested runs at once at most)");
	close(fd);
}

/* One round: waits up to timeout_ms (0: not at all) for something to do,
 * does it. Returns false once the owner said stop. */
static bool serve_round(moat_nest_server *s, int timeout_ms)
{
	struct pollfd p[2 + 2 * MOAT_NEST_MAX_RUNS];
	nest_client *who[2 + 2 * MOAT_NEST_MAX_RUNS] = {0};
	bool is_pid[2 + 2 * MOAT_NEST_MAX_RUNS] = {0};
	nfds_t n = 0;
	p[n++] = (struct pollfd){s->stop_fd, POLLIN, 0};
	p[n++] = (struct pollfd){s->listen_fd, POLLIN, 0};
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++) {
		nest_client *c = &s->c[i];
		if (c->fd >= 0)
			who[n] = c, p[n++] = (struct pollfd){c->fd, c->pidfd < 0 ? POLLIN : 0, 0};
		if (c->pidfd >= 0)
			who[n] = c, is_pid[n] = true, p[n++] = (struct pollfd){c->pidfd, POLLIN, 0};
	}
	if (poll(p, n, timeout_ms) < 0)
		return errno == EINTR;
	if (p[0].revents)
		return false;
	if (p[1].revents & POLLIN)
		accept_one(s);
	for (nfds_t i = 2; i < n; i++) {
		nest_client *c = who[i];
		if (!p[i].revents)
			continue;
		if (is_pid[i]) {
			if (c->pidfd >= 0)
				finish_sibling(s, c);
		} else if (c->fd >= 0 && c->pidfd < 0 && (p[i].revents & POLLIN)) {
			handle_request(s, c);
		} else if (c->fd >= 0 && (p[i].revents & (POLLHUP | POLLERR))) {
			/* The asker is gone: its sibling goes too. */
			if (c->pidfd >= 0)
				moat__pidfd_send_signal(c->pidfd, SIGTERM);
			close_fd(&c->fd);
		}
	}
	return true;
}

/* The outer sandbox is over: every sibling ends with it. */
static void end_siblings(moat_nest_server *s)
{
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++) {
		nest_client *c = &s->c[i];
		if (c->pidfd < 0) {
			close_fd(&c->fd);
			continue;
		}
		moat__pidfd_send_signal(c->pidfd, SIGTERM);
		struct pollfd p = {c->pidfd, POLLIN, 0};
		if (poll(&p, 1, SIBLING_GRACE_MS) <= 0)
			moat__pidfd_send_signal(c->pidfd, SIGKILL);
		finish_sibling(s, c);
	}
}

static void *serve(void *arg)
{
	moat_nest_server *s = arg;
	while (serve_round(s, siblings_run(s) ? SIBLING_LOG_POLL_MS : -1))
		copy_logs(s);
	end_siblings(s);
	return NULL;
}

/* Makes the epoll set hold what a round would poll. Everything but the
 * listener is taken out and put back: a descriptor closed and its number
 * reused within one round would otherwise be missed. A connection whose
 * sibling runs is watched for its hang-up only, so that an asker that
 * writes more cannot make the owner's loop spin. */
static int sync_epoll(moat_nest_server *s)
{
	for (size_t i = 0; i < s->n_reg; i++)
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->reg[i], NULL);
	s->n_reg = 0;
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++) {
		nest_client *c = &s->c[i];
		struct epoll_event ev = {.events = c->pidfd < 0 ? EPOLLIN : 0};
		if (c->fd >= 0) {
			ev.data.fd = c->fd;
			if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
				return -errno;
			s->reg[s->n_reg++] = c->fd;
		}
		if (c->pidfd >= 0) {
			ev = (struct epoll_event){.events = EPOLLIN, .data.fd = c->pidfd};
			if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->pidfd, &ev) < 0)
				return -errno;
			s->reg[s->n_reg++] = c->pidfd;
		}
	}
	bool want = siblings_run(s);
	if (want != s->timer_armed) {
		long ns = (long)SIBLING_LOG_POLL_MS * 1000000L;
		struct itimerspec its = {0};
		if (want)
			its.it_value.tv_nsec = its.it_interval.tv_nsec = ns;
		if (timerfd_settime(s->timer_fd, 0, &its, NULL) < 0)
			return -errno;
		s->timer_armed = want;
	}
	return 0;
}

int moat_nest_server_attach(moat_nest_server *s, moat_audit *audit, moat_error *err)
{
	s->audit = audit;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->listen_fd};
	struct epoll_event tev = {.events = EPOLLIN, .data.fd = s->timer_fd};
	if (s->epfd < 0 || s->timer_fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev) < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timer_fd, &tev) < 0)
		return moat_error_set(err, errno, "nested runs: epoll");
	s->attached = true;
	return 0;
}

int moat_nest_server_fd(const moat_nest_server *s)
{
	return s && s->attached ? s->epfd : -EINVAL;
}

int moat_nest_server_dispatch(moat_nest_server *s, moat_error *err)
{
	if (!s || !s->attached)
		return moat_error_set(err, EINVAL, "nested runs: not attached to a loop");
	uint64_t ticks;
	(void)!read(s->timer_fd, &ticks, sizeof(ticks));
	(void)serve_round(s, 0);
	copy_logs(s);
	int r = sync_epoll(s);
	return r < 0 ? moat_error_set(err, -r, "nested runs: epoll") : 0;
}

int moat_nest_server_start(moat_nest_server *s, moat_audit *audit, moat_error *err)
{
	s->audit = audit;
	int r = pthread_create(&s->thread, NULL, serve, s);
	if (r)
		return moat_error_set(err, r, "nested runs: thread");
	s->started = true;
	return 0;
}

void moat_nest_server_free(moat_nest_server *s)
{
	if (!s)
		return;
	if (s->started) {
		uint64_t one = 1;
		(void)!write(s->stop_fd, &one, sizeof(one));
		pthread_join(s->thread, NULL);
	} else if (s->attached) {
		end_siblings(s);
	}
	close_fd(&s->epfd);
	close_fd(&s->timer_fd);
	for (size_t i = 0; i < MOAT_NEST_MAX_RUNS; i++) {
		close_fd(&s->c[i].fd);
		close_fd(&s->c[i].pidfd);
	}
	close_fd(&s->listen_fd);
	close_fd(&s->stop_fd);
	if (s->dir[0]) {
		char path[MOAT_MAX_PATH + 8];
		snprintf(path, sizeof(path), "%s/ctl", s->sockdir);
		unlink(path);
		rmdir(s->sockdir);
		rmdir(s->dir);
	}
	moat_policy_free(s->outer);
	moat_policy_free(s->inside);
	free(s);
}

/* ---- the inside's side ------------------------------------------------ */

int moat_nest_run(const moat_policy *policy, char *const *argv, moat_error *err)
{
	_cleanup_free_ char *yaml = moat_policy_to_yaml(policy), *msg = NULL;
	char cwd[MOAT_MAX_PATH];
	size_t len;
	if (!yaml)
		return moat_error_set(err, ENOMEM, "nested run");
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	int r = moat_nest_encode(yaml, cwd, argv, &msg, &len, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = MOAT_NEST_SOCKET};
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno,
				      "nested run: cannot reach %s (a nested run needs exec.delegate in the outer policy)",
				      MOAT_NEST_SOCKET);
	/* A closed stdio descriptor goes as /dev/null. */
	int fds[3], own[3] = {-1, -1, -1};
	for (int i = 0; i < 3; i++) {
		fds[i] = i;
		if (fcntl(i, F_GETFD) < 0)
			fds[i] = own[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
	}
	char cbuf[CMSG_SPACE(sizeof(fds))] __attribute__((aligned(8))) = {0};
	struct iovec iov = {msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	for (int i = 0; i < 3; i++)
		if (own[i] >= 0)
			close(own[i]);
	if (n < 0)
		return moat_error_set(err, errno, "nested run: send");
	moat_nest_reply rep;
	do
		n = recv(fd, &rep, sizeof(rep), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(rep) || rep.magic != MOAT_NEST_MAGIC || rep.type != MOAT_NEST_EXIT)
		return moat_error_set(err, EPROTO, "nested run: the front ended the request without an answer");
	rep.error[sizeof(rep.error) - 1] = 0;
	if (rep.error[0])
		return moat_error_set(err, MOAT_EINPUT, "%s", rep.error);
	return rep.status;
}
