/* The keeper process (keeper.h): one sandbox, one thread, one libevent
 * loop over its control socket, the sandbox's own descriptor, signals and
 * every client connection. Nothing here blocks but the loop itself. */
#include "keeper.h"

#include "approvals.h"
#include "audit.h"
#include "egress.h"
#include "keeper-audit.h"
#include "keeper-lifetime.h"
#include "nested.h"
#include "policy.h"
#include "sandbox-internal.h"
#include "secretstore.h"

#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* Clients at once, and open waits per client: beyond them a connection or
 * a wait is refused (EAGAIN), so no client can grow the keeper. */
#define KEEPER_MAX_CONNS 64
#define KEEPER_MAX_WAITS 128
/* How many ended commands' reports are kept for a wait that comes after
 * the end; older ones are forgotten (a wait on one is then ESRCH). */
#define KEEPER_KEEP_ENDED 256
/* The policy read from the setup channel: the policy parser's own cap and
 * a little room. */
#define KEEPER_MAX_SETUP (MOAT_POLICY_MAX_BYTES + 1)

typedef struct keeper keeper;

typedef struct conn {
	keeper *k;
	int fd;
	struct event *ev;
	bool hello;
	uid_t uid;
	pid_t pid;
	struct conn *next;
} conn;

typedef struct waiter {
	conn *c;
	uint64_t tag;
	uint32_t id;
	struct waiter *next;
} waiter;

struct keeper {
	struct event_base *base;
	moat_sandbox *sb;
	moat_secrets *secrets;
	moat_keeper_rundir dir;
	int listen_fd;
	struct event *listen_ev, *sb_ev, *sig_ev[3];
	conn *conns;
	size_t n_conns;
	waiter *waiters;
	size_t n_waiters;
	uint32_t live[MOAT_KEEPER_MAX_COMMANDS];
	/* The connection an attached command belongs to (spawn.attached), or
	 * NULL: parallel to live. */
	conn *owner[MOAT_KEEPER_MAX_COMMANDS];
	size_t n_live;
	moat_keeper_exit ended[KEEPER_KEEP_ENDED];
	size_t n_ended, ended_next;
	bool sandbox_ended;
	bool dispatch_failed;
	moat_audit *audit;
	/* With exec.delegate: the nested runs' server (nested.h), served by
	 * this loop, no thread of its own. */
	moat_nest_server *nest;
	struct event *nest_ev;

	/* Actions held for a person (approvals.h), and the clock that times
	 * them out: a one-shot timer armed at the next deadline, so an idle
	 * keeper never wakes. The gateway's thread holds actions; it tells
	 * this loop through sched_fd (an eventfd) to arm the timer again. */
	moat_approvals *approvals;
	struct event *tick_ev, *sched_ev;
	int sched_fd;

	moat_keeper_lifetime_state lt; /* ttl, idle, end.json (keeper-lifetime.h) */
	const char *default_cwd; /* the policy's working directory, or NULL */
	bool lifetime_set;
	mode_t start_umask; /* what the keeper was started with: the sandbox's */
};

/* ---- answers ---- */

static void conn_close(conn *c);

/* Sends m on c; a client that does not read its answers (its socket
 * buffer full) is dropped rather than waited for. */
static void answer(conn *c, const moat_keeper_msg *m, int fd)
{
	moat_error err = {0};
	if (moat__keeper_send(c->fd, m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &err) < 0)
		conn_close(c);
}

static void answer_error(conn *c, uint64_t tag, int code, const char *fmt, ...) _printf_(4, 5);
static void answer_error(conn *c, uint64_t tag, int code, const char *fmt, ...)
{
	char msg[MOAT_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_ERROR);
	m.tag = tag;
	m.error_errno = code > 0 && code < 4096 ? code : EIO;
	m.message = msg;
	answer(c, &m, -1);
}

static void answer_ok(conn *c, uint64_t tag)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_OK);
	m.tag = tag;
	answer(c, &m, -1);
}

static void answer_exit(conn *c, uint64_t tag, const moat_keeper_exit *e)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, MOAT_KEEPER_EXIT);
	m.tag = tag;
	m.exit = *e;
	/* What a run's result says of the sandbox, read now: a front that
	 * reports its one command as a run (moatd's pool) gives the same
	 * isolation, enforced and cgroup figures as `moat run`. */
	if (c->k->sb) {
		moat_result r;
		bool cpu_known = moat__sandbox_report(c->k->sb, &r);
		m.sandbox_report = moat__result_sandbox_json(&r, cpu_known);
	}
	answer(c, &m, -1);
	json_decref(m.sandbox_report);
}

/* ---- commands ---- */

static const moat_keeper_exit *find_ended(const keeper *k, uint32_t id)
{
	size_t n = k->n_ended < KEEPER_KEEP_ENDED ? k->n_ended : KEEPER_KEEP_ENDED;
	for (size_t i = 0; i < n; i++)
		if (k->ended[i].id == id)
			return &k->ended[i];
	return NULL;
}

static bool is_live(const keeper *k, uint32_t id)
{
	for (size_t i = 0; i < k->n_live; i++)
		if (k->live[i] == id)
			return true;
	return false;
}

static void exit_from_result(const moat_command_result *r, moat_keeper_exit *e)
{
	memset(e, 0, sizeof(*e));
	e->id = r->id;
	const char *s = r->status == MOAT_STATUS_EXITED     ? "exited"
			: r->status == MOAT_STATUS_SIGNALED ? "signaled"
			: r->signal > 0                     ? "signaled"
							    : "setup_error";
	snprintf(e->status, sizeof(e->status), "%s", s);
	e->exit_code = strcmp(s, "exited") == 0 ? r->exit_code : -1;
	e->signal = strcmp(s, "signaled") == 0 ? r->signal : 0;
	e->exit_status = r->exit_status >= 0 && r->exit_status <= 255 ? r->exit_status : MOAT_KEEPER_EXIT_SETUP;
	e->wall_ms = r->wall_ms;
	e->cpu_user_ms = r->cpu_user_ms;
	e->cpu_sys_ms = r->cpu_sys_ms;
	e->max_rss_bytes = r->max_rss_bytes;
	snprintf(e->error, sizeof(e->error), "%s", r->error);
	snprintf(e->limit, sizeof(e->limit), "%s", r->limit);
}

/* A command ended: keep its report and answer everyone waiting for it. */
static void command_ended(keeper *k, const moat_command_result *r)
{
	moat_keeper_exit *e = &k->ended[k->ended_next];
	exit_from_result(r, e);
	moat__keeper_audit_command_end(k->audit, e);
	k->ended_next = (k->ended_next + 1) % KEEPER_KEEP_ENDED;
	k->n_ended++;
	for (size_t i = 0; i < k->n_live; i++)
		if (k->live[i] == r->id) {
			k->n_live--;
			k->live[i] = k->live[k->n_live];
			k->owner[i] = k->owner[k->n_live];
			break;
		}
	moat__keeper_lifetime_activity(&k->lt, k->n_live);
	for (waiter **w = &k->waiters; *w;) {
		if ((*w)->id == r->id) {
			waiter *done = *w;
			*w = done->next;
			k->n_waiters--;
			answer_exit(done->c, done->tag, e);
			free(done);
			/* A failed answer closed its connection and dropped
			 * its other waits: the list may have changed. */
			w = &k->waiters;
		} else
			w = &(*w)->next;
	}
}

/* ---- requests ---- */

static void do_hello(conn *c, const moat_keeper_msg *m)
{
	unsigned v = moat__keeper_pick_version(m->versions, m->n_versions);
	if (!v) {
		answer_error(c, 0, EPROTO, "hello.versions: none of them is spoken here (versions %d to %d)",
			     MOAT_KEEPER_PROTO_MIN, MOAT_KEEPER_PROTO_MAX);
		conn_close(c);
		return;
	}
	moat_keeper_msg a;
	moat_keeper_msg_init(&a, MOAT_KEEPER_HELLO);
	a.version = v;
	snprintf(a.sandbox, sizeof(a.sandbox), "%s", c->k->dir.id);
	a.pid = getpid();
	c->hello = true;
	answer(c, &a, -1);
}

static void add_waiter(conn *c, uint64_t tag, uint32_t id);

static void do_spawn(conn *c, const moat_keeper_msg *m, int *fds, size_t n_fds)
{
	keeper *k = c->k;
	size_t want = (size_t)m->stdio[0] + m->stdio[1] + m->stdio[2];
	if (n_fds != want) {
		answer_error(c, m->tag, EINVAL, "spawn.stdio: says %zu descriptors, %zu came along", want, n_fds);
		return;
	}
	if (k->sandbox_ended) {
		answer_error(c, m->tag, ESRCH, "spawn: the sandbox has ended");
		return;
	}
	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = m->argv;
	spec.env = m->env;
	spec.cwd = m->cwd;
	spec.tty = m->tty;
	spec.tty_rows = m->rows;
	spec.tty_cols = m->cols;
	int *std[3] = {&spec.stdin_fd, &spec.stdout_fd, &spec.stderr_fd};
	for (size_t i = 0, j = 0; i < 3; i++)
		if (m->stdio[i])
			*std[i] = fds[j++];
	moat_command cmd;
	moat_error err = {0};
	if (moat_sandbox_spawn(k->sb, &spec, &cmd, &err) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		answer_error(c, m->tag, err.code, "spawn: %s", moat_error_format(&err, buf, sizeof(buf)));
		return;
	}
	if (k->n_live < MOAT_KEEPER_MAX_COMMANDS) {
		k->owner[k->n_live] = m->attached ? c : NULL;
		k->live[k->n_live++] = cmd.id;
	}
	moat__keeper_lifetime_activity(&k->lt, k->n_live);
	moat__keeper_audit_command_start(k->audit, m, k->default_cwd, cmd.id, cmd.pid, c->uid, c->pid);
	moat_keeper_msg a;
	moat_keeper_msg_init(&a, MOAT_KEEPER_SPAWNED);
	a.tag = m->tag;
	a.id = cmd.id;
	a.pid = cmd.pid;
	answer(c, &a, cmd.pty_fd);
	if (cmd.pty_fd >= 0)
		close(cmd.pty_fd);
	/* Its end cannot have been seen yet: the sandbox's events are read
	 * by this loop, after this request. The answer above may have
	 * closed c, which is then only marked (conn_reap frees it). */
	if (m->and_wait && c->fd >= 0)
		add_waiter(c, m->tag, cmd.id);
}

/* c waits for live command id's end, answered with tag. */
static void add_waiter(conn *c, uint64_t tag, uint32_t id)
{
	keeper *k = c->k;
	if (k->n_waiters >= KEEPER_MAX_WAITS) {
		answer_error(c, tag, EAGAIN, "wait: %d waits are open already", KEEPER_MAX_WAITS);
		return;
	}
	waiter *w = calloc(1, sizeof(*w));
	if (!w) {
		answer_error(c, tag, ENOMEM, "wait: out of memory");
		return;
	}
	w->c = c;
	w->tag = tag;
	w->id = id;
	w->next = k->waiters;
	k->waiters = w;
	k->n_waiters++;
}

static void do_wait(conn *c, const moat_keeper_msg *m)
{
	keeper *k = c->k;
	const moat_keeper_exit *e = find_ended(k, m->id);
	if (e) {
		answer_exit(c, m->tag, e);
		return;
	}
	if (!is_live(k, m->id)) {
		answer_error(c, m->tag, ESRCH, "wait.id: no command %u in this sandbox", (unsigned)m->id);
		return;
	}
	add_waiter(c, m->tag, m->id);
}

static void do_signal(conn *c, const moat_keeper_msg *m)
{
	moat_error err = {0};
	int r = moat_sandbox_signal(c->k->sb, m->id, m->signal, &err);
	if (r == -ESRCH)
		answer_error(c, m->tag, ESRCH, "signal.id: no live command %u in this sandbox", (unsigned)m->id);
	else if (r < 0)
		answer_error(c, m->tag, -r, "signal: %s", err.msg[0] ? err.msg : strerror(-r));
	else
		answer_ok(c, m->tag);
}

/* The approval gates' requests: the queue answers, the keeper carries. */
static void tick_arm(keeper *k);

static void do_approvals(conn *c, const moat_keeper_msg *m)
{
	json_t *body = NULL;
	moat_error err = {0};
	int r = moat_approvals_request(c->k->approvals, c->uid, m->body, &body, &err);
	/* A lease granted, a request decided: the next deadline moved. */
	tick_arm(c->k);
	if (r < 0) {
		answer_error(c, m->tag, err.code, "%s", err.msg);
		return;
	}
	moat_keeper_msg a;
	moat_keeper_msg_init(&a, MOAT_KEEPER_APPROVALS);
	a.tag = m->tag;
	a.body = body;
	answer(c, &a, -1);
	moat_keeper_msg_done(&a);
}

/* Arms the approvals' clock at their next deadline (a ms late, so that
 * the tick finds it passed), or not at all when nothing will run out. */
static void tick_arm(keeper *k)
{
	if (!k->tick_ev)
		return;
	uint64_t t = moat_approvals_next_deadline(k->approvals);
	if (t == UINT64_MAX) {
		evtimer_del(k->tick_ev);
		return;
	}
	uint64_t now = moat__now_ns() / 1000000;
	uint64_t d = t > now ? t - now + 1 : 1;
	struct timeval tv = {.tv_sec = (time_t)(d / 1000), .tv_usec = (suseconds_t)(d % 1000) * 1000};
	evtimer_add(k->tick_ev, &tv);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	keeper *k = arg;
	moat_approvals_tick(k->approvals);
	tick_arm(k);
}

/* The gateway's thread held an action: its timeout is a new deadline. */
static void sched_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	uint64_t n;
	(void)!read(fd, &n, sizeof(n));
	tick_arm(arg);
}

/* Runs on the gateway's thread, under the approvals' lock. */
static void sched_fn(void *ud)
{
	const uint64_t one = 1;
	(void)!write(*(const int *)ud, &one, sizeof(one));
}

static void do_stop(conn *c, const moat_keeper_msg *m)
{
	moat_error err = {0};
	/* Held actions are answered while their clients still live. */
	moat_approvals_end(c->k->approvals, "the session was stopped before anyone decided");
	moat__keeper_lifetime_note(&c->k->lt, MOAT_END_STOPPED);
	if (!c->k->sandbox_ended && moat_sandbox_stop(c->k->sb, &err) < 0) {
		char buf[MOAT_ERROR_MAX + 64];
		answer_error(c, m->tag, err.code, "stop: %s", moat_error_format(&err, buf, sizeof(buf)));
		return;
	}
	answer_ok(c, m->tag);
}

static void do_status(conn *c, const moat_keeper_msg *m)
{
	keeper *k = c->k;
	moat_keeper_msg a;
	moat_keeper_msg_init(&a, MOAT_KEEPER_STATUS);
	a.tag = m->tag;
	snprintf(a.sandbox, sizeof(a.sandbox), "%s", k->dir.id);
	a.pid = getpid();
	snprintf(a.state, sizeof(a.state), "%s", k->sandbox_ended ? "ended" : "running");
	memcpy(a.commands, k->live, k->n_live * sizeof(k->live[0]));
	a.n_commands = k->n_live;
	moat_sandbox_net net;
	if (!k->sandbox_ended && moat_sandbox_net_counters(k->sb, &net)) {
		a.net_known = true;
		a.net_allowed = net.allowed;
		a.net_denied = net.denied;
		a.net_bytes_up = net.bytes_up;
		a.net_bytes_down = net.bytes_down;
	}
	size_t pending, leases;
	moat_approvals_counts(k->approvals, &pending, &leases);
	a.approvals_pending = pending;
	a.approvals_leases = leases;
	answer(c, &a, -1);
}

/* lifetime: the session's time to live and idle time, and the folder
 * end.json goes to (keeper-lifetime.h). */
static void do_lifetime(conn *c, const moat_keeper_msg *m, const int *fds, size_t n_fds)
{
	keeper *k = c->k;
	struct stat st;
	if (n_fds > 1 || (n_fds == 1 && (fstat(fds[0], &st) < 0 || !S_ISDIR(st.st_mode)))) {
		answer_error(c, m->tag, EINVAL, "lifetime: at most one descriptor, a folder for end.json");
		return;
	}
	moat_error err = {0};
	if (moat__keeper_lifetime_set(&k->lt, m->ttl_ms, m->idle_ms, n_fds ? fds[0] : -1, k->n_live, &err) < 0) {
		answer_error(c, m->tag, err.code, "lifetime: %s", err.msg);
		return;
	}
	k->lifetime_set = true;
	answer_ok(c, m->tag);
}

/* A lifetime timer passed: the sandbox is stopped as a stop would. */
static void lifetime_expired(void *arg, const char *reason)
{
	keeper *k = arg;
	(void)reason;
	moat_error err = {0};
	if (!k->sandbox_ended)
		(void)moat_sandbox_stop(k->sb, &err);
}

static void sandbox_cb(evutil_socket_t fd, short what, void *arg);

static void conn_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn *c = arg;
	keeper *k = c->k;
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, _MOAT_KEEPER_MSG_INVALID);
	int fds[3] = {-1, -1, -1};
	size_t n = 0;
	moat_error err = {0};
	int r = moat__keeper_recv(c->fd, &m, fds, 3, &n, &err);
	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r == -EPIPE || r == -ECONNRESET) {
		conn_close(c);
		return;
	}
	if (r < 0) {
		/* A message that cannot be read is answered once, naming the
		 * field, and the client may go on. */
		answer_error(c, m.tag, err.code, "%s", err.msg);
	} else if (!c->hello && m.type != MOAT_KEEPER_HELLO) {
		answer_error(c, m.tag, EPROTO, "%s: hello comes first", moat_keeper_msg_type_to_string(m.type));
		conn_close(c);
		c = NULL;
	} else {
		switch (m.type) {
		case MOAT_KEEPER_HELLO:
			if (c->hello || !m.n_versions)
				answer_error(c, 0, EPROTO, "hello: not a front's first message");
			else
				do_hello(c, &m);
			break;
		case MOAT_KEEPER_SPAWN:
			do_spawn(c, &m, fds, n);
			break;
		case MOAT_KEEPER_WAIT:
			do_wait(c, &m);
			break;
		case MOAT_KEEPER_SIGNAL:
			do_signal(c, &m);
			break;
		case MOAT_KEEPER_STOP:
			do_stop(c, &m);
			break;
		case MOAT_KEEPER_APPROVALS:
			do_approvals(c, &m);
			break;
		case MOAT_KEEPER_LIFETIME:
			do_lifetime(c, &m, fds, n);
			break;
		case MOAT_KEEPER_COPIED:
			/* A front's report of a copy it made, for the log. */
			moat__keeper_audit_copied(k->audit, &m, c->uid, c->pid);
			answer_ok(c, m.tag);
			break;
		case MOAT_KEEPER_STATUS:
			if (m.state[0])
				answer_error(c, m.tag, EINVAL, "status: a request carries only its tag");
			else
				do_status(c, &m);
			break;
		default:
			answer_error(c, m.tag, EINVAL, "%s: not a request", moat_keeper_msg_type_to_string(m.type));
			break;
		}
	}
	/* The sandbox holds its own copies of the streams now. */
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	moat_keeper_msg_done(&m);
	/* A call into the sandbox (a spawn waits for the init's answer) may
	 * have read events off its socket, which then wait in the sandbox
	 * object with nothing left to make its descriptor readable: collect
	 * them now, or a command that ended meanwhile is never reported. */
	sandbox_cb(-1, EV_READ, k);
}

/* ---- connections ---- */

static void conn_close(conn *c)
{
	if (!c || c->fd < 0)
		return;
	keeper *k = c->k;
	for (waiter **w = &k->waiters; *w;) {
		if ((*w)->c == c) {
			waiter *done = *w;
			*w = done->next;
			k->n_waiters--;
			free(done);
		} else
			w = &(*w)->next;
	}
	/* Its attached commands do not run on unattended: killed now, their
	 * ends reported as any other's (to other connections' waits). */
	for (size_t i = 0; i < k->n_live; i++)
		if (k->owner[i] == c && k->sb) {
			k->owner[i] = NULL;
			moat_error err = {0};
			(void)moat_sandbox_signal(k->sb, k->live[i], SIGKILL, &err);
		}
	event_del(c->ev);
	close(c->fd);
	c->fd = -1;
	/* Freed later (conn_reap): an answer may be on its way up the stack
	 * of a callback that still holds c. */
}

static void conn_reap(keeper *k)
{
	for (conn **p = &k->conns; *p;) {
		if ((*p)->fd < 0) {
			conn *c = *p;
			*p = c->next;
			event_free(c->ev);
			free(c);
			k->n_conns--;
		} else
			p = &(*p)->next;
	}
}

static void audit_refused(keeper *k, const struct ucred *cr)
{
	if (!k->audit)
		return;
	json_t *f = json_pack("{s:i, s:i, s:s}", "uid", (int)cr->uid, "pid", (int)cr->pid, "reason",
			      "not the keeper's user nor root");
	moat_error err = {0};
	(void)moat_audit_event(k->audit, "keeper.refused", f, 0, &err);
}

static void listen_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	keeper *k = arg;
	conn_reap(k);
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* The folder is ours alone, but the socket is the keeper's door:
	 * whoever reaches it is checked again, by the kernel's word. */
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr)) {
		close(fd);
		return;
	}
	if (cr.uid != geteuid() && cr.uid != 0) {
		audit_refused(k, &cr);
		close(fd);
		return;
	}
	if (k->n_conns >= KEEPER_MAX_CONNS) {
		/* Refused with a word rather than in silence: the error waits
		 * in the client's socket for its hello's answer (keeper-client.c
		 * reads it even when the hello found the door shut), so the
		 * caller learns why instead of "keeper socket: closed". */
		char msg[96];
		snprintf(msg, sizeof(msg), "keeper busy: connection cap %d reached", KEEPER_MAX_CONNS);
		moat_keeper_msg m;
		moat_keeper_msg_init(&m, MOAT_KEEPER_ERROR);
		m.error_errno = EBUSY;
		m.message = msg;
		moat_error e = {0};
		moat__keeper_send(fd, &m, NULL, 0, &e);
		close(fd);
		return;
	}
	conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->k = k;
	c->fd = fd;
	c->uid = cr.uid;
	c->pid = cr.pid;
	c->ev = event_new(k->base, fd, EV_READ | EV_PERSIST, conn_cb, c);
	if (!c->ev || event_add(c->ev, NULL) < 0) {
		if (c->ev)
			event_free(c->ev);
		free(c);
		close(fd);
		return;
	}
	c->next = k->conns;
	k->conns = c;
	k->n_conns++;
}

/* ---- the sandbox and signals ---- */

static void sandbox_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	keeper *k = arg;
	for (;;) {
		moat_sandbox_event ev;
		moat_error err = {0};
		int r = moat_sandbox_dispatch(k->sb, &ev, &err);
		if (r <= 0) {
			if (r < 0 && !k->dispatch_failed) {
				/* The sandbox cannot be driven any more: end it, and
				 * let its remaining events come. */
				k->dispatch_failed = true;
				(void)moat_sandbox_stop(k->sb, &err);
			} else if (r < 0) {
				/* Twice: nothing more will come (and its descriptor
				 * may stay readable for ever); the keeper ends, and
				 * destroy ends the sandbox. */
				event_base_loopexit(k->base, NULL);
			}
			break;
		}
		if (ev.type == MOAT_SANDBOX_EVENT_EXITED)
			command_ended(k, &ev.command);
		else if (ev.type == MOAT_SANDBOX_EVENT_ENDED) {
			k->sandbox_ended = true;
			/* Every command's end came before this one; anyone
			 * still waiting waits for a command that will not end. */
			while (k->waiters) {
				/* Taken off first: an answer that fails closes
				 * its connection, which drops that one's waits. */
				waiter *w = k->waiters;
				k->waiters = w->next;
				k->n_waiters--;
				answer_error(w->c, w->tag, ESRCH, "wait: the sandbox ended");
				free(w);
			}
			event_base_loopexit(k->base, NULL);
			break;
		}
	}
	/* Not from a connection's own callback (fd -1), which may still be
	 * on the stack of the connection being freed. */
	if (fd >= 0)
		conn_reap(k);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	keeper *k = arg;
	moat_error err = {0};
	moat_approvals_end(k->approvals, "the session was stopped before anyone decided");
	/* Asked to end: the sandbox ends, its commands' ends are reported to
	 * whoever waits, then the loop ends with the sandbox's ENDED. */
	if (k->sandbox_ended || moat_sandbox_stop(k->sb, &err) < 0)
		event_base_loopexit(k->base, NULL);
	else
		sandbox_cb(-1, EV_READ, k); /* what stop read off the socket */
}

/* ---- setup ---- */

/* One JSON line on the setup channel: ready, or why not (k may then be
 * NULL). */
static void report_setup(int fd, const keeper *k, const moat_error *err)
{
	json_t *o;
	if (err) {
		char buf[MOAT_ERROR_MAX + 64];
		o = json_pack("{s:b, s:i, s:s}", "ready", 0, "errno", err->code > 0 && err->code < 4096 ? err->code : EIO,
			      "error", moat_error_format(err, buf, sizeof(buf)));
	} else
		o = json_pack("{s:b, s:s, s:i, s:s}", "ready", 1, "sandbox", k->dir.id, "pid", (int)getpid(), "socket",
			      k->dir.socket);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s) {
		(void)moat__write_all(fd, s, strlen(s));
		(void)moat__write_all(fd, "\n", 1);
	}
	free(s);
}

static int read_setup(int fd, char **ret, size_t *ret_len, moat_error *err)
{
	size_t cap = 65536, len = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "out of memory");
	for (;;) {
		if (len == cap) {
			if (cap >= KEEPER_MAX_SETUP)
				return moat_error_set(err, E2BIG, "keeper setup: the policy is larger than %u bytes",
						      (unsigned)MOAT_POLICY_MAX_BYTES);
			cap = cap * 2 > KEEPER_MAX_SETUP ? KEEPER_MAX_SETUP : cap * 2;
			char *n = realloc(buf, cap + 1);
			if (!n)
				return moat_error_set(err, ENOMEM, "out of memory");
			buf = n;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return moat_error_errno(err, errno, "keeper setup: read the policy");
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

static int make_listener(keeper *k, moat_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", k->dir.socket);
	k->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (k->listen_fd < 0)
		return moat_error_errno(err, errno, "control socket: make it");
	if (bind(k->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_errno(err, errno, "control socket %s: bind", k->dir.socket);
	/* Made 0600: a socket's mode is 0777 less the umask, so the keeper's
	 * 077 leaves it 0700. Changed by name in the keeper's own folder
	 * (0700, no one else's to enter or plant in), not by umask: the
	 * gateway's threads may be making files at this moment. */
	if (fchmodat(k->dir.dir_fd, "ctl", 0600, 0) < 0)
		return moat_error_errno(err, errno, "control socket %s: make it 0600", k->dir.socket);
	if (listen(k->listen_fd, 16) < 0)
		return moat_error_errno(err, errno, "control socket %s: listen", k->dir.socket);
	return 0;
}

/* Once the init is cloned: the sandbox's TLS authority (its key must not
 * be in memory the init inherits). */
static int keeper_after_clone(void *arg, moat_error *err)
{
	return moat_egress_tls_arm(arg, "session", err);
}

static int keeper_setup(keeper *k, const char *yaml, size_t len, moat_config **ret_c, moat_policy **ret_p,
			moat_egress *egress, moat_error *err)
{
	_cleanup_policy_ moat_policy *p = NULL;
	int r = moat_policy_parse(yaml, len, "keeper policy", "/", NULL, &p, err);
	if (r < 0)
		return r;
	/* The delegation socket's bind goes into the policy before it is
	 * compiled: the sandbox sees it at /run/moat. */
	if (p->exec_delegate && (r = moat_nest_server_new(p, &k->nest, err)) < 0)
		return r;
	/* The run specification, compiled once; no argv: each command
	 * brings its own. */
	_cleanup_config_ moat_config *c = NULL;
	if ((r = moat_policy_compile(p, NULL, &c, err)) < 0)
		return r;
	/* The sandbox's id is picked now, so that the log's `session` field
	 * is the id moat session ls shows (docs/audit.md); its runtime
	 * folder, made after the sandbox, takes that name. */
	if (moat__random_hex(MOAT_KEEPER_ID_BYTES, k->dir.id) < 0)
		return moat_error_errno(err, errno, "sandbox id: read random bytes");
	/* Where the sandbox reports is the keeper's, from the policy. */
	if (p->audit_log) {
		if ((r = moat_audit_open(p->audit_log, k->dir.id, &k->audit, err)) < 0)
			return r;
		if ((r = moat_audit_set_max_size(k->audit,
						 p->audit_max_size ? p->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE, err)) < 0)
			return r;
	}
	/* The secrets' values are read now, before the sandbox's init is
	 * cloned from this process, into memory it does not inherit; the
	 * sandbox gets placeholders, the gateway the values once armed. */
	if ((r = moat_secrets_open(p, &k->secrets, err)) < 0 || (r = moat_secrets_apply_env(k->secrets, c, err)) < 0)
		return r;
	if ((r = moat_egress_from_policy(p, NULL, k->audit, egress, err)) < 0)
		return r;
	/* The test suite's upstream authority (moat run reads the same). */
	if ((r = moat_egress_tls_prepare(egress, c, getenv("MOAT_TEST_UPSTREAM_CA"), err)) < 0)
		return r;
	egress->cfg.secrets = k->secrets;

	moat_approvals_opts ao = {.timeout_ms = p->approvals_timeout_ms, .notify = p->approvals_notify, .audit = k->audit};
	if ((r = moat_approvals_new(&ao, &k->approvals, err)) < 0)
		return r;
	egress->cfg.approvals = k->approvals;
	moat_sandbox_opts o;
	moat_sandbox_opts_init(&o);
	o.ends_with_first_command = false;
	o.audit = k->audit;
	o.gateway = moat_egress_gateway(egress);
	o.approvals = k->approvals;
	o.secrets = k->secrets;
	o.after_clone = keeper_after_clone;
	o.after_clone_arg = egress;
	/* The sandbox is made, and its init cloned, with the umask the
	 * keeper was started with, not the keeper's own 077: its commands
	 * get their caller's umask and see their cgroup as `moat run`'s do
	 * (docs/sessions.md). */
	mode_t own = umask(k->start_umask);
	r = moat_sandbox_create(c, &o, &k->sb, err);
	umask(own);
	if (r < 0)
		return r;
	if (k->nest && (r = moat_nest_server_attach(k->nest, k->audit, err)) < 0)
		return r;
	/* Made after the sandbox, so that its init, cloned from us, never
	 * held the lock or the listening socket. */
	if ((r = moat__keeper_rundir_make(&k->dir, err)) < 0 || (r = make_listener(k, err)) < 0)
		return r;
	moat_approvals_set_session(k->approvals, k->dir.id);
	/* After the sandbox too; actions held before this are found by the
	 * loop's first arming. */
	k->sched_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->sched_fd < 0)
		return moat_error_set(err, errno, "approvals: make the clock's eventfd");
	moat_approvals_set_schedule(k->approvals, sched_fn, &k->sched_fd);
	*ret_c = TAKE_PTR(c);
	*ret_p = TAKE_PTR(p);
	return 0;
}

/* A nested run asked for, answered, or a sibling ended. */
static void nest_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	keeper *k = arg;
	(void)moat_nest_server_dispatch(k->nest, NULL);
}

static int keeper_loop(keeper *k, moat_error *err)
{
	k->base = event_base_new();
	if (!k->base)
		return moat_error_set(err, ENOMEM, "event loop: make it");
	moat__keeper_lifetime_init(&k->lt, k->base, lifetime_expired, k);
	int sbfd = moat_sandbox_fd(k->sb);
	if (sbfd < 0)
		return moat_error_set(err, -sbfd, "sandbox: no descriptor to watch");
	k->listen_ev = event_new(k->base, k->listen_fd, EV_READ | EV_PERSIST, listen_cb, k);
	k->sb_ev = event_new(k->base, sbfd, EV_READ | EV_PERSIST, sandbox_cb, k);
	const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
	for (size_t i = 0; i < 3; i++) {
		k->sig_ev[i] = evsignal_new(k->base, sigs[i], signal_cb, k);
		if (!k->sig_ev[i] || event_add(k->sig_ev[i], NULL) < 0)
			return moat_error_set(err, ENOMEM, "event loop: watch signal %d", sigs[i]);
	}
	if (!k->listen_ev || !k->sb_ev || event_add(k->listen_ev, NULL) < 0 || event_add(k->sb_ev, NULL) < 0)
		return moat_error_set(err, ENOMEM, "event loop: watch the sandbox and the socket");
	if (k->nest) {
		k->nest_ev = event_new(k->base, moat_nest_server_fd(k->nest), EV_READ | EV_PERSIST, nest_cb, k);
		if (!k->nest_ev || event_add(k->nest_ev, NULL) < 0)
			return moat_error_set(err, ENOMEM, "event loop: watch the delegation socket");
	}

	/* Held actions time out and leases end on this clock, armed only
	 * while something can run out. */
	k->tick_ev = evtimer_new(k->base, tick_cb, k);
	k->sched_ev = event_new(k->base, k->sched_fd, EV_READ | EV_PERSIST, sched_cb, k);
	if (!k->tick_ev || !k->sched_ev || event_add(k->sched_ev, NULL) < 0)
		return moat_error_set(err, ENOMEM, "event loop: the approvals' clock");
	tick_arm(k);
	/* Something may have happened before the loop watched for it. */
	sandbox_cb(sbfd, EV_READ, k);
	if (!k->sandbox_ended && event_base_dispatch(k->base) < 0)
		return moat_error_set(err, EIO, "event loop: failed");
	return 0;
}

static void keeper_free(keeper *k)
{
	for (conn *c = k->conns; c; c = c->next)
		conn_close(c);
	conn_reap(k);
	for (size_t i = 0; i < 3; i++)
		if (k->sig_ev[i])
			event_free(k->sig_ev[i]);
	moat__keeper_lifetime_done(&k->lt);
	if (k->listen_ev)
		event_free(k->listen_ev);
	if (k->sb_ev)
		event_free(k->sb_ev);
	if (k->nest_ev)
		event_free(k->nest_ev);

	if (k->tick_ev)
		event_free(k->tick_ev);
	if (k->sched_ev)
		event_free(k->sched_ev);
	if (k->base)
		event_base_free(k->base);
	if (k->listen_fd >= 0)
		close(k->listen_fd);
}

/* After the gateway's thread is gone: nothing writes sched_fd any more. */
static void safe_close_sched(keeper *k)
{
	if (k->approvals)
		moat_approvals_set_schedule(k->approvals, NULL, NULL);
	if (k->sched_fd >= 0)
		close(k->sched_fd);
	k->sched_fd = -1;
}

int moat__keeper_main(int setup_fd)
{
	/* On the heap, not the stack: 160 kB, mostly the ended commands'
	 * reports, which a fresh mapping keeps off the keeper's resident
	 * memory until they are written (a zeroed stack frame would be
	 * resident from the start, for the keeper's whole life). */
	_cleanup_free_ keeper *kp = calloc(1, sizeof(keeper));
	if (!kp) {
		moat_error oom = {0};
		moat_error_set(&oom, ENOMEM, "keeper: out of memory");
		report_setup(setup_fd, NULL, &oom);
		close(setup_fd);
		return MOAT_KEEPER_EXIT_SETUP;
	}
	keeper *k = kp;
	k->listen_fd = -1;
	k->dir.dir_fd = k->dir.lock_fd = -1;
	k->lt.end_dir = -1;
	k->sched_fd = -1;
	moat_error err = {0};
	/* Everything the keeper makes (the socket above all) is its user's
	 * alone. A client gone mid-answer is an error to handle, not a
	 * signal that ends the keeper. */
	k->start_umask = umask(077);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_NAME, "moat-keeper");

	_cleanup_free_ char *yaml = NULL;
	size_t len = 0;
	_cleanup_config_ moat_config *c = NULL;
	_cleanup_policy_ moat_policy *p = NULL;
	moat_egress egress;
	memset(&egress, 0, sizeof(egress));
	egress.log_fd = -1;
	int r = read_setup(setup_fd, &yaml, &len, &err);
	if (r >= 0)
		r = keeper_setup(k, yaml, len, &c, &p, &egress, &err);
	if (r < 0) {
		report_setup(setup_fd, k, &err);
		close(setup_fd);
		moat_sandbox_destroy(k->sb, NULL, NULL);
		moat_nest_server_free(TAKE_PTR(k->nest));
		moat_egress_done(&egress);
		moat_secrets_free(k->secrets);
		safe_close_sched(k);

		moat_approvals_free(k->approvals);
		moat_audit_close(k->audit);
		moat__keeper_rundir_remove(&k->dir);
		keeper_free(k);
		return MOAT_KEEPER_EXIT_SETUP;
	}
	report_setup(setup_fd, k, NULL);
	close(setup_fd);
	k->default_cwd = p ? p->cwd : NULL;

	r = keeper_loop(k, &err);
	if (k->lifetime_set)
		moat__keeper_lifetime_write_reason(&k->lt);
	/* No new client from here on; the sandbox goes, then its folder.
	 * The socket's name goes with the listener: a keeper with its lock
	 * and a ctl is one that takes clients (session ls reads that). */
	if (k->listen_fd >= 0) {
		close(k->listen_fd);
		k->listen_fd = -1;
		(void)unlinkat(k->dir.dir_fd, "ctl", 0);
	}
	moat_result res;
	moat_error derr = {0};
	if (k->approvals)
		moat_approvals_end(k->approvals, "the session ended before anyone decided");
	moat_result_init(&res);
	(void)moat_sandbox_destroy(TAKE_PTR(k->sb), &res, &derr);
	if (k->lifetime_set) {
		/* Why the session ended, for its front (end.json) and its log. */
		/* res.cpu_ms is the whole sandbox's: its cgroup's, or else the
		 * init's rusage, which holds every command the init reaped: a
		 * stop has the init end and reap them before it exits, but a
		 * limit SIGKILLs it, and the kernel then reaps its processes
		 * without counting them (zap_pid_ns_processes ignores
		 * SIGCHLD): no figure then, rather than a short one. */
		int64_t cpu = res.cpu_from_rusage && res.limit_hit[0] ? -1 : (int64_t)res.cpu_ms;
		moat__keeper_lifetime_write_end(&k->lt, res.limit_hit, cpu);
		if (k->audit) {
			const char *why = k->lt.reason[0] ? k->lt.reason : res.limit_hit[0] ? MOAT_END_LIMIT : MOAT_END_ENDED;
			json_t *f = json_pack("{s:s, s:s?, s:o}", "reason", why, "limit",
					      !k->lt.reason[0] && res.limit_hit[0] ? res.limit_hit : NULL, "cpu_ms",
					      cpu >= 0 ? json_integer((json_int_t)cpu) : json_null());
			moat_error aerr = {0};
			(void)moat_audit_event(k->audit, "session.end", f, 0, &aerr);
		}
	}
	keeper_free(k);
	/* Its siblings end with it; their events are in its log before the
	 * log closes. */
	moat_nest_server_free(TAKE_PTR(k->nest));
	moat_egress_done(&egress);
	moat_secrets_free(k->secrets);
	safe_close_sched(k);

	moat_approvals_free(k->approvals);
	moat_audit_close(k->audit);
	moat__keeper_rundir_remove(&k->dir);
	return r < 0 ? MOAT_KEEPER_EXIT_SETUP : 0;
}
