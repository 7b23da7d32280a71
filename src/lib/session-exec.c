/* `moat session exec` on the front's side (session.h): one command through
 * the session's keeper and its sandbox's init, never setns. This process
 * only relays: the command's output (when it is counted or a terminal is
 * ours), the caller's input (-i, -t), signals and the window size, and the
 * per-command clock (--time). */
#include "session.h"

#include "hostpath.h"
#include "iobuf.h"
#include "record.h"
#include "result.h"
#include "tty.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Copies what is readable on *fd to out, counting it; closes *fd (and sets
 * -1) at end of file, or, for a terminal's master, when its last slave
 * closed (EIO). */
static void relay(int *fd, int out, uint64_t *count, moat_record *rec)
{
	char b[65536];
	ssize_t n = read(*fd, b, sizeof(b));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	*count += (uint64_t)n;
	if (rec)
		(void)moat_record_write(rec, 'o', b, (size_t)n, NULL);
	(void)moat__write_all(out, b, (size_t)n);
}

static void send_signal(const moat_session_info *s, moat_keeper **k2, uint32_t id, int sig)
{
	moat_error err = {0};
	if (!*k2 && moat_keeper_connect(s->socket, k2, &err) < 0)
		return;
	(void)moat_keeper_signal(*k2, id, sig, &err);
}

/* The caller's window size onto the command's terminal; the kernel then
 * sends SIGWINCH to the terminal's foreground group inside. */
static void copy_winsize(int master)
{
	struct winsize ws;
	if (master >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(master, TIOCSWINSZ, &ws);
}

/* A pipe whose read end (*r) is non-blocking and whose ends are both
 * close-on-exec. */
static int make_pipe(int *r, int *w, moat_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return moat_error_errno(err, errno, "exec: make a pipe");
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	*r = p[0];
	*w = p[1];
	return 0;
}

typedef struct relay_state {
	int out[2];      /* the command's stdout/stderr pipes' read ends, or -1 */
	moat_sink in;    /* -i from a terminal: the caller's input, to a pipe */
	int in_w;        /* that pipe's write end (the sink's fd), or -1 */
	bool in_open;    /* the caller's stdin still gives input to in */
	moat_tty tty;    /* -t */
	uint64_t bytes[2];
} relay_state;

static void close_input(relay_state *st)
{
	moat__sink_close(&st->in);
	if (st->in_w >= 0)
		close(st->in_w);
	st->in_w = -1;
}

/* Fills spec's streams (and st's relays) for o; the pipe ends given to
 * the keeper are in wr[], the caller's to close once it has spawned. */
static int setup_streams(const moat_session_exec_opts *o, moat_spawn_spec *spec, relay_state *st, int wr[3],
			 moat_error *err)
{
	if (o->tty) {
		spec->tty = true;
		moat__tty_caller_size(&spec->tty_rows, &spec->tty_cols);
		return 0;
	}
	if (o->input) {
		if (!isatty(STDIN_FILENO))
			spec->stdin_fd = STDIN_FILENO;
		else {
			/* A terminal is never handed in (TIOCSTI): its input
			 * goes through a pipe that this process fills. */
			int pi[2];
			if (pipe2(pi, O_CLOEXEC) < 0)
				return moat_error_errno(err, errno, "exec: make a pipe");
			wr[0] = pi[0];
			st->in_w = pi[1];
			if (moat__sink_open(&st->in, pi[1], true) < 0)
				return moat_error_set(err, ENOMEM, "exec: stdin buffer");
			spec->stdin_fd = pi[0];
			st->in_open = true;
		}
	}
	int *outs[2] = {&spec->stdout_fd, &spec->stderr_fd};
	for (int i = 0; i < 2; i++) {
		if (!o->count_output && !isatty(1 + i)) {
			*outs[i] = 1 + i;
			continue;
		}
		if (make_pipe(&st->out[i], &wr[1 + i], err) < 0)
			return -1;
		*outs[i] = wr[1 + i];
	}
	return 0;
}

int moat_session_exec(const moat_session_info *s, const moat_session_exec_opts *o, moat_session_exec_result *ret,
		      moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	_cleanup_keeper_ moat_keeper *k = NULL;
	if (moat_keeper_connect(s->socket, &k, err) < 0)
		return moat_error_set(err, ESRCH, "session %s: not running", s->name[0] ? s->name : s->id);
	return moat_session_exec_on(k, s, o, ret, err);
}

int moat_session_exec_on(moat_keeper *k, const moat_session_info *s, const moat_session_exec_opts *o,
			 moat_session_exec_result *ret, moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	if (o->detach && (o->tty || o->input))
		return moat_error_set(err, EINVAL, "exec: --detach takes neither -t nor -i (nothing would be attached)");
	/* The keeper that answered must be this session's (its socket may
	 * have been taken by another since the record was read). */
	if (!k || strcmp(moat_keeper_sandbox_id(k), s->id) != 0)
		return moat_error_set(err, ESRCH, "session %s: not running", s->name[0] ? s->name : s->id);

	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = o->argv;
	spec.env = o->env;
	spec.cwd = o->cwd;
	if (o->detach) {
		/* Nothing of the caller's stays with a command that outlives
		 * it: its streams are /dev/null. */
		moat_command cmd;
		int r = moat_keeper_spawn_attached(k, &spec, false, &cmd, err);
		if (r < 0)
			return r;
		ret->id = cmd.id;
		ret->pid = cmd.pid;
		return 0;
	}

	relay_state st = {.out = {-1, -1}, .in = MOAT_SINK_INIT, .in_w = -1};
	moat__tty_init(&st.tty, false);
	int wr[3] = {-1, -1, -1};
	int r = setup_streams(o, &spec, &st, wr, err);

	/* Blocked before the command starts, so none is lost in between; read
	 * from a signalfd and sent on (SIGWINCH: the window size instead). */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	if (o->tty)
		sigaddset(&set, SIGWINCH);
	sigprocmask(SIG_BLOCK, &set, &old);
	_cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	moat_command cmd = {.pty_fd = -1};
	if (r >= 0 && sfd < 0)
		r = moat_error_errno(err, errno, "exec: signalfd");
	/* --record (the session's): a -t command's terminal, as asciicast,
	 * in the session's folder; the log names the file. */
	char rec_path[PATH_MAX] = "";
	moat_record *rec = NULL;
	if (r >= 0 && o->tty && s->record)
		snprintf(rec_path, sizeof(rec_path), "%s/rec-%llu-%d.cast", s->dir, (unsigned long long)moat__now_ns(),
			 (int)getpid());
	if (r >= 0)
		r = moat_keeper_spawn_recorded(k, &spec, true, rec_path[0] ? rec_path : NULL, &cmd, err);
	if (r >= 0 && rec_path[0]) {
		struct winsize ws = {0};
		(void)ioctl(STDIN_FILENO, TIOCGWINSZ, &ws);
		char line[1024] = "";
		for (size_t i = 0, n = 0; o->argv[i] && n < sizeof(line) - 1; i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", i ? " " : "", o->argv[i]);
		moat_record_header h = {.width = ws.ws_col, .height = ws.ws_row, .term = getenv("TERM"), .command = line};
		if (moat_record_open(rec_path, &h, NULL, &rec, err) < 0) {
			/* The command runs on, unrecorded, would be a lie in the
			 * log: it is killed, and exec fails. */
			moat_error e2 = {0};
			(void)moat_keeper_signal(k, cmd.id, SIGKILL, &e2);
			r = -1;
		}
	}
	for (int i = 0; i < 3; i++)
		if (wr[i] >= 0)
			close(wr[i]);
	if (r >= 0 && o->tty) {
		st.tty.in_open = isatty(STDIN_FILENO) || o->input;
		if (cmd.pty_fd < 0 || !moat__tty_attach(&st.tty, cmd.pty_fd)) {
			if (cmd.pty_fd >= 0)
				close(cmd.pty_fd);
			r = moat_error_set(err, EIO, "exec: no terminal came back from the sandbox");
		} else
			moat__tty_make_raw(&st.tty);
	}
	if (r >= 0) {
		ret->id = cmd.id;
		ret->pid = cmd.pid;
		r = moat_keeper_wait_send(k, cmd.id, err);
	}
	moat_keeper *k2 = NULL;
	uint64_t t0 = now_ms();
	uint64_t deadline = o->time_ms ? t0 + o->time_ms : 0;
	bool done = false;
	char buf[65536];
	while (r >= 0 && !done) {
		enum { P_KEEPER, P_SIG, P_OUT, P_ERR, P_PTY, P_IN, P_SINK, P_N };
		struct pollfd p[P_N];
		for (int i = 0; i < P_N; i++)
			p[i] = (struct pollfd){.fd = -1};
		p[P_KEEPER] = (struct pollfd){.fd = moat_keeper_fd(k), .events = POLLIN};
		p[P_SIG] = (struct pollfd){.fd = sfd, .events = POLLIN};
		p[P_OUT] = (struct pollfd){.fd = st.out[0], .events = POLLIN};
		p[P_ERR] = (struct pollfd){.fd = st.out[1], .events = POLLIN};
		if (st.tty.master >= 0) {
			p[P_PTY] = (struct pollfd){
				.fd = st.tty.master,
				.events = (short)(POLLIN | (moat__sink_pending(&st.tty.in) ? POLLOUT : 0))};
			if (moat__tty_wants_input(&st.tty))
				p[P_IN] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		}
		if (st.in_w >= 0) {
			if (st.in_open && moat__sink_room(&st.in) > 0)
				p[P_IN] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
			if (moat__sink_pending(&st.in))
				p[P_SINK] = (struct pollfd){.fd = st.in.fd, .events = POLLOUT};
		}
		int timeout = -1;
		if (deadline && !ret->timed_out) {
			uint64_t t = now_ms();
			timeout = t >= deadline ? 0 : (int)(deadline - t > 60000 ? 60000 : deadline - t);
		}
		int n = poll(p, P_N, timeout);
		if (n < 0 && errno != EINTR) {
			r = moat_error_errno(err, errno, "exec: poll");
			break;
		}
		if (deadline && !ret->timed_out && now_ms() >= deadline) {
			ret->timed_out = true;
			send_signal(s, &k2, cmd.id, SIGKILL);
		}
		if (n <= 0)
			continue;
		if (p[P_SIG].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH)
					copy_winsize(st.tty.master);
				else if (si.ssi_signo != SIGPIPE)
					send_signal(s, &k2, cmd.id, (int)si.ssi_signo);
			}
		}
		for (int i = 0; i < 2; i++)
			if (st.out[i] >= 0 && p[P_OUT + i].revents)
				relay(&st.out[i], 1 + i, &st.bytes[i], NULL);
		if (st.tty.master >= 0 && p[P_PTY].revents) {
			if (p[P_PTY].revents & POLLOUT)
				moat__sink_flush(&st.tty.in);
			if (p[P_PTY].revents & (POLLIN | POLLHUP | POLLERR)) {
				int m = st.tty.master;
				relay(&m, STDOUT_FILENO, &st.bytes[0], rec);
				if (m < 0) {
					/* relay closed it: the sink's copy goes too */
					st.tty.master = -1;
					moat__sink_close(&st.tty.in);
				}
			}
		}
		if (p[P_IN].revents) {
			if (st.tty.master >= 0)
				moat__tty_read_input(&st.tty, rec, buf, sizeof(buf));
			else if (st.in_w >= 0) {
				size_t room = moat__sink_room(&st.in);
				ssize_t k_ = read(STDIN_FILENO, buf, room < sizeof(buf) ? room : sizeof(buf));
				if (k_ > 0)
					moat__sink_put(&st.in, buf, (size_t)k_);
				else if (k_ == 0 || (errno != EAGAIN && errno != EINTR))
					st.in_open = false;
			}
		}
		if (p[P_SINK].revents)
			moat__sink_flush(&st.in);
		/* The caller's input ended and all of it went in: the command
		 * reads end of file. */
		if (st.in_w >= 0 && !st.in_open && !moat__sink_pending(&st.in))
			close_input(&st);
		if (p[P_KEEPER].revents) {
			r = moat_keeper_wait_recv(k, &ret->exit, err);
			done = r >= 0;
		}
	}
	/* What the command wrote before it ended, to the end of its pipes or
	 * terminal (a process it left behind may hold them: not waited for
	 * beyond a quiet second). */
	while (st.out[0] >= 0 || st.out[1] >= 0 || st.tty.master >= 0) {
		struct pollfd p[3] = {{.fd = st.out[0], .events = POLLIN},
				      {.fd = st.out[1], .events = POLLIN},
				      {.fd = st.tty.master, .events = POLLIN}};
		if (poll(p, 3, 1000) <= 0)
			break;
		for (int i = 0; i < 2; i++)
			if (st.out[i] >= 0 && p[i].revents)
				relay(&st.out[i], 1 + i, &st.bytes[i], NULL);
		if (st.tty.master >= 0 && p[2].revents) {
			int m = st.tty.master;
			relay(&m, STDOUT_FILENO, &st.bytes[0], rec);
			if (m < 0) {
				st.tty.master = -1;
				moat__sink_close(&st.tty.in);
			}
		}
	}
	moat_record_close(rec, NULL);
	ret->stdout_bytes = st.bytes[0];
	ret->stderr_bytes = st.bytes[1];
	ret->wall_ms = now_ms() - t0;
	for (int i = 0; i < 2; i++)
		if (st.out[i] >= 0)
			close(st.out[i]);
	close_input(&st);
	moat__tty_close_master(&st.tty);
	moat__tty_restore(&st.tty);
	moat_keeper_close(k2);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

int moat_session_exec_result_write(const moat_session_info *s, const moat_session_exec_opts *o,
				   const moat_session_exec_result *x, const char *path, moat_error *err)
{
	moat_result r;
	moat_result_init(&r);
	const moat_keeper_exit *e = &x->exit;
	if (x->timed_out) {
		r.status = MOAT_STATUS_TIMEOUT;
		snprintf(r.limit_hit, sizeof(r.limit_hit), "wall");
	} else if (strcmp(e->status, "exited") == 0)
		r.status = MOAT_STATUS_EXITED;
	else if (strcmp(e->status, "signaled") == 0)
		r.status = MOAT_STATUS_SIGNALED;
	else
		r.status = MOAT_STATUS_SETUP_ERROR;
	r.exit_code = e->exit_code;
	r.signal = e->signal;
	/* The keeper's clock, from the command's start to its end; the
	 * front's own only when the keeper gave none. */
	r.wall_ms = e->wall_ms ? e->wall_ms : x->wall_ms;
	r.cpu_user_ms = e->cpu_user_ms;
	r.cpu_sys_ms = e->cpu_sys_ms;
	r.cpu_ms = e->cpu_user_ms + e->cpu_sys_ms;
	r.memory_peak_bytes = e->max_rss_bytes;
	r.memory_peak_known = e->max_rss_bytes > 0;
	r.stdout_bytes = x->stdout_bytes;
	r.stderr_bytes = x->stderr_bytes;
	snprintf(r.error, sizeof(r.error), "%s", e->error);
	r.exit_status = e->exit_status;
	if (o->time_ms)
		moat_result_enforce(&r, MOAT_LIMIT_KIND_WALL, o->time_ms, MOAT_MECH_TIMER);

	_cleanup_free_ char *txt = moat_result_to_json(&r);
	json_t *j = txt ? json_loads(txt, 0, NULL) : NULL;
	if (!j)
		return moat_error_set(err, ENOMEM, "exec: result JSON");
	/* The isolation and the session's limits are the session's, not this
	 * command's: they are reported once, for the session (session show),
	 * never as this one's zeroes. Its memory peak is its own processes'
	 * (rusage), the session's cgroup being shared; null when rusage's
	 * figure could be the init's, carried into it at execve (0 from the
	 * keeper: moat_command_result.max_rss_bytes). */
	json_object_del(j, "isolation");
	json_object_set_new(j, "session", json_string(s->id));
	json_object_set_new(j, "command", json_integer(x->id));
	json_object_set_new(j, "memory_peak_by", json_string("rusage"));
	_cleanup_free_ char *out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (!out)
		return moat_error_set(err, ENOMEM, "exec: result JSON");
	_cleanup_close_ int fd = -1;
	int wfd = STDOUT_FILENO;
	if (strcmp(path, "-") != 0) {
		fd = moat__hostpath_open("exec --result:", path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644, err);
		if (fd < 0)
			return fd;
		wfd = fd;
	}
	int rc = moat__write_all(wfd, out, strlen(out));
	if (rc >= 0)
		rc = moat__write_all(wfd, "\n", 1);
	if (rc < 0)
		return moat_error_set(err, -rc, "exec: write the result to %s", path);
	return 0;
}
