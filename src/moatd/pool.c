/* moatd's warm pool (pool.h): sandboxes made ahead as keepers, one request
 * each, refilled in the background one at a time. */
#include "pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy.h"
#include "syscalls.h"
#include "util.h"

/* A refill that failed is tried again after this long, not at once: a
 * host that cannot make sandboxes must not have moatd fork in a loop. */
#define RETRY_S 5
/* How often moatd looks whether its ready sandboxes still live (one that
 * ended by itself, MOATD_POOL_IDLE_MS, is dropped and replaced). */
#define CHECK_S 60
/* Refills under way at once, at most. In the background one keeps the
 * pool's CPU to one sandbox's making at a time; a second is started only
 * while runs take sandboxes faster than one refill makes them (the pool
 * below half its size). Beyond that, each request that finds its pool
 * empty has one made for it and waits for it, as it would wait for a
 * cold one (which costs more to make through moatd), up to as many at
 * once as the pool holds (at least two, and this many); past them a
 * request runs cold. */
#define MOATD_POOL_FILLS 8
/* The start latency histogram's bounds, seconds. */
static const double start_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25};

/* A ready sandbox. moatd holds a connection to its keeper (said hello
 * already, so a run costs no connect) and a pidfd, which stops it without
 * waiting for an answer and without the race of a pid reused. */
typedef struct entry {
	char id[MOAT_KEEPER_ID_LEN];
	pid_t pid;
	char socket[PATH_MAX];
	moat_keeper *k;
	int pidfd;
	struct event *ev; /* the connection readable while ready: the keeper ended */
	struct moatd_pool *p;
	int prof;
	struct entry *next;
} entry;

typedef struct prof {
	char *yaml; /* the template: the profile's policy, its wall left to moatd */
	entry *ready;
	unsigned n_ready;
	uint64_t hits, misses, refills, refill_failures, waits;
} prof;

static const char *const cold_reasons[] = {"policy", "files", "env", "options", "limits", "profile", "other"};

struct moatd_pool_run {
	moatd_pool *p;
	moat_keeper *k;
	pid_t pid;
	int pidfd;
	char socket[PATH_MAX];
	char sandbox[MOAT_KEEPER_ID_LEN]; /* its record's name */
	uint32_t id;
	struct event *ev, *timer;
	moatd_pool_run_cb cb;
	void *arg;
	const char *limit;
	bool stopped, spawned;
	uint64_t t0; /* when the request took the sandbox */
	/* Queued (no sandbox was ready, one is being made for it): what
	 * its spawn needs, the caller's streams duplicated. */
	bool queued;
	int prof;
	char **argv, **env, *cwd;
	int std[3];
	uint64_t time_ms;
	char fail[256]; /* why a queued run ended unstarted */
	int fail_code;
	moatd_pool_run *next;
};

/* A refill under way: a keeper moatd started (its child), which says on
 * fd, its setup channel, whether it is ready. */
typedef struct filling {
	struct moatd_pool *p;
	pid_t pid; /* 0: this slot is free */
	int fd, prof;
	char buf[MOAT_KEEPER_READY_MAX];
	size_t len;
	struct event *ev;
} filling;

/* A keeper moatd started and no longer uses, to be reaped once it ended
 * (keepers are moatd's children: moat_keeper_spawn_process). */
typedef struct reaping {
	pid_t pid;
	int pidfd;
	struct event *ev;
	struct moatd_pool *p;
	struct reaping *next;
} reaping;

struct moatd_pool {
	struct event_base *base;
	moatd_pool_conf conf;
	char moat[PATH_MAX];
	char dir[PATH_MAX]; /* STATE/pool: one record per ready sandbox */
	char **kenv;        /* the keepers' environment */
	prof pr[MOATD_POOL_MAX_PROFILES];
	filling fill[MOATD_POOL_FILLS];
	struct event *tick, *refill;
	reaping *reap;
	moatd_pool_run *runs;
	bool closing;
	uint64_t cold[ELEMENTSOF(cold_reasons)];
	uint64_t start_buckets[ELEMENTSOF(start_bounds)], start_count;
	double start_sum;
};

static void fill_next(moatd_pool *p);
static bool queue_serve(moatd_pool *p, struct entry *e);
static void queue_fail(moatd_pool *p, int pi, const char *why);
static void run_copies_free(moatd_pool_run *r);

static void record_path(const moatd_pool *p, const char *id, char *ret, size_t len)
{
	snprintf(ret, len, "%s/%s", p->dir, id);
}

/* Ends a keeper moatd made (connect, stop): its sandbox and everything in
 * it go, and the keeper exits. */
static void keeper_end(const char *socket)
{
	moat_error err = {0};
	_cleanup_keeper_ moat_keeper *k = NULL;
	if (moat_keeper_connect(socket, &k, &err) == 0)
		(void)moat_keeper_stop(k, &err);
}

/* The records an earlier moatd left: their keepers are stopped, never
 * handed out (their policy was that moatd's, and one of them may have
 * been taken by a request that moatd did not live to see end). */
static void reap_left(moatd_pool *p)
{
	DIR *d = opendir(p->dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!moat__keeper_id_valid(e->d_name))
			continue;
		_cleanup_free_ char *text = NULL;
		char path[PATH_MAX];
		record_path(p, e->d_name, path, sizeof(path));
		if (moat__read_file_at(AT_FDCWD, path, PATH_MAX + 64, &text) >= 0) {
			char *sock = strchr(text, ' ');
			char *nl = sock ? strchr(sock, '\n') : NULL;
			if (nl) {
				*nl = '\0';
				keeper_end(sock + 1);
			}
		}
		unlink(path);
	}
	if (d)
		closedir(d);
}

static void reaping_free(moatd_pool *p, reaping *w)
{
	for (reaping **q = &p->reap; *q; q = &(*q)->next)
		if (*q == w) {
			*q = w->next;
			break;
		}
	if (w->ev)
		event_free(w->ev);
	if (w->pidfd >= 0)
		close(w->pidfd);
	free(w);
}

/* Reaps what ended; true when w was (and is freed). */
static bool reaping_try(reaping *w)
{
	int st;
	pid_t r = waitpid(w->pid, &st, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return false;
	reaping_free(w->p, w);
	return true;
}

static void reaping_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)reaping_try(arg);
}

/* Keeper pid (moatd's child), stopped or about to be, is reaped once it
 * ended; pidfd (its, or -1) is taken over. Its end makes the pidfd
 * readable; without one, the pool's tick looks. */
static void reap_later(moatd_pool *p, pid_t pid, int pidfd)
{
	if (pid <= 0) {
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	reaping *w = calloc(1, sizeof(*w));
	if (!w) {
		/* Left a zombie until moatd ends: better than waiting here. */
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	w->p = p;
	w->pid = pid;
	w->pidfd = pidfd >= 0 ? pidfd : (int)syscall(SYS_pidfd_open, pid, 0);
	w->next = p->reap;
	p->reap = w;
	if (reaping_try(w))
		return;
	if (w->pidfd >= 0 && (w->ev = event_new(p->base, w->pidfd, EV_READ, reaping_cb, w)))
		event_add(w->ev, NULL);
}

/* Ends a keeper by its pidfd: SIGTERM, which its loop answers by stopping
 * the sandbox and exiting; moatd does not wait for it. */
static void keeper_term(int pidfd)
{
	if (pidfd >= 0)
		(void)moat__pidfd_send_signal(pidfd, SIGTERM);
}

/* Forgets a ready or taken sandbox (its record goes), stopping it first
 * when stop. */
static void entry_drop(moatd_pool *p, entry *e, bool stop)
{
	char path[PATH_MAX];
	if (stop && e->pidfd >= 0)
		keeper_term(e->pidfd);
	else if (stop)
		keeper_end(e->socket);
	if (e->ev)
		event_free(e->ev);
	moat_keeper_close(e->k);
	reap_later(p, e->pid, e->pidfd);
	record_path(p, e->id, path, sizeof(path));
	unlink(path);
	free(e);
}

/* A ready sandbox's keeper said something, or its connection closed: it
 * ended (its idle end, or killed). Dropped and made again. */
static void entry_gone(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	entry *e = arg;
	moatd_pool *p = e->p;
	prof *pr = &p->pr[e->prof];
	for (entry **q = &pr->ready; *q; q = &(*q)->next)
		if (*q == e) {
			*q = e->next;
			pr->n_ready--;
			break;
		}
	entry_drop(p, e, true);
	fill_next(p);
}

/* --- refill */

static void fill_free(filling *f)
{
	if (f->ev)
		event_free(f->ev);
	f->ev = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->pid = 0;
}

/* Refill f's keeper said whether it is ready (and closed its channel):
 * it joins the ready list, or is stopped and reaped. */
static void fill_done(filling *f)
{
	moatd_pool *p = f->p;
	prof *pr = &p->pr[f->prof];
	pid_t pid = f->pid;
	moat_keeper_info info;
	moat_error err = {0};
	bool ok = moat_keeper_ready_parse(f->buf, f->len, &info, &err) == 0 && info.pid == pid;
	int profi = f->prof;
	fill_free(f);
	entry *e = ok ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		/* Not ready: the keeper ends by itself, after removing what
		 * it made. */
		if (ok)
			keeper_end(info.socket);
		reap_later(p, pid, -1);
		pr->refill_failures++;
		queue_fail(p, profi, err.msg[0] ? err.msg : "out of memory");
		/* Tried again on the next tick. */
		return;
	}
	snprintf(e->id, sizeof(e->id), "%s", info.id);
	snprintf(e->socket, sizeof(e->socket), "%s", info.socket);
	e->pid = pid;
	e->p = p;
	e->prof = profi;
	e->pidfd = -1;
	char path[PATH_MAX];
	record_path(p, e->id, path, sizeof(path));
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* Left unclaimed (moatd killed and never started again), it ends by
	 * itself. The keeper answers at once: it is waiting in its loop. */
	if (fd >= 0 && dprintf(fd, "%d %s\n", pid, e->socket) > 0 && moat_keeper_connect(e->socket, &e->k, &err) == 0 &&
	    moat_keeper_pid(e->k) == pid && moat_keeper_lifetime(e->k, 0, MOATD_POOL_IDLE_MS, -1, &err) == 0 &&
	    (e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) >= 0 &&
	    (e->ev = event_new(p->base, moat_keeper_fd(e->k), EV_READ, entry_gone, e)) && event_add(e->ev, NULL) == 0) {
		pr->refills++;
		/* A request waiting for this profile takes it at once. */
		if (!queue_serve(p, e)) {
			e->next = pr->ready;
			pr->ready = e;
			pr->n_ready++;
		}
		if (!p->closing)
			fill_next(p);
		return;
	}
	entry_drop(p, e, true);
	pr->refill_failures++;
	queue_fail(p, profi, err.msg[0] ? err.msg : "its keeper did not start");
}

static void fill_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	filling *f = arg;
	size_t room = sizeof(f->buf) - 1 - f->len;
	ssize_t n = room ? read(fd, f->buf + f->len, room) : 0;
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		f->len += (size_t)n;
		return;
	}
	fill_done(f);
}

/* Runs queued for profile pi and not stopped. */
static unsigned queued_for(const moatd_pool *p, int pi)
{
	unsigned n = 0;
	for (moatd_pool_run *r = p->runs; r; r = r->next)
		n += r->queued && !r->stopped && r->prof == pi;
	return n;
}

/* Starts the refills the pool needs: the background's one (two while
 * the pool is below half), and one for each queued request. */
static void fill_next(moatd_pool *p)
{
	if (p->closing)
		return;
	for (;;) {
		filling *f = NULL;
		unsigned busy = 0, have[MOATD_POOL_MAX_PROFILES] = {0}, ready = 0, size = 0, waiting = 0;
		for (size_t i = 0; i < MOATD_POOL_FILLS; i++) {
			if (p->fill[i].pid) {
				busy++;
				have[p->fill[i].prof]++;
			} else if (!f)
				f = &p->fill[i];
		}
		int best = -1;
		unsigned gap = 0;
		for (size_t i = 0; i < p->conf.n; i++) {
			unsigned q = queued_for(p, (int)i), got = p->pr[i].n_ready + have[i];
			ready += p->pr[i].n_ready;
			size += p->conf.e[i].size;
			waiting += q;
			/* A queued request is a sandbox wanted beyond the size. */
			if (p->conf.e[i].size + q > got && p->conf.e[i].size + q - got > gap) {
				gap = p->conf.e[i].size + q - got;
				best = (int)i;
			}
		}
		unsigned limit = 1 + (ready * 2 < size) + waiting;
		if (limit > size && limit > 2)
			limit = size > 2 ? size : 2;
		if (!f || best < 0 || busy >= limit)
			return;
		moat_error err = {0};
		moat_keeper_start_opts o = {.exe = p->moat, .envp = p->kenv};
		if (moat_keeper_spawn_process(p->pr[best].yaml, &o, &f->pid, &f->fd, &err) < 0) {
			p->pr[best].refill_failures++;
			return;
		}
		f->p = p;
		f->prof = best;
		f->len = 0;
		if (fcntl(f->fd, F_SETFL, O_NONBLOCK) < 0 ||
		    !(f->ev = event_new(p->base, f->fd, EV_READ | EV_PERSIST, fill_read, f)) ||
		    event_add(f->ev, NULL) < 0) {
			/* Without a watch its answer is never read: end it. */
			kill(f->pid, SIGKILL);
			reap_later(p, f->pid, -1);
			fill_free(f);
			p->pr[best].refill_failures++;
			return;
		}
	}
}

/* After a run: its reply goes out first, then the refill starts, so that
 * a sandbox's making never delays the answer of the request that took
 * one. */
static void refill_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	fill_next(arg);
}

static void fill_soon(moatd_pool *p)
{
	/* A timer of zero runs in this loop turn, before the reply's write:
	 * one millisecond puts it after. */
	struct timeval tv = {.tv_usec = 1000};
	if (!p->refill || evtimer_add(p->refill, &tv) < 0)
		fill_next(p);
}

/* Refills what is missing (a refill that failed is tried again here). */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moatd_pool *p = arg;
	for (reaping *w = p->reap, *next; w; w = next) {
		next = w->next;
		if (w->pidfd < 0)
			(void)reaping_try(w);
	}
	fill_next(p);
	bool full = true;
	for (size_t i = 0; i < p->conf.n; i++)
		full &= p->pr[i].n_ready >= p->conf.e[i].size;
	struct timeval tv = {.tv_sec = full ? CHECK_S : RETRY_S};
	evtimer_add(p->tick, &tv);
}

static char **keeper_env(void)
{
	/* What a keeper needs of moatd's environment: its runtime folder,
	 * and where a sanitizer build reports; nothing else. */
	static const char *const names[] = {"XDG_RUNTIME_DIR", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS",
					    "LSAN_OPTIONS"};
	char **env = NULL;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		const char *v = getenv(names[i]);
		_cleanup_free_ char *e = NULL;
		if (v && (asprintf(&e, "%s=%s", names[i], v) < 0 || moat__strv_push(&env, e) < 0))
			break;
	}
	if (!env)
		moat__strv_push(&env, "PATH=/usr/bin:/bin");
	return env;
}

int moatd_pool_new(struct event_base *base, const moatd_pool_conf *conf, const char *moat, const char *state,
		   moatd_pool **ret, moat_error *err)
{
	moatd_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return moat_error_set(err, ENOMEM, "pool");
	p->base = base;
	p->conf = *conf;
	for (size_t i = 0; i < MOATD_POOL_FILLS; i++)
		p->fill[i].fd = -1;
	snprintf(p->moat, sizeof(p->moat), "%s", moat);
	snprintf(p->dir, sizeof(p->dir), "%s/pool", state);
	int r = 0;
	if (mkdir(p->dir, 0700) < 0 && errno != EEXIST) {
		r = moat_error_set(err, errno, "pool: %s", p->dir);
		goto fail;
	}
	p->kenv = keeper_env();
	for (size_t i = 0; i < conf->n; i++) {
		_cleanup_policy_ moat_policy *pol = NULL;
		if ((r = moat_policy_load_profile(conf->e[i].profile, &pol, err)) < 0)
			goto fail;
		/* A sandbox's wall clock runs from its creation: a pooled
		 * one waits, so its wall limit is moatd's, counted from the
		 * spawn (moatd_pool_run_start). Everything else is the
		 * profile's, exactly as a cold run gets it. */
		pol->limits.wall_ms = MOAT_UNLIMITED;
		if (!(p->pr[i].yaml = moat_policy_to_yaml(pol))) {
			r = moat_error_set(err, ENOMEM, "pool: %s", conf->e[i].profile);
			goto fail;
		}
	}
	reap_left(p);
	if (!(p->tick = evtimer_new(base, tick_cb, p)) || !(p->refill = evtimer_new(base, refill_cb, p))) {
		r = moat_error_set(err, ENOMEM, "pool");
		goto fail;
	}
	tick_cb(-1, 0, p);
	*ret = p;
	return 0;
fail:
	moatd_pool_free(p);
	return r;
}

void moatd_pool_free(moatd_pool *p)
{
	if (!p)
		return;
	p->closing = true;
	for (size_t i = 0; i < MOATD_POOL_FILLS; i++) {
		filling *f = &p->fill[i];
		if (!f->pid)
			continue;
		/* The keeper it started is found in no record: let it say it
		 * is ready, then stop it. */
		if (f->ev)
			event_free(f->ev);
		f->ev = NULL;
		(void)fcntl(f->fd, F_SETFL, 0);
		for (;;) {
			ssize_t n = read(f->fd, f->buf + f->len, sizeof(f->buf) - 1 - f->len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || (f->len += (size_t)n) >= sizeof(f->buf) - 1)
				break;
		}
		fill_done(f);
	}
	for (size_t i = 0; i < p->conf.n; i++) {
		for (entry *e = p->pr[i].ready, *next; e; e = next) {
			next = e->next;
			entry_drop(p, e, true);
		}
		free(p->pr[i].yaml);
	}
	for (moatd_pool_run *r = p->runs, *next; r; r = next) {
		next = r->next;
		/* The spawn was attached: closing ends the command, and the
		 * signal the sandbox. */
		if (r->k) {
			moat_keeper_close(r->k);
			keeper_term(r->pidfd);
			reap_later(p, r->pid, r->pidfd);
			char path[PATH_MAX];
			record_path(p, r->sandbox, path, sizeof(path));
			unlink(path);
		}
		if (r->ev)
			event_free(r->ev);
		if (r->timer)
			event_free(r->timer);
		run_copies_free(r);
		free(r);
	}
	if (p->tick)
		event_free(p->tick);
	if (p->refill)
		event_free(p->refill);
	/* Keepers not ended yet are left to the system's reaper. */
	while (p->reap)
		reaping_free(p, p->reap);
	moat__strv_free(p->kenv);
	free(p);
}

/* --- runs */

static void run_copies_free(moatd_pool_run *r)
{
	moat__strv_free(TAKE_PTR(r->argv));
	moat__strv_free(TAKE_PTR(r->env));
	free(TAKE_PTR(r->cwd));
	for (size_t i = 0; i < 3; i++)
		if (r->std[i] >= 0)
			close(TAKE_FD(r->std[i]));
}

static void run_free(moatd_pool_run *r)
{
	moatd_pool *p = r->p;
	for (moatd_pool_run **q = &p->runs; *q; q = &(*q)->next)
		if (*q == r) {
			*q = r->next;
			break;
		}
	if (r->ev)
		event_free(r->ev);
	if (r->timer)
		event_free(r->timer);
	/* Never used again: the sandbox and its keeper end now, without
	 * moatd waiting for them (the reply is on its way). */
	if (r->k) {
		keeper_term(r->pidfd);
		reap_later(p, r->pid, r->pidfd);
		moat_keeper_close(r->k);
		char path[PATH_MAX];
		record_path(p, r->sandbox, path, sizeof(path));
		unlink(path);
	}
	run_copies_free(r);
	free(r);
	/* The refill starts once the run is over and its reply is out, not
	 * while it runs: a sandbox's making never competes with the request
	 * that took one. */
	fill_soon(p);
}

static void observe_start(moatd_pool *p, uint64_t ns);

/* The keeper answered the run's spawn: spawned (its start, timed), then
 * its exit, or why not. */
static void on_wait(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moatd_pool_run *r = arg;
	moatd_pool_end end;
	memset(&end, 0, sizeof(end));
	moat_error err = {0};
	moat_command cmd;
	int rc = moat_keeper_spawn_wait_recv(r->k, &cmd, &end.x, &end.sandbox, &err);
	if (rc == MOAT_KEEPER_RECV_OTHER)
		return;
	if (rc == MOAT_KEEPER_RECV_SPAWNED) {
		r->id = cmd.id;
		r->spawned = true;
		observe_start(r->p, moat__now_ns() - r->t0);
		return;
	}
	if (rc == MOAT_KEEPER_RECV_EXIT)
		end.ok = true;
	else {
		snprintf(end.error, sizeof(end.error), "%s", err.msg);
		/* Refused before it started: the request's own fault, or
		 * the sandbox's. */
		if (!r->spawned)
			end.spawn_error = err.code ? err.code : EIO;
	}
	end.limit = r->limit;
	r->cb(r->arg, &end);
	json_decref(end.sandbox);
	run_free(r);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moatd_pool_run_stop(arg, "wall");
}

/* A queued run ends without having started: stopped, or its sandbox
 * could not be made. */
static void queued_end(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moatd_pool_run *r = arg;
	moatd_pool_end end;
	memset(&end, 0, sizeof(end));
	snprintf(end.error, sizeof(end.error), "%s", r->fail[0] ? r->fail : "stopped before a sandbox was ready");
	end.limit = r->limit;
	end.spawn_error = r->fail_code ? r->fail_code : ECANCELED;
	r->cb(r->arg, &end);
	run_free(r);
}

void moatd_pool_run_stop(moatd_pool_run *r, const char *limit)
{
	if (!r || r->stopped)
		return;
	r->stopped = true;
	r->limit = limit;
	if (r->queued) {
		/* Not from here: the caller may be in the middle of its own
		 * handling of this run. */
		struct timeval tv = {0};
		if (!r->timer)
			r->timer = evtimer_new(r->p->base, queued_end, r);
		if (r->timer)
			evtimer_add(r->timer, &tv);
		return;
	}
	/* The run's connection waits for the command's end, which the stop
	 * brings. */
	keeper_term(r->pidfd);
}

static void observe_start(moatd_pool *p, uint64_t ns)
{
	double sec = (double)ns / 1e9;
	for (size_t i = 0; i < ELEMENTSOF(start_bounds); i++)
		if (sec <= start_bounds[i])
			p->start_buckets[i]++;
	p->start_count++;
	p->start_sum += sec;
}

/* Sends spec's spawn to a ready sandbox of pr, taken off the ready list
 * (*ret). A ready sandbox whose keeper ended a moment ago (before its
 * watch said so) fails the send: dropped, and the next one tried.
 * -ENOENT: none was ready; -EINVAL, -E2BIG: the request cannot be sent. */
static int spawn_ready(moatd_pool *p, prof *pr, const moat_spawn_spec *spec, entry **ret, moat_error *err)
{
	entry *e;
	while ((e = pr->ready)) {
		pr->ready = e->next;
		pr->n_ready--;
		/* Taken: it leaves the ready list for good. Its record stays
		 * until its run is over, so that a moatd killed meanwhile has
		 * its successor stop it. */
		event_free(TAKE_PTR(e->ev));
		moat_error serr = {0};
		/* Attached: if moatd dies, the keeper kills the command. */
		int rc = moat_keeper_spawn_wait_send(e->k, spec, true, &serr);
		if (rc == 0) {
			*ret = e;
			return 0;
		}
		entry_drop(p, e, true);
		if (rc == -EINVAL || rc == -E2BIG) {
			/* The request's own fault: it would fail anywhere. */
			*err = serr;
			return rc;
		}
	}
	return -ENOENT;
}

/* r's spawn went to e's keeper: r takes the sandbox over and watches
 * for the keeper's answers. */
static int run_attach(moatd_pool_run *r, entry *e, uint64_t time_ms, moat_error *err)
{
	moatd_pool *p = r->p;
	p->pr[e->prof].hits++;
	r->k = TAKE_PTR(e->k);
	r->pid = e->pid;
	r->pidfd = TAKE_FD(e->pidfd);
	snprintf(r->socket, sizeof(r->socket), "%s", e->socket);
	snprintf(r->sandbox, sizeof(r->sandbox), "%s", e->id);
	free(e);
	r->ev = event_new(p->base, moat_keeper_fd(r->k), EV_READ | EV_PERSIST, on_wait, r);
	if (!r->ev || event_add(r->ev, NULL) < 0)
		return moat_error_set(err, ENOMEM, "pool");
	if (time_ms && time_ms != MOAT_UNLIMITED) {
		struct timeval tv = {.tv_sec = (time_t)(time_ms / 1000), .tv_usec = (suseconds_t)(time_ms % 1000) * 1000};
		if (!(r->timer = evtimer_new(p->base, on_timer, r)) || evtimer_add(r->timer, &tv) < 0)
			return moat_error_set(err, ENOMEM, "pool");
	}
	return 0;
}

static void run_spec(const moatd_pool_run *r, moat_spawn_spec *spec)
{
	moat_spawn_spec_init(spec);
	spec->argv = r->argv;
	spec->env = r->env;
	spec->cwd = r->cwd;
	spec->stdin_fd = r->std[0];
	spec->stdout_fd = r->std[1];
	spec->stderr_fd = r->std[2];
}

/* The oldest run queued for profile pi, or NULL. */
static moatd_pool_run *queue_oldest(moatd_pool *p, int pi)
{
	moatd_pool_run *found = NULL;
	for (moatd_pool_run *r = p->runs; r; r = r->next)
		if (r->queued && !r->stopped && r->prof == pi)
			found = r; /* the list is newest first */
	return found;
}

/* Ends queued run r unstarted, why (errno code), from the loop. */
static void queue_end(moatd_pool_run *r, int code, const char *why)
{
	snprintf(r->fail, sizeof(r->fail), "%s", why);
	r->fail_code = code;
	moatd_pool_run_stop(r, NULL);
}

/* A sandbox just made: the oldest request waiting for its profile takes
 * it. false: none waits (e is for the ready list). */
static bool queue_serve(moatd_pool *p, entry *e)
{
	moatd_pool_run *r = p->closing ? NULL : queue_oldest(p, e->prof);
	if (!r)
		return false;
	moat_spawn_spec spec;
	run_spec(r, &spec);
	moat_error err = {0};
	int rc = moat_keeper_spawn_wait_send(e->k, &spec, true, &err);
	if (rc == -EINVAL || rc == -E2BIG) {
		/* Nothing was sent: the sandbox stays ready for another. */
		queue_end(r, -rc, err.msg);
		return false;
	}
	event_free(TAKE_PTR(e->ev));
	if (rc < 0) {
		/* Its keeper ended meanwhile: r waits for the next one. */
		entry_drop(p, e, true);
		return true;
	}
	r->queued = false;
	r->t0 = moat__now_ns();
	run_copies_free(r);
	if (run_attach(r, e, r->time_ms, &err) < 0) {
		r->queued = true;
		queue_end(r, ENOMEM, err.msg);
	}
	return true;
}

/* A refill of profile pi failed: a request waiting for it would wait
 * for ever if no other refill of prof is under way. */
static void queue_fail(moatd_pool *p, int pi, const char *why)
{
	moatd_pool_run *r = p->closing ? NULL : queue_oldest(p, pi);
	if (!r)
		return;
	char msg[256];
	snprintf(msg, sizeof(msg), "no sandbox could be made for it: %s", why);
	queue_end(r, EAGAIN, msg);
}

/* Whether every run queued for profile pi has a refill of pi under way
 * to wait for. */
static bool queue_covered(const moatd_pool *p, int pi)
{
	unsigned n = 0;
	for (size_t i = 0; i < MOATD_POOL_FILLS; i++)
		n += p->fill[i].pid && p->fill[i].prof == pi;
	return n >= queued_for(p, pi);
}

int moatd_pool_run_start(moatd_pool *p, const moatd_pool_plan *plan, char *const *argv, int in, int out, int errfd,
			 moatd_pool_run_cb cb, void *arg, moatd_pool_run **ret, moat_error *err)
{
	uint64_t t0 = moat__now_ns();
	prof *pr = &p->pr[plan->profile];
	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = argv;
	spec.env = plan->n_env ? (char *const *)plan->env : NULL;
	spec.cwd = plan->cwd;
	spec.stdin_fd = in;
	spec.stdout_fd = out;
	spec.stderr_fd = errfd;
	/* The spawn asks for the command's end in the same request
	 * (moat_keeper_spawn_wait_send): moatd does not wait for the
	 * keeper's answer here, and sends no wait of its own after it. */
	entry *e = NULL;
	int rc = spawn_ready(p, pr, &spec, &e, err);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc == -ENOENT && p->closing) {
		pr->misses++;
		return -ENOENT;
	}
	moatd_pool_run *r = calloc(1, sizeof(*r));
	if (!r) {
		if (e)
			entry_drop(p, e, true);
		return moat_error_set(err, ENOMEM, "pool");
	}
	r->p = p;
	r->cb = cb;
	r->arg = arg;
	r->t0 = t0;
	r->pidfd = -1;
	r->prof = plan->profile;
	r->time_ms = plan->time_ms;
	for (size_t i = 0; i < 3; i++)
		r->std[i] = -1;
	if (!e) {
		const int std[3] = {in, out, errfd};
		bool ok = (r->argv = moat__strv_copy(argv)) != NULL &&
			  (!spec.env || (r->env = moat__strv_copy((char **)spec.env)) != NULL) &&
			  (!plan->cwd || (r->cwd = strdup(plan->cwd)) != NULL);
		for (size_t i = 0; i < 3 && ok; i++)
			ok = std[i] < 0 || (r->std[i] = fcntl(std[i], F_DUPFD_CLOEXEC, 3)) >= 0;
		if (!ok) {
			run_copies_free(r);
			free(r);
			pr->misses++;
			return -ENOENT;
		}
		/* None ready: the request waits for a sandbox of its
		 * profile made for it (or one already under way), which is
		 * sooner ready than a cold one made through moatd. When none
		 * can be started (MOATD_POOL_FILLS under way) it runs cold. */
		r->queued = true;
		r->next = p->runs;
		p->runs = r;
		fill_next(p);
		if (!queue_covered(p, r->prof)) {
			p->runs = r->next;
			run_copies_free(r);
			free(r);
			pr->misses++;
			return -ENOENT;
		}
		pr->waits++;
		*ret = r;
		return 0;
	}
	if ((rc = run_attach(r, e, plan->time_ms, err)) < 0)
		goto fail;
	r->next = p->runs;
	p->runs = r;
	*ret = r;
	return 0;
fail:
	if (r->ev)
		event_free(r->ev);
	if (r->timer)
		event_free(r->timer);
	keeper_term(r->pidfd);
	reap_later(p, r->pid, r->pidfd);
	moat_keeper_close(r->k);
	char path[PATH_MAX];
	record_path(p, r->sandbox, path, sizeof(path));
	unlink(path);
	free(r);
	fill_soon(p);
	return rc;
}

void moatd_pool_count_cold(moatd_pool *p, const char *why)
{
	size_t i = 0;
	while (i < ELEMENTSOF(cold_reasons) - 1 && !(why && strcmp(why, cold_reasons[i]) == 0))
		i++;
	p->cold[i]++;
}

void moatd_pool_metrics(moatd_pool *p, struct evbuffer *b)
{
	evbuffer_add_printf(b, "# HELP moatd_pool_ready Pooled sandboxes ready to take, by profile.\n"
			       "# TYPE moatd_pool_ready gauge\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b, "moatd_pool_ready{profile=\"%s\"} %u\n", p->conf.e[i].profile, p->pr[i].n_ready);
	evbuffer_add_printf(b, "# HELP moatd_pool_size Pooled sandboxes kept ready, as configured.\n"
			       "# TYPE moatd_pool_size gauge\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b, "moatd_pool_size{profile=\"%s\"} %u\n", p->conf.e[i].profile, p->conf.e[i].size);
	evbuffer_add_printf(b, "# HELP moatd_pool_hits_total Runs served by a pooled sandbox.\n"
			       "# TYPE moatd_pool_hits_total counter\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b, "moatd_pool_hits_total{profile=\"%s\"} %llu\n", p->conf.e[i].profile,
				    (unsigned long long)p->pr[i].hits);
	evbuffer_add_printf(b, "# HELP moatd_pool_misses_total Runs that got a cold sandbox: their pool was empty "
			       "(reason empty), or the pool's template cannot serve them.\n"
			       "# TYPE moatd_pool_misses_total counter\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b, "moatd_pool_misses_total{profile=\"%s\",reason=\"empty\"} %llu\n",
				    p->conf.e[i].profile, (unsigned long long)p->pr[i].misses);
	for (size_t i = 0; i < ELEMENTSOF(cold_reasons); i++)
		evbuffer_add_printf(b, "moatd_pool_misses_total{profile=\"\",reason=\"%s\"} %llu\n", cold_reasons[i],
				    (unsigned long long)p->cold[i]);
	evbuffer_add_printf(b, "# HELP moatd_pool_waits_total Runs that found their pool empty and waited for a "
			       "sandbox being made (counted in hits once served).\n"
			       "# TYPE moatd_pool_waits_total counter\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b, "moatd_pool_waits_total{profile=\"%s\"} %llu\n", p->conf.e[i].profile,
				    (unsigned long long)p->pr[i].waits);
	evbuffer_add_printf(b, "# HELP moatd_pool_refills_total Pooled sandboxes made, by result.\n"
			       "# TYPE moatd_pool_refills_total counter\n");
	for (size_t i = 0; i < p->conf.n; i++)
		evbuffer_add_printf(b,
				    "moatd_pool_refills_total{profile=\"%s\",result=\"ok\"} %llu\n"
				    "moatd_pool_refills_total{profile=\"%s\",result=\"failed\"} %llu\n",
				    p->conf.e[i].profile, (unsigned long long)p->pr[i].refills, p->conf.e[i].profile,
				    (unsigned long long)p->pr[i].refill_failures);
	evbuffer_add_printf(b, "# HELP moatd_pool_start_seconds Time to take a pooled sandbox and start a run's "
			       "command in it.\n# TYPE moatd_pool_start_seconds histogram\n");
	for (size_t i = 0; i < ELEMENTSOF(start_bounds); i++)
		evbuffer_add_printf(b, "moatd_pool_start_seconds_bucket{le=\"%g\"} %llu\n", start_bounds[i],
				    (unsigned long long)p->start_buckets[i]);
	evbuffer_add_printf(b, "moatd_pool_start_seconds_bucket{le=\"+Inf\"} %llu\n",
			    (unsigned long long)p->start_count);
	evbuffer_add_printf(b, "moatd_pool_start_seconds_sum %.6f\nmoatd_pool_start_seconds_count %llu\n", p->start_sum,
			    (unsigned long long)p->start_count);
}
