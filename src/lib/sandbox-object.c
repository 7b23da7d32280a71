/* The sandbox object (sandbox.h): a sandbox with a lifecycle, whose caller
 * owns the event loop and the signals.
 *
 *   caller (host side)                        init (pid 1 inside)
 *   -------------------------------------     ------------------------------
 *   moat_sandbox_create: prepare, cgroup,
 *   clone3 (no exit signal), maps, GO      -> identity, hostname, loopback,
 *                                             rootfs, pivot_root; READY
 *   moat_sandbox_spawn: spec in a sealed
 *   memfd + 3 streams, SPAWN id            -> fork (CLONE_VM|CLONE_VFORK),
 *                                             confine, execve; STARTED id
 *   poll(moat_sandbox_fd) / dispatch       <- EXITED id, wait status, rusage
 *   moat_sandbox_signal: SIGNAL id, sig    -> kill(-pgid, sig)
 *   moat_sandbox_stop: SHUTDOWN            -> kill(-1), reap, EXITED each, exit
 *   moat_sandbox_destroy: SIGKILL the init (the kernel ends its pid
 *   namespace), reap, account, stop the gateway, remove the cgroup.
 *
 * Nothing here touches signal dispositions or masks: the init is cloned
 * with no exit signal (a caller that ignores SIGCHLD cannot lose it to the
 * kernel's auto-reaping, and its SIGCHLD handler never sees it), its end is
 * seen on its pidfd and reaped with __WALL. Every descriptor the caller
 * polls for is in one epoll set, moat_sandbox_fd. */
#include "sandbox.h"

#include "audit.h"
#include "filetrail.h"
#include "runlimits.h"
#include "netproxy.h"
#include "redact.h"
#include "sandbox-internal.h"
#include "secretstore.h"
#include "spawnspec.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

/* Every command that ran has exactly one end event; a spawn is refused
 * while MOAT_SANDBOX_MAX_COMMANDS are live or ended unreported, so the
 * queue has a bound (plus the sandbox's own end). */
#define QUEUE_MAX (MOAT_SANDBOX_MAX_COMMANDS + 1)

typedef enum cmd_state {
	CMD_FREE = 0,
	CMD_STARTING, /* SPAWN sent, no answer yet */
	CMD_LIVE,     /* started (or failing: its EXITED is still to come) */
} cmd_state;

typedef struct sb_command {
	cmd_state state;
	uint32_t id;
	pid_t pid;
	int pty_fd;
	/* spawn waits on its answer: the terminal's master, should it come,
	 * is spawn's to hand out even if the command ends meanwhile. */
	bool in_spawn;
	uint64_t t0;
	/* How its start went, kept until the slot is reused. */
	bool start_answered;
	bool refused;
	bool exec_failed;
	bool setup_failed;
	int start_errno;
	char error[512];
} sb_command;

struct moat_sandbox {
	const moat_config *c;
	moat_sandbox_opts opts;
	moat_result r;
	moat_run_limits *lim;
	char **envp;
	int ctl, pidfd, epfd, timer_fd, limfd, out_fs;
	/* Transparent egress: the redirected listener and the DNS stub the
	 * init passes before the proxy port, handed to the gateway with it. */
	int transparent_fd, dns_fd;
	/* The gateway's upstream network namespace (opts.upstream_netns_fd,
	 * a copy), or -1. */
	int upstream_netns_fd;
	/* What the caller polls (moat_sandbox_fd): an epoll set holding epfd,
	 * the sources, and evfd, an eventfd kept readable while events wait
	 * in the queue. Events are queued also by calls that read the
	 * control socket themselves (spawn, stop, signal): without evfd the
	 * caller's poll would not wake for them. wait polls epfd alone, so
	 * events of other commands waiting in the queue do not spin it. */
	int pubfd, evfd;
	bool ev_armed;
	pid_t pid;
	uint64_t t0;
	struct moat_netproxy *netproxy;
	bool ready;
	bool reaped;
	bool ended_given; /* the ENDED event was handed out */
	bool killed;
	moat_status kill_reason;
	bool stopping;
	bool setup_failed;
	int setup_errno;
	bool spawned;
	/* The file and exec trail: one per command (the init hands out a
	 * notify listener for each), with the fanotify source only in a
	 * sandbox of one command; the counts of those already stopped; and
	 * whether session.start is in the audit log yet. */
	struct moat_filetrail *trails[MOAT_SANDBOX_MAX_COMMANDS];
	size_t n_trails;
	moat_filetrail_stats trail_stats;
	bool session_logged;
	/* In a sandbox that ends with its first command, the sandbox's result
	 * is that command's: kept here when it ends. */
	uint32_t first_id;
	bool first_ended;
	moat_command_result first;
	uint32_t next_id;
	size_t n_live;
	sb_command cmds[MOAT_SANDBOX_MAX_COMMANDS];
	moat_sandbox_event queue[QUEUE_MAX];
	size_t qlen;
	struct rusage ru;
};

void moat_sandbox_opts_init(moat_sandbox_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->upstream_netns_fd = -1;
}

void moat_spawn_spec_init(moat_spawn_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->stdin_fd = s->stdout_fd = s->stderr_fd = -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static sb_command *find_command(moat_sandbox *sb, uint32_t id)
{
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++)
		if (sb->cmds[i].state != CMD_FREE && sb->cmds[i].id == id)
			return &sb->cmds[i];
	return NULL;
}

static void queue_push(moat_sandbox *sb, const moat_sandbox_event *ev)
{
	/* The bound above makes this hold; an event never silently goes. */
	if (sb->qlen < QUEUE_MAX)
		sb->queue[sb->qlen++] = *ev;
	/* Whoever queued it (a spawn or a stop reading the socket), the
	 * caller's poll must wake for it. */
	uint64_t one = 1;
	if (sb->evfd >= 0 && !sb->ev_armed)
		sb->ev_armed = write(sb->evfd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

static void queue_remove(moat_sandbox *sb, size_t i, moat_sandbox_event *ret)
{
	*ret = sb->queue[i];
	memmove(&sb->queue[i], &sb->queue[i + 1], (sb->qlen - i - 1) * sizeof(sb->queue[0]));
	sb->qlen--;
}

static void kill_sandbox(moat_sandbox *sb, moat_status why, const char *limit)
{
	if (!sb->killed) {
		sb->killed = true;
		sb->kill_reason = why;
		if (limit)
			snprintf(sb->r.limit_hit, sizeof(sb->r.limit_hit), "%s", limit);
	}
	if (!sb->reaped)
		moat__pidfd_send_signal(sb->pidfd, SIGKILL);
}

static void command_free(moat_sandbox *sb, sb_command *cmd)
{
	if (cmd->state == CMD_LIVE)
		sb->n_live--;
	cmd->state = CMD_FREE;
	/* A command that wrote to its terminal and ended before spawn
	 * returned (a short one on a loaded host: its STARTED, then its
	 * EXITED, are read in one go) still has its output in the master: the
	 * caller must get it to read what was written. */
	if (!cmd->in_spawn)
		close_fd(&cmd->pty_fd);
}

/* A command's end: its result from what the init said of it. */
static void command_ended(moat_sandbox *sb, sb_command *cmd, int status, const moat_ctl_exit_usage *u)
{
	moat_sandbox_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = MOAT_SANDBOX_EVENT_EXITED;
	moat_command_result *res = &ev.command;
	res->id = cmd->id;
	res->exit_code = -1;
	res->wall_ms = (moat__now_ns() - cmd->t0) / 1000000;
	if (u) {
		res->cpu_user_ms = u->utime_us > 0 ? (uint64_t)u->utime_us / 1000 : 0;
		res->cpu_sys_ms = u->stime_us > 0 ? (uint64_t)u->stime_us / 1000 : 0;
		/* Only a peak above what the kernel carried over from the
		 * init is the command's own (moat_ctl_exit_usage); below it
		 * no figure is given: 0, unknown. */
		res->max_rss_bytes =
			u->maxrss_kb > 0 && u->maxrss_kb > u->inherited_kb ? (uint64_t)u->maxrss_kb * 1024 : 0;
	}
	if (cmd->setup_failed) {
		res->status = MOAT_STATUS_SETUP_ERROR;
		res->exit_status = 125;
	} else if (cmd->exec_failed) {
		res->status = MOAT_STATUS_EXITED;
		res->exit_code = cmd->start_errno == ENOENT ? 127 : 126;
		res->exit_status = res->exit_code;
	} else if (WIFEXITED(status)) {
		res->status = MOAT_STATUS_EXITED;
		res->exit_code = WEXITSTATUS(status);
		res->exit_status = res->exit_code;
	} else {
		res->status = MOAT_STATUS_SIGNALED;
		res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
		res->exit_status = 128 + res->signal;
	}
	snprintf(res->error, sizeof(res->error), "%s", cmd->error);
	/* The limit it met, as a run's result names it: the one its sandbox
	 * was killed for, else the cgroup's counters read now (an OOM kill,
	 * a fork refused), before the limits' poll may have seen them. */
	if (sb->killed && sb->r.limit_hit[0])
		snprintf(res->limit, sizeof(res->limit), "%s", sb->r.limit_hit);
	else if (res->status != MOAT_STATUS_SETUP_ERROR) {
		const char *l = moat__limits_command_limit(sb->lim, &sb->c->limits, res->status, res->signal,
							   res->cpu_user_ms + res->cpu_sys_ms);
		if (l)
			snprintf(res->limit, sizeof(res->limit), "%s", l);
	}
	if (cmd->id == sb->first_id && !sb->first_ended) {
		sb->first = *res;
		sb->first_ended = true;
	}
	command_free(sb, cmd);
	queue_push(sb, &ev);
}

/* The gateway serves the proxy port the init passed out; when it cannot
 * start, the sandbox fails its setup (a sandbox promised egress that finds
 * a dead port would only fail later and less clearly). */
static void start_gateway(moat_sandbox *sb, int fd)
{
	moat_error gerr = {0};
	moat_netproxy_fds fds = {.proxy = fd,
				 .transparent = TAKE_FD(sb->transparent_fd),
				 .dns = TAKE_FD(sb->dns_fd),
				 .upstream_netns = TAKE_FD(sb->upstream_netns_fd)};
	if (moat__netproxy_start(sb->opts.gateway, &fds, &sb->netproxy, &gerr) < 0) {
		sb->setup_failed = true;
		sb->setup_errno = gerr.code;
		moat_error_format(&gerr, sb->r.error, sizeof(sb->r.error));
		kill_sandbox(sb, MOAT_STATUS_SETUP_ERROR, NULL);
	}
}

static void add_stats(moat_filetrail_stats *to, const moat_filetrail_stats *s)
{
	to->notifications += s->notifications;
	to->events += s->events;
	to->unreadable += s->unreadable;
	to->racy += s->racy;
	to->fanotify |= s->fanotify;
	to->fanotify_events += s->fanotify_events;
	to->fanotify_lost += s->fanotify_lost;
}

/* Stops the trails whose thread has left (done) or all of them, adding
 * their counts to the sandbox's. */
static void stop_trails(moat_sandbox *sb, bool all)
{
	size_t k = 0;
	for (size_t i = 0; i < sb->n_trails; i++) {
		if (!all && !moat__filetrail_done(sb->trails[i])) {
			sb->trails[k++] = sb->trails[i];
			continue;
		}
		moat_filetrail_stats st = {0};
		moat__filetrail_session_started(sb->trails[i]);
		moat__filetrail_stop(sb->trails[i], &st);
		add_stats(&sb->trail_stats, &st);
	}
	sb->n_trails = k;
}

/* A command's notify listener (sent before its STARTED): its own trail.
 * One whose processes are all gone has left its thread, and goes first,
 * so a long-lived sandbox holds a trail only per command that still has
 * a process. With MOAT_SANDBOX_MAX_COMMANDS of them still held, the
 * listener is closed: the kernel then fails the command's watched calls
 * with ENOSYS (seccomp_unotify(2)), which is the trail failing closed. */
static void start_trail(moat_sandbox *sb, int fd)
{
	stop_trails(sb, false);
	if (sb->n_trails >= MOAT_SANDBOX_MAX_COMMANDS) {
		close(fd);
		return;
	}
	moat_filetrail *t = NULL;
	moat_filetrail_opts o = {.audit = sb->opts.audit,
				 .fanotify = sb->opts.ends_with_first_command,
				 .record = sb->c->audit_files && sb->opts.audit,
				 .rules = sb->c->exec_approve,
				 .n_rules = sb->c->n_exec_approve,
				 .approvals = sb->opts.approvals};
	if (moat__filetrail_start_opts(fd, &o, &t, NULL) < 0)
		return;
	/* In a sandbox of many commands session.start is in the log since
	 * create: this command's events need not wait. */
	if (sb->session_logged)
		moat__filetrail_session_started(t);
	sb->trails[sb->n_trails++] = t;
}

/* The init's own report of the layers in force in the sandbox and on its
 * commands (READY: what each will get; STARTED: what this one got). */
static void take_layers(moat_sandbox *sb, const moat_ctl_msg *m)
{
	moat_isolation in;
	memcpy(&in, m->text, sizeof(in));
	moat_isolation *iso = &sb->r.isolation;
	iso->rootfs_readonly = in.rootfs_readonly;
	iso->proc_masked = in.proc_masked;
	iso->no_new_privs = in.no_new_privs;
	iso->caps_dropped = in.caps_dropped;
	iso->seccomp = in.seccomp;
	memcpy(iso->seccomp_profile, in.seccomp_profile, sizeof(iso->seccomp_profile));
	iso->seccomp_rules = in.seccomp_rules;
	iso->landlock_abi = in.landlock_abi;
	memcpy(iso->landlock_rules, in.landlock_rules, sizeof(iso->landlock_rules));
}

static void handle_msg(moat_sandbox *sb, const moat_ctl_msg *m, int fd)
{
	sb_command *cmd = m->type == MOAT_CTL_FD ? find_command(sb, (uint32_t)m->a) : find_command(sb, (uint32_t)m->b);
	switch (m->type) {
	case MOAT_CTL_READY:
		/* What each command will be confined with, before any runs:
		 * a session's report (session.start) says it. */
		take_layers(sb, m);
		sb->ready = true;
		break;
	case MOAT_CTL_SETUP_ERROR:
		sb->setup_failed = true;
		sb->setup_errno = m->a;
		snprintf(sb->r.error, sizeof(sb->r.error), "%s", m->text);
		/* In a sandbox that ends with its first command, that command's
		 * confinement failing is the sandbox's setup failing: its
		 * process is still reaped, and its EXITED follows. */
		if (cmd && cmd->state == CMD_STARTING) {
			cmd->state = CMD_LIVE;
			cmd->start_answered = true;
			sb->n_live++;
			cmd->start_errno = m->a;
			cmd->setup_failed = true;
			snprintf(cmd->error, sizeof(cmd->error), "%s", m->text);
		}
		break;
	case MOAT_CTL_FD:
		if (m->b == MOAT_CTL_FD_PROXY_LISTENER && fd >= 0 && !sb->netproxy && sb->opts.gateway)
			start_gateway(sb, TAKE_FD(fd));
		else if (m->b == MOAT_CTL_FD_TRANSPARENT_LISTENER && fd >= 0 && sb->transparent_fd < 0 && !sb->netproxy)
			sb->transparent_fd = TAKE_FD(fd);
		else if (m->b == MOAT_CTL_FD_DNS_STUB && fd >= 0 && sb->dns_fd < 0 && !sb->netproxy)
			sb->dns_fd = TAKE_FD(fd);
		else if (m->b == MOAT_CTL_FD_OUT_TMPFS && fd >= 0 && sb->out_fs < 0)
			sb->out_fs = TAKE_FD(fd);
		else if (m->b == MOAT_CTL_FD_PTY_MASTER && fd >= 0 && cmd && cmd->pty_fd < 0)
			cmd->pty_fd = TAKE_FD(fd);
		else if (m->b == MOAT_CTL_FD_NOTIFY && fd >= 0 &&
			 ((sb->opts.audit && sb->c->audit_files) || sb->c->n_exec_approve))
			start_trail(sb, TAKE_FD(fd));
		break;
	case MOAT_CTL_STARTED:
		if (!cmd || cmd->state != CMD_STARTING)
			break;
		cmd->pid = (pid_t)m->a;
		cmd->state = CMD_LIVE;
		cmd->start_answered = true;
		sb->n_live++;
		take_layers(sb, m);
		/* A sandbox that ends with its first command is that command's
		 * run: its session.start says how the command was confined
		 * and, without the trail, that it was executed. */
		if (sb->opts.audit && sb->opts.ends_with_first_command && !sb->session_logged) {
			moat__audit_run_started(sb->opts.audit, sb->c, &sb->r.isolation, cmd->pid, sb->n_trails > 0);
			sb->session_logged = true;
			for (size_t i = 0; i < sb->n_trails; i++)
				moat__filetrail_session_started(sb->trails[i]);
		}
		break;
	case MOAT_CTL_EXEC_FAILED:
	case MOAT_CTL_SPAWN_FAILED:
		if (!cmd || cmd->state != CMD_STARTING)
			break;
		/* Its process exists until the init reaps it: EXITED follows. */
		cmd->state = CMD_LIVE;
		cmd->start_answered = true;
		sb->n_live++;
		cmd->start_errno = m->a;
		if (m->type == MOAT_CTL_EXEC_FAILED) {
			cmd->exec_failed = true;
			snprintf(cmd->error, sizeof(cmd->error), "%s: %s", m->text,
				 m->a == ENOENT ? "command not found" : strerror(m->a));
		} else {
			cmd->setup_failed = true;
			snprintf(cmd->error, sizeof(cmd->error), "%s", m->text);
		}
		break;
	case MOAT_CTL_REFUSED:
		if (!cmd || cmd->state != CMD_STARTING)
			break;
		cmd->refused = true;
		cmd->start_answered = true;
		cmd->start_errno = m->a;
		snprintf(cmd->error, sizeof(cmd->error), "%s", m->text);
		command_free(sb, cmd);
		break;
	case MOAT_CTL_EXITED:
		if (!cmd || cmd->state != CMD_LIVE)
			break;
		{
			moat_ctl_exit_usage u;
			memcpy(&u, m->text, sizeof(u));
			command_ended(sb, cmd, m->a, &u);
		}
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

static void epoll_del(moat_sandbox *sb, int fd)
{
	if (fd >= 0 && sb->epfd >= 0)
		epoll_ctl(sb->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Reads every control message waiting. At end-of-file the socket leaves
 * the poll set: the init is gone or going, its pidfd says when. */
static void drain_ctl(moat_sandbox *sb)
{
	while (readable(sb->ctl)) {
		moat_ctl_msg m;
		int fd = -1;
		if (moat__ctl_recv(sb->ctl, &m, &fd) < 0) {
			epoll_del(sb, sb->ctl);
			close_fd(&sb->ctl);
			return;
		}
		handle_msg(sb, &m, fd);
	}
}

/* The init is gone, and with it every process of its pid namespace. A
 * command the init could not report is ended by its sandbox: SIGKILL. */
static void sandbox_gone(moat_sandbox *sb)
{
	drain_ctl(sb);
	int st;
	while (wait4(sb->pid, &st, __WALL, &sb->ru) < 0 && errno == EINTR)
		;
	sb->reaped = true;
	sb->r.wall_ms = (moat__now_ns() - sb->t0) / 1000000;
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++) {
		sb_command *cmd = &sb->cmds[i];
		if (cmd->state == CMD_LIVE) {
			if (!cmd->error[0])
				snprintf(cmd->error, sizeof(cmd->error), "ended with its sandbox");
			command_ended(sb, cmd, SIGKILL, NULL);
		} else if (cmd->state == CMD_STARTING) {
			cmd->refused = true;
			cmd->start_answered = true;
			cmd->start_errno = ESRCH;
			snprintf(cmd->error, sizeof(cmd->error), "the sandbox ended before the command started");
			command_free(sb, cmd);
		}
	}
	moat_sandbox_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = MOAT_SANDBOX_EVENT_ENDED;
	ev.status = sb->killed ? sb->kill_reason : sb->setup_failed ? MOAT_STATUS_SETUP_ERROR : MOAT_STATUS_EXITED;
	snprintf(ev.limit, sizeof(ev.limit), "%s", sb->r.limit_hit);
	queue_push(sb, &ev);
	/* Nothing is left to wait for: the descriptor the caller polls never
	 * becomes readable again. */
	epoll_del(sb, sb->ctl);
	epoll_del(sb, sb->pidfd);
	epoll_del(sb, sb->timer_fd);
	epoll_del(sb, sb->limfd);
	close_fd(&sb->ctl);
	close_fd(&sb->timer_fd);
}

/* Does whatever is ready, without blocking. */
/* Makes evfd readable exactly while the queue holds an event. */
static void publish(moat_sandbox *sb)
{
	uint64_t one = 1;
	if (sb->evfd < 0)
		return;
	if (sb->qlen > 0 && !sb->ev_armed)
		sb->ev_armed = write(sb->evfd, &one, sizeof(one)) == (ssize_t)sizeof(one);
	else if (sb->qlen == 0 && sb->ev_armed)
		sb->ev_armed = read(sb->evfd, &one, sizeof(one)) != (ssize_t)sizeof(one);
}

static void pump_sources(moat_sandbox *sb);
static void note_busy(moat_sandbox *sb);

/* Tells the limits' poll whether a command is starting or running: a
 * sandbox at rest is not polled (limits.h). */
static void note_busy(moat_sandbox *sb)
{
	bool busy = false;
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS && !busy; i++)
		busy = sb->cmds[i].state == CMD_STARTING || sb->cmds[i].state == CMD_LIVE;
	moat__limits_set_busy(sb->lim, busy);
}

static void pump(moat_sandbox *sb)
{
	pump_sources(sb);
	note_busy(sb);
	publish(sb);
}

static void pump_sources(moat_sandbox *sb)
{
	if (sb->reaped)
		return;
	drain_ctl(sb);
	uint64_t ticks;
	if (sb->timer_fd >= 0 && read(sb->timer_fd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks))
		kill_sandbox(sb, MOAT_STATUS_TIMEOUT, "wall");
	if (sb->limfd >= 0 && !sb->killed && readable(sb->limfd)) {
		const char *limit = NULL;
		moat_status v = moat__limits_check(sb->lim, &limit);
		if (v != MOAT_STATUS_EXITED)
			kill_sandbox(sb, v, limit);
	}
	if (readable(sb->pidfd))
		sandbox_gone(sb);
}

static int add_epoll(moat_sandbox *sb, int fd)
{
	if (fd < 0)
		return 0;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	return epoll_ctl(sb->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Waits for the init's READY (or its failure), serving what it sends
 * meanwhile: the proxy's listener, the capped /out. */
static int wait_ready(moat_sandbox *sb, moat_error *err)
{
	uint64_t wall = sb->c->limits.wall_ms;
	uint64_t end = wall == MOAT_UNLIMITED ? UINT64_MAX : sb->t0 + wall * 1000000ull;
	while (!sb->ready && !sb->setup_failed) {
		struct pollfd p[2] = {{.fd = sb->ctl, .events = POLLIN}, {.fd = sb->pidfd, .events = POLLIN}};
		int timeout = -1;
		if (end != UINT64_MAX) {
			uint64_t now = moat__now_ns();
			if (now >= end) {
				kill_sandbox(sb, MOAT_STATUS_TIMEOUT, "wall");
				return moat_error_set(err, ETIMEDOUT, "the sandbox's setup took longer than limits.wall");
			}
			timeout = (int)((end - now) / 1000000 + 1);
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			return moat_error_set(err, errno, "wait for the sandbox's init");
		if (p[0].revents) {
			moat_ctl_msg m;
			int fd = -1;
			if (moat__ctl_recv(sb->ctl, &m, &fd) < 0)
				break;
			handle_msg(sb, &m, fd);
		} else if (p[1].revents) {
			break;
		}
	}
	if (sb->setup_failed)
		return moat_error_set_said(err, sb->setup_errno ? sb->setup_errno : EIO, "%s", sb->r.error);
	if (!sb->ready)
		return moat_error_set(err, EIO, "the sandbox's init ended during its setup");
	return 0;
}

static void sandbox_free(moat_sandbox *sb)
{
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++)
		close_fd(&sb->cmds[i].pty_fd);
	close_fd(&sb->ctl);
	close_fd(&sb->pidfd);
	close_fd(&sb->epfd);
	close_fd(&sb->pubfd);
	close_fd(&sb->evfd);
	close_fd(&sb->timer_fd);
	close_fd(&sb->out_fs);
	close_fd(&sb->transparent_fd);
	close_fd(&sb->dns_fd);
	close_fd(&sb->upstream_netns_fd);
	moat__strv_free(sb->envp);
	free(sb);
}

/* Ends the init if it runs and reaps it. */
static void end_init(moat_sandbox *sb)
{
	if (sb->pidfd < 0 || sb->reaped)
		return;
	moat__pidfd_send_signal(sb->pidfd, SIGKILL);
	sandbox_gone(sb);
}

int moat_sandbox_create(const moat_config *config, const moat_sandbox_opts *opts, moat_sandbox **ret,
			moat_error *err)
{
	if (!config || !ret)
		return moat_error_set(err, EINVAL, "sandbox: no configuration");
	moat_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return moat_error_set(err, ENOMEM, "sandbox");
	sb->c = config;
	if (opts)
		sb->opts = *opts;
	else
		sb->opts.upstream_netns_fd = -1;
	sb->ctl = sb->pidfd = sb->epfd = sb->timer_fd = sb->limfd = sb->out_fs = sb->transparent_fd = sb->dns_fd = -1;
	sb->pubfd = sb->evfd = sb->upstream_netns_fd = -1;
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS; i++)
		sb->cmds[i].pty_fd = -1;
	moat_result_init(&sb->r);
	int r;
	/* Validation wants a command; a sandbox object starts its commands
	 * later, each checked then. */
	/* exec.approve holds a program for a person: with no queue to hold
	 * it in (moat run, judge, eval), the run is refused rather than let
	 * the program through unasked. */
	if (config->n_exec_approve && !opts->approvals) {
		r = moat_error_set(err, MOAT_EINPUT,
				   "exec.approve holds %s for a person's approval, and this run has no one to ask: "
				   "run it in a session (moat session create), where moat approve decides",
				   config->exec_approve[0].path);
		goto fail;
	}
	/* network.mode: pod names a network moat does not make: only a
	 * caller that hands one over (moat-oci, from the pod's config.json)
	 * has it, and without one the sandbox is refused, not given a
	 * network of another kind. */
	if (config->net == MOAT_NET_POD && !(sb->opts.join && sb->opts.join->netns_fd >= 0)) {
		r = moat_error_set(err, MOAT_EINPUT,
				   "network.mode: pod joins a Kubernetes pod's network namespace, which only moat-oci "
				   "is handed (linux.namespaces in a pod's config.json); this sandbox has none: use "
				   "none, proxy or transparent");
		goto fail;
	}
	/* An upstream namespace is the gateway's: a sandbox without one has
	 * no use for it, and is refused rather than given another network. */
	if (sb->opts.upstream_netns_fd >= 0) {
		if (!moat_net_uses_gateway(config->net) || !sb->opts.gateway) {
			r = moat_error_set(err, MOAT_EINPUT,
					   "an upstream network namespace is for the egress gateway; network.mode %s has none",
					   config->net == MOAT_NET_POD ? "pod" : "none");
			goto fail;
		}
		sb->upstream_netns_fd = fcntl(sb->opts.upstream_netns_fd, F_DUPFD_CLOEXEC, 3);
		if (sb->upstream_netns_fd < 0) {
			r = moat_error_set(err, errno, "upstream network namespace");
			goto fail;
		}
	}
	moat_config checked = *config;
	char *placeholder[] = {"/bin/true", NULL};
	if (!checked.argv || !checked.argv[0])
		checked.argv = placeholder;
	r = moat__sandbox_prepare(&checked, sb->opts.gateway, &sb->r.isolation, err);
	if (r < 0)
		goto fail;
	r = moat__limits_prepare(&config->limits, sb->opts.cgroup, &sb->lim, err);
	if (r < 0)
		goto fail;
	if (moat__sandbox_build_env(config, &sb->envp) < 0) {
		r = moat_error_set(err, ENOMEM, "environment");
		goto fail;
	}
	moat_boot boot = {
		.c = config,
		.lim = sb->lim,
		.ends_with_first = sb->opts.ends_with_first_command,
		.say_ready = !sb->opts.ends_with_first_command,
		.file_trail = (config->audit_files && sb->opts.audit) || config->n_exec_approve,
		.iso = &sb->r.isolation,
		.join = sb->opts.join,
		.keep_ns_fds = sb->opts.keep_ns_fds,
		.secrets = sb->opts.secrets,
		.audit = sb->opts.audit,
		.after_clone = sb->opts.after_clone,
		.after_clone_arg = sb->opts.after_clone_arg,
	};
	r = moat__sandbox_boot(&boot, err);
	sb->ctl = boot.ctl;
	sb->pidfd = boot.pidfd;
	sb->pid = boot.pid;
	sb->t0 = boot.t0;
	if (r < 0) {
		/* What the init said of its failure says more than ours. */
		moat_ctl_msg m;
		int fd = -1;
		if (readable(sb->ctl) && moat__ctl_recv(sb->ctl, &m, &fd) == 0 && m.type == MOAT_CTL_SETUP_ERROR)
			r = moat_error_set_said(err, m.a, "%s", m.text);
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	/* A sandbox that ends with its first command is a run, whose creator
	 * spawns that command at once: its SPAWN waits on the socket behind
	 * the setup, and the init's answer to it (or its setup error) comes
	 * in spawn. No READY is said or awaited: on a loaded host each
	 * wake-up of a waiting process costs a time slice. */
	if (!sb->opts.ends_with_first_command && (r = wait_ready(sb, err)) < 0)
		goto fail;
	sb->epfd = epoll_create1(EPOLL_CLOEXEC);
	sb->pubfd = epoll_create1(EPOLL_CLOEXEC);
	sb->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sb->epfd < 0 || sb->pubfd < 0 || sb->evfd < 0) {
		r = moat_error_set(err, errno, "epoll");
		goto fail;
	}
	struct epoll_event pe = {.events = EPOLLIN, .data.fd = sb->epfd};
	struct epoll_event ee = {.events = EPOLLIN, .data.fd = sb->evfd};
	if (epoll_ctl(sb->pubfd, EPOLL_CTL_ADD, sb->epfd, &pe) < 0 ||
	    epoll_ctl(sb->pubfd, EPOLL_CTL_ADD, sb->evfd, &ee) < 0) {
		r = moat_error_set(err, errno, "epoll");
		goto fail;
	}
	if (config->limits.wall_ms != MOAT_UNLIMITED) {
		/* The limit counts from the clone: setup time included. */
		uint64_t spent = (moat__now_ns() - sb->t0) / 1000000;
		uint64_t wall = config->limits.wall_ms > spent ? config->limits.wall_ms - spent : 1;
		sb->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec its = {.it_value = {.tv_sec = (time_t)(wall / 1000),
						      .tv_nsec = (long)(wall % 1000) * 1000000}};
		if (sb->timer_fd < 0 || timerfd_settime(sb->timer_fd, 0, &its, NULL) < 0) {
			r = moat_error_set(err, errno, "wall-clock timer");
			goto fail;
		}
	}
	sb->limfd = moat__limits_fd(sb->lim);
	if (!sb->opts.ends_with_first_command)
		moat__limits_rest_here(sb->lim);
	if ((r = add_epoll(sb, sb->ctl)) < 0 || (r = add_epoll(sb, sb->pidfd)) < 0 ||
	    (r = add_epoll(sb, sb->timer_fd)) < 0 || (r = add_epoll(sb, sb->limfd)) < 0) {
		r = moat_error_set(err, -r, "epoll");
		goto fail;
	}
	if (sb->opts.audit && !sb->opts.ends_with_first_command) {
		/* The cgroup every command runs in is the sandbox's, made by now. */
		moat__limits_describe(sb->lim, &sb->r.isolation);
		moat__audit_run_started(sb->opts.audit, config, &sb->r.isolation, 0, false);
		sb->session_logged = true;
	}
	*ret = sb;
	return 0;

fail:
	end_init(sb);
	moat__netproxy_stop(TAKE_PTR(sb->netproxy), NULL);
	stop_trails(sb, true);
	moat__limits_free(TAKE_PTR(sb->lim));
	/* A sandbox that could not be made is in the log all the same, with
	 * why: a run's audit never misses a run. */
	if (sb->opts.audit && sb->opts.ends_with_first_command) {
		moat_result *res = &sb->r;
		res->status = MOAT_STATUS_SETUP_ERROR;
		res->exit_status = 125;
		moat_error_format(err, res->error, sizeof(res->error));
		moat__audit_run_started(sb->opts.audit, config, &res->isolation, 0, false);
		moat__audit_run_finished(sb->opts.audit, config, res, NULL);
	}
	sandbox_free(sb);
	return r;
}

int moat_sandbox_fd(const moat_sandbox *sb)
{
	return sb ? sb->pubfd : -EINVAL;
}

pid_t moat_sandbox_init_pid(const moat_sandbox *sb)
{
	return sb && !sb->reaped ? sb->pid : 0;
}

bool moat_sandbox_net_counters(moat_sandbox *sb, moat_sandbox_net *ret)
{
	*ret = (moat_sandbox_net){0};
	moat_gateway *gw = sb && sb->netproxy ? moat__netproxy_gateway(sb->netproxy) : NULL;
	if (!gw)
		return false;
	moat_gateway_counters c;
	moat_gateway_get_counters(gw, &c);
	*ret = (moat_sandbox_net){.allowed = c.allowed, .denied = c.denied, .bytes_up = c.bytes_up, .bytes_down = c.bytes_down};
	return true;
}

/* The sandbox's environment with the spec's entries set over it. */
static int spawn_env(const moat_sandbox *sb, char *const *extra, char ***ret, moat_error *err)
{
	_cleanup_strv_free_ char **env = NULL;
	for (char **e = sb->envp; e && *e; e++)
		if (moat__strv_push(&env, *e) < 0)
			return moat_error_set(err, ENOMEM, "environment");
	size_t n = 0;
	for (char *const *x = extra; x && *x; x++, n++) {
		const char *eq = strchr(*x, '=');
		if (!eq || eq == *x)
			return moat_error_set(err, EINVAL, "env %s: not NAME=VALUE", *x);
		if (n >= MOAT_MAX_ENV)
			return moat_error_set(err, E2BIG, "env: more than %d variables", MOAT_MAX_ENV);
		size_t nlen = (size_t)(eq - *x) + 1;
		bool replaced = false;
		for (char **e = env; e && *e && !replaced; e++) {
			if (strncmp(*e, *x, nlen) == 0) {
				char *d = strdup(*x);
				if (!d)
					return moat_error_set(err, ENOMEM, "environment");
				free(*e);
				*e = d;
				replaced = true;
			}
		}
		if (!replaced && moat__strv_push(&env, *x) < 0)
			return moat_error_set(err, ENOMEM, "environment");
	}
	*ret = TAKE_PTR(env);
	return 0;
}

/* The spec in a sealed memfd: the init reads exactly what was checked. */
static int spec_memfd(const moat_sandbox *sb, const moat_spawn_spec *spec, moat_error *err)
{
	_cleanup_strv_free_ char **env = NULL;
	int r = spawn_env(sb, spec->env, &env, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	r = moat__spawnspec_encode(spec->argv, env, spec->cwd, spec->tty ? MOAT_SPAWNSPEC_TTY : 0,
				   spec->tty ? spec->tty_rows : 0, spec->tty ? spec->tty_cols : 0, &buf, &len, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = memfd_create("moat-spawn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return moat_error_set(err, errno, "spawn spec: memfd");
	r = moat__write_all(fd, buf, len);
	if (r < 0)
		return moat_error_set(err, -r, "spawn spec: write");
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return moat_error_set(err, errno, "spawn spec: seal");
	return TAKE_FD(fd);
}

static const char *stream_name(int i)
{
	return i == 0 ? "stdin" : i == 1 ? "stdout" : "stderr";
}

int moat_sandbox_spawn(moat_sandbox *sb, const moat_spawn_spec *spec, moat_command *ret, moat_error *err)
{
	if (!sb || !spec || !ret)
		return moat_error_set(err, EINVAL, "spawn: no sandbox or no spec");
	if (!spec->argv || !spec->argv[0])
		return moat_error_set(err, EINVAL, "spawn: no command");
	pump(sb);
	/* A run's init may have failed its setup before its command was
	 * asked for: what it said is the reason. */
	if (sb->setup_failed)
		return moat_error_set_said(err, sb->setup_errno ? sb->setup_errno : EIO, "%s", sb->r.error);
	/* Asked first: whether or not that first command has ended yet (a
	 * race the caller cannot see), a second one is refused the same way. */
	if (sb->opts.ends_with_first_command && sb->spawned)
		return moat_error_set(err, EALREADY, "spawn %s: this sandbox ends with its first command",
				      spec->argv[0]);
	if (sb->reaped || sb->stopping || sb->killed)
		return moat_error_set(err, ESRCH, "spawn %s: the sandbox has ended", spec->argv[0]);
	if (sb->n_live + sb->qlen >= MOAT_SANDBOX_MAX_COMMANDS)
		return moat_error_set(err, EAGAIN,
				      "spawn %s: %d commands are running or ended unreported in this sandbox, the "
				      "most it holds at once",
				      spec->argv[0], MOAT_SANDBOX_MAX_COMMANDS);
	int given[3] = {spec->stdin_fd, spec->stdout_fd, spec->stderr_fd};
	for (int i = 0; i < 3; i++) {
		if (given[i] < 0)
			continue;
		if (spec->tty)
			return moat_error_set(err, EINVAL, "spawn %s: %s given with a terminal", spec->argv[0],
					      stream_name(i));
		if (fcntl(given[i], F_GETFD) < 0)
			return moat_error_set(err, errno, "spawn %s: %s", spec->argv[0], stream_name(i));
		/* The caller's terminal never crosses into the sandbox
		 * (TIOCSTI, bubblewrap CVE-2017-5226). */
		if (isatty(given[i]))
			return moat_error_set(err, EINVAL,
					      "spawn %s: %s is a terminal; ask for a terminal of the sandbox's own",
					      spec->argv[0], stream_name(i));
	}
	_cleanup_close_ int specfd = spec_memfd(sb, spec, err);
	if (specfd < 0)
		return specfd;
	_cleanup_close_ int null_in = -1, null_out = -1;
	int fds[4];
	for (int i = 0; i < 3; i++) {
		fds[i] = given[i];
		if (fds[i] >= 0)
			continue;
		int *nfd = i == 0 ? &null_in : &null_out;
		if (*nfd < 0 && (*nfd = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC)) < 0)
			return moat_error_set(err, errno, "open /dev/null");
		fds[i] = *nfd;
	}
	fds[3] = specfd;

	sb_command *cmd = NULL;
	for (size_t i = 0; i < MOAT_SANDBOX_MAX_COMMANDS && !cmd; i++)
		if (sb->cmds[i].state == CMD_FREE)
			cmd = &sb->cmds[i];
	if (!cmd)
		return moat_error_set(err, EAGAIN, "spawn %s: no free command slot", spec->argv[0]);
	if (++sb->next_id == 0)
		sb->next_id = 1;
	close_fd(&cmd->pty_fd);
	*cmd = (sb_command){
		.state = CMD_STARTING, .id = sb->next_id, .pty_fd = -1, .in_spawn = true, .t0 = moat__now_ns()};
	note_busy(sb);
	int e = moat__ctl_send_fds(sb->ctl, MOAT_CTL_SPAWN, (int)cmd->id, fds, 4);
	if (e < 0) {
		cmd->in_spawn = false;
		command_free(sb, cmd);
		/* An init that failed its setup meanwhile said why before it
		 * closed its end: that, not a broken pipe, is the error. */
		drain_ctl(sb);
		if (sb->setup_failed)
			return moat_error_set_said(err, sb->setup_errno ? sb->setup_errno : EIO, "%s", sb->r.error);
		return moat_error_set(err, -e, "spawn %s: ask the sandbox's init", spec->argv[0]);
	}
	sb->spawned = true;
	if (sb->first_id == 0)
		sb->first_id = cmd->id;
	/* The init answers once the command's execve is done or failed (it
	 * starts it vfork-style, so that is all it waits for). */
	while (!cmd->start_answered) {
		/* The wall timer and the cgroup's events too: a run's setup
		 * may still be under way. */
		struct pollfd p = {.fd = sb->epfd, .events = POLLIN};
		if (poll(&p, 1, -1) < 0 && errno != EINTR) {
			cmd->in_spawn = false;
			return moat_error_set(err, errno, "spawn %s: wait for the init", spec->argv[0]);
		}
		pump(sb);
	}
	/* The slot may be free already: the command may have ended too. */
	cmd->in_spawn = false;
	_cleanup_close_ int pty_fd = TAKE_FD(cmd->pty_fd);
	if (cmd->refused && sb->setup_failed)
		return moat_error_set_said(err, sb->setup_errno ? sb->setup_errno : EIO, "%s", sb->r.error);
	if (cmd->refused && sb->killed && sb->kill_reason == MOAT_STATUS_TIMEOUT)
		return moat_error_set(err, ETIMEDOUT, "spawn %s: the sandbox's setup took longer than limits.wall",
				      spec->argv[0]);
	if (cmd->refused)
		return moat_error_set_said(err, cmd->start_errno ? cmd->start_errno : EIO, "spawn %s: %s",
					   spec->argv[0], cmd->error);
	/* The first command of a sandbox that ends with it was logged with
	 * session.start; with the trail on, the kernel's own account of the
	 * exec is in the log instead. */
	if (sb->opts.audit && cmd->pid > 0 && !sb->opts.ends_with_first_command && !sb->c->audit_files)
		moat_audit_exec(sb->opts.audit, spec->argv[0], spec->argv, cmd->pid, 1, "supervisor", NULL);
	ret->id = cmd->id;
	ret->pid = cmd->pid;
	ret->pty_fd = TAKE_FD(pty_fd);
	return 0;
}

int moat_sandbox_dispatch(moat_sandbox *sb, moat_sandbox_event *ret, moat_error *err)
{
	if (!sb || !ret)
		return moat_error_set(err, EINVAL, "dispatch: no sandbox");
	pump(sb);
	if (sb->qlen == 0)
		return 0;
	queue_remove(sb, 0, ret);
	publish(sb);
	if (ret->type == MOAT_SANDBOX_EVENT_ENDED)
		sb->ended_given = true;
	return 1;
}

int moat_sandbox_wait(moat_sandbox *sb, uint32_t id, int timeout_ms, moat_command_result *ret, moat_error *err)
{
	if (!sb || !ret)
		return moat_error_set(err, EINVAL, "wait: no sandbox");
	uint64_t end = timeout_ms < 0 ? UINT64_MAX : moat__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		pump(sb);
		for (size_t i = 0; i < sb->qlen; i++) {
			if (sb->queue[i].type == MOAT_SANDBOX_EVENT_EXITED && sb->queue[i].command.id == id) {
				moat_sandbox_event ev;
				queue_remove(sb, i, &ev);
				publish(sb);
				*ret = ev.command;
				return 0;
			}
		}
		if (!find_command(sb, id))
			return moat_error_set(err, ESRCH, "wait: no command %u in this sandbox", id);
		int timeout = -1;
		if (end != UINT64_MAX) {
			uint64_t now = moat__now_ns();
			if (now >= end)
				return moat_error_set(err, ETIMEDOUT, "wait: command %u still runs", id);
			timeout = (int)((end - now + 999999) / 1000000);
		}
		struct pollfd p = {.fd = sb->epfd, .events = POLLIN};
		if (poll(&p, 1, timeout) < 0) {
			if (errno == EINTR)
				return moat_error_set(err, EINTR, "wait: interrupted");
			return moat_error_set(err, errno, "wait");
		}
	}
}

int moat_sandbox_signal(moat_sandbox *sb, uint32_t id, int sig, moat_error *err)
{
	if (!sb)
		return moat_error_set(err, EINVAL, "signal: no sandbox");
	if (sig <= 0 || sig >= NSIG)
		return moat_error_set(err, EINVAL, "signal %d: not a signal", sig);
	pump(sb);
	sb_command *cmd = find_command(sb, id);
	if (!cmd || cmd->state != CMD_LIVE || sb->reaped)
		return moat_error_set(err, ESRCH, "signal: no command %u runs in this sandbox", id);
	int e = moat__ctl_send(sb->ctl, MOAT_CTL_SIGNAL, sig, (int)id, NULL);
	if (e < 0)
		return moat_error_set(err, -e, "signal command %u", id);
	return 0;
}

int moat_sandbox_stop(moat_sandbox *sb, moat_error *err)
{
	if (!sb)
		return moat_error_set(err, EINVAL, "stop: no sandbox");
	if (sb->reaped || sb->stopping)
		return 0;
	sb->stopping = true;
	/* The init ends every process and reports each command's end; if it
	 * cannot be asked, the kernel ends them all with it. */
	if (sb->ctl < 0 || moat__ctl_send(sb->ctl, MOAT_CTL_SHUTDOWN, 0, 0, NULL) < 0)
		moat__pidfd_send_signal(sb->pidfd, SIGKILL);
	return 0;
}

void moat__sandbox_kill(moat_sandbox *sb, moat_status why, const char *limit)
{
	kill_sandbox(sb, why, limit);
}

moat_result *moat__sandbox_result(moat_sandbox *sb)
{
	return &sb->r;
}

/* The sandbox's status and exit. One that ends with its first command
 * reports that command's end, as a run always has; a limit or a setup
 * failure outranks it. */
static void compose_status(moat_sandbox *sb, moat_result *r)
{
	const moat_command_result *f = &sb->first;
	if (sb->killed && sb->kill_reason != MOAT_STATUS_SETUP_ERROR) {
		r->status = sb->kill_reason;
		r->exit_code = -1;
		r->signal = SIGKILL;
		r->exit_status = 128 + SIGKILL;
		/* It finished on its own right at the output cap. */
		if (r->status == MOAT_STATUS_OUTPUT_LIMIT && sb->first_ended && f->status == MOAT_STATUS_EXITED &&
		    f->error[0] == '\0')
			r->signal = 0;
	} else if (sb->setup_failed) {
		r->status = MOAT_STATUS_SETUP_ERROR;
		r->exit_status = 125;
	} else if (!sb->opts.ends_with_first_command) {
		r->status = MOAT_STATUS_EXITED;
		r->exit_code = 0;
		r->exit_status = 0;
	} else if (sb->first_ended) {
		r->status = f->status;
		if (f->status != MOAT_STATUS_SETUP_ERROR)
			r->exit_code = f->exit_code;
		r->signal = f->signal;
		r->exit_status = f->exit_status;
		if (f->error[0])
			snprintf(r->error, sizeof(r->error), "%s", f->error);
		if (f->status == MOAT_STATUS_SETUP_ERROR && !sb->setup_errno)
			sb->setup_errno = EIO;
	} else {
		r->status = MOAT_STATUS_SETUP_ERROR;
		r->exit_status = 125;
		if (!r->error[0])
			snprintf(r->error, sizeof(r->error), "the sandbox's init ended before the command did");
	}
}

/* The result's error text can quote the command line or what the init
 * reported: redacted like everything else. */
static void redact_error(moat_sandbox *sb, moat_result *r)
{
	if (!sb->opts.secrets || moat_secrets_count(sb->opts.secrets) == 0)
		return;
	_cleanup_free_ char *o = NULL;
	if (moat_redact(moat_secrets_redactor(sb->opts.secrets), r->error, strlen(r->error), &o, NULL) > 0)
		snprintf(r->error, sizeof(r->error), "%s", o);
}

int moat_sandbox_destroy(moat_sandbox *sb, moat_result *ret, moat_error *err)
{
	moat_error dummy = {0};
	if (!err)
		err = &dummy;
	if (!sb)
		return 0;
	const moat_config *c = sb->c;
	moat_result *r = &sb->r;
	end_init(sb);
	moat__netproxy_stop(TAKE_PTR(sb->netproxy), NULL);

	r->cpu_user_ms = (uint64_t)sb->ru.ru_utime.tv_sec * 1000 + (uint64_t)sb->ru.ru_utime.tv_usec / 1000;
	r->cpu_sys_ms = (uint64_t)sb->ru.ru_stime.tv_sec * 1000 + (uint64_t)sb->ru.ru_stime.tv_usec / 1000;
	r->cpu_ms = r->cpu_user_ms + r->cpu_sys_ms;
	compose_status(sb, r);
	redact_error(sb, r);
	moat__limits_account(sb->lim, &c->limits, r, sb->killed);
	moat__out_enforced(c, r);
	/* Nothing of the sandbox is left once its cgroup is gone. */
	moat__limits_free(TAKE_PTR(sb->lim));
	if (sb->opts.audit) {
		/* Every process is gone: the trail's listener has hung up, and
		 * what its thread holds is written before session.stop. */
		if (!sb->session_logged)
			moat__audit_run_started(sb->opts.audit, c, &r->isolation, 0, sb->n_trails > 0);
		stop_trails(sb, true);
		moat__audit_run_finished(sb->opts.audit, c, r, &sb->trail_stats);
	}
	int rc = 0;
	if (c->out_dir && (!moat__out_capped(c) || r->status != MOAT_STATUS_SETUP_ERROR)) {
		int code = 0;
		if (moat__sandbox_out_finish(c, sb->out_fs, r, &code) < 0)
			rc = moat_error_set_said(err, code ? code : EIO, "%s", r->error);
	}
	if (rc == 0 && r->status == MOAT_STATUS_SETUP_ERROR)
		rc = moat_error_set_said(err, sb->setup_errno ? sb->setup_errno : EIO, "%s", r->error);
	if (ret)
		*ret = *r;
	sandbox_free(sb);
	return rc;
}

bool moat__sandbox_report(moat_sandbox *sb, moat_result *ret)
{
	moat_result_init(ret);
	ret->isolation = sb->r.isolation;
	bool cpu_known = moat__limits_report(sb->lim, &sb->c->limits, ret);
	moat__out_enforced(sb->c, ret);
	return cpu_known;
}

size_t moat__sandbox_cgroup_mounts(moat_sandbox *sb, moat_cgroup_mount ret[_MOAT_CG_MAX])
{
	return sb->lim ? moat__limits_cgroup_mounts(sb->lim, ret) : 0;
}

const moat_isolation *moat__sandbox_isolation(const moat_sandbox *sb) { return &sb->r.isolation; }
