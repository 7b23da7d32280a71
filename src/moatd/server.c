/* moatd's server: libevent's evhttp on a unix socket (and optionally TCP
 * with TLS), routing each request to libmoat or to a `moat` process.
 *
 * moatd owns no sandbox's memory. A session lives in its keeper, which
 * moatd finds again from the runtime folder after a restart; a run, a
 * session's creation, an exec and a judge are each a `moat` process forked
 * and exec'd for that request alone, so nothing of another request's data
 * is in a sandbox's init, and a moatd crash takes no sandbox with it. */
#include "server.h"

#include <arpa/inet.h>
#include <limits.h>
#include <dirent.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <grp.h>
#include <openssl/ssl.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "audit.h"
#include "keeper.h"
#include "policy.h"
#include "pool.h"
#include "sandbox-internal.h" /* MOAT_ROOT_HOST_UID: the sandbox's host user, as root */
#include "session.h"
#include "units.h"
#include "util.h"

#define MAX_IDENTS 256

typedef struct srv srv;
typedef struct job job;

typedef struct conn {
	srv *s;
	struct evhttp_connection *evcon;
	job *job;
	struct conn *next;
} conn;

typedef struct ident {
	char id[96];
	unsigned inflight;
	/* When its last runs started (monotonic ns), a ring as long as its
	 * runs_per_minute: a sliding minute, not a calendar one that a burst
	 * across its edge would pass twice. */
	uint64_t *runs;
	size_t n_runs, next_run;
	uint64_t cpu_ms; /* CPU time of its runs and execs, kept in STATE/usage */
	bool cpu_loaded;
} ident;

typedef enum job_kind { JOB_RUN, JOB_CREATE, JOB_DELETE, JOB_EXEC, JOB_JUDGE, JOB_FOLLOW, JOB_FILE_PUT, JOB_FILE_GET } job_kind;

struct job {
	srv *s;
	job *next;
	job_kind kind;
	pid_t pid;
	int fd[2];
	struct event *ev[2];
	struct event *resume; /* the pipes paused for a client that reads slowly */
	struct evbuffer *buf[2];
	bool trunc[2];
	bool exited;
	int status;
	struct evhttp_request *req;
	conn *conn;
	bool gone; /* the client left */
	ident *who;
	char dir[PATH_MAX]; /* the job's scratch folder, removed at its end */
	char identity[96];
	char session[MOATD_ID_MAX + 1];
	char audit_path[PATH_MAX];
	/* JOB_FILE_PUT/GET: the path in the session, and the host copy */
	char file_path[PATH_MAX];
	char file_host[PATH_MAX];
	uint64_t t0;
	char result_path[PATH_MAX]; /* JOB_EXEC: its --result, for the CPU it used */
	uint64_t cpu_ms;            /* JOB_JUDGE: its cases' CPU time so far */
	/* JOB_FOLLOW: the audit log read so far, and the next look at it */
	int follow_fd;
	struct event *tick;
	unsigned ticks;
	/* A run in a pooled sandbox (pool.h): no process of moatd's; its
	 * result is made here from how the keeper says it ended. */
	bool pooled;
	moatd_pool_run *prun;
	json_t *result;
	char pool_error[256];
	int pool_code; /* the HTTP status for pool_error */
	uint64_t out_cap, out_bytes[2];
	uint64_t time_ms; /* the wall limit moatd holds for it */
};

static const double lat_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

struct srv {
	moatd_config *cfg;
	struct event_base *base;
	struct evhttp *http_unix, *http_tcp;
	SSL_CTX *ssl;
	struct event *sigchld, *sigterm, *sigint;
	uid_t self_uid;
	char moat[PATH_MAX];
	char state[PATH_MAX];
	char socket[PATH_MAX];
	bool activated; /* the socket is systemd's: left in place at exit */
	moat_audit *audit;
	moatd_pool *pool; /* NULL: no pool configured */
	conn *conns;
	unsigned n_conns;
	job *jobs;
	moat_policy **ceilings; /* cfg->tlim's policies, loaded at start */
	ident idents[MAX_IDENTS];
	size_t n_idents;
	const char *openapi;
	/* metrics */
	uint64_t requests[6];
	uint64_t refused_503, refused_429;
	uint64_t runs_by_status[8];
	uint64_t execs;
	uint64_t lat_buckets[ELEMENTSOF(lat_bounds)], lat_count;
	double lat_sum;
	/* The running keepers' figures, as asked of them at keepers_at (ns,
	 * monotonic; 0: never): see metrics_keepers. */
	uint64_t keepers_at;
	uint64_t keepers_fig[4];
};

static const char *const run_statuses[] = {"ok", "exit", "signal", "timeout", "limit", "error", "other"};

typedef struct caller {
	moatd_role role;
	char identity[96];
	ident *who;
	const moatd_token_limit *tlim; /* its token's or peer's ceiling and quotas, or NULL */
	const moat_policy *ceiling;
	char refused[192]; /* why the caller is refused whatever its role, or "" */
} caller;

/* --- replies */

static void count_reply(srv *s, int code)
{
	if (code >= 100 && code < 600)
		s->requests[code / 100]++;
}

static void reply_json(srv *s, struct evhttp_request *req, int code, json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	struct evbuffer *b = evbuffer_new();
	if (t)
		evbuffer_add_printf(b, "%s\n", t);
	free(t);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	count_reply(s, code);
	evhttp_send_reply(req, code, NULL, b);
	evbuffer_free(b);
}

static void reply_error(srv *s, struct evhttp_request *req, int code, const char *limit, const char *fmt, ...)
	_printf_(5, 6);
static void reply_error(srv *s, struct evhttp_request *req, int code, const char *limit, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	json_t *j = json_pack("{s:s}", "error", m ? m : "out of memory");
	if (limit)
		json_object_set_new(j, "limit", json_string(limit));
	free(m);
	reply_json(s, req, code, j);
}

static void audit_call(srv *s, const caller *c, moatd_route r, struct evhttp_request *req, int status,
		       const char *session)
{
	if (!s->audit)
		return;
	json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:i}", "identity", c->identity, "role", moatd_role_name(c->role),
			      "call", moatd_route_name(r), "uri", evhttp_request_get_uri(req), "status", status);
	if (session && *session)
		json_object_set_new(f, "session_key", json_string(session));
	moat_error err = {0};
	if (moat_audit_event(s->audit, "api.call", f, 0, &err) < 0)
		fprintf(stderr, "moatd: audit: %s\n", err.msg);
}

/* --- connections: counted, and told when they close */

static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
	(void)evcon;
	conn *c = arg;
	srv *s = c->s;
	if (c->job) {
		/* The client left mid-request: its command goes too. A
		 * `moat session exec` that dies closes its keeper connection,
		 * and the keeper kills the command (spawn.attached). */
		c->job->gone = true;
		c->job->conn = NULL;
		moatd_pool_run_stop(c->job->prun, NULL);
		if (c->job->pid > 0 && !c->job->exited)
			kill(c->job->pid, c->job->kind == JOB_EXEC ? SIGKILL : SIGTERM);
	}
	for (conn **p = &s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	s->n_conns--;
	free(c);
}

static conn *conn_of(srv *s, struct evhttp_request *req, bool *ret_new)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	*ret_new = false;
	for (conn *c = s->conns; c; c = c->next)
		if (c->evcon == evcon)
			return c;
	conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->s = s;
	c->evcon = evcon;
	c->next = s->conns;
	s->conns = c;
	s->n_conns++;
	evhttp_connection_set_closecb(evcon, conn_closed, c);
	*ret_new = true;
	return c;
}

/* --- callers */

static ident *ident_get(srv *s, const char *id)
{
	for (size_t i = 0; i < s->n_idents; i++)
		if (strcmp(s->idents[i].id, id) == 0)
			return &s->idents[i];
	if (s->n_idents == MAX_IDENTS)
		return NULL;
	ident *x = &s->idents[s->n_idents++];
	snprintf(x->id, sizeof(x->id), "%s", id);
	return x;
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
#define PEER_GROUPS_MAX 1024

/* A unix peer's groups, for its peer_limits entry: its primary gid, the
 * supplementary groups it connected with (SO_PEERGROUPS), and the ones
 * the group database gives its user, which it cannot shed in a user
 * namespace of its own as it can the others. More than
 * PEER_GROUPS_MAX is refused rather than cut. */
static int peer_groups(int fd, const struct ucred *cr, gid_t *gids, size_t *n, moat_error *err)
{
	gids[0] = cr->gid;
	socklen_t len = (PEER_GROUPS_MAX - 1) * sizeof(gid_t);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gids + 1, &len) < 0)
		return moat_error_set(err, EACCES, "uid:%u: its groups cannot be read (SO_PEERGROUPS: %s)",
				      (unsigned)cr->uid, strerror(errno));
	*n = 1 + len / sizeof(gid_t);
	struct passwd pw, *pwp = NULL;
	char buf[4096];
	if (getpwuid_r(cr->uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return 0;
	int more = (int)(PEER_GROUPS_MAX - *n);
	if (getgrouplist(pw.pw_name, cr->gid, gids + *n, &more) < 0)
		return moat_error_set(err, EACCES, "uid:%u: more than %d groups", (unsigned)cr->uid, PEER_GROUPS_MAX);
	*n += (size_t)more;
	return 0;
}

static int caller_of(srv *s, struct evhttp_request *req, bool tcp, caller *c)
{
	memset(c, 0, sizeof(*c));
	if (tcp) {
		const char *name = NULL;
		const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
		c->role = moatd_role_for_bearer(s->cfg, h, &name);
		snprintf(c->identity, sizeof(c->identity), "token:%s", name ? name : "-");
		c->tlim = c->role != MOATD_ROLE_NONE ? moatd_token_limit_of(s->cfg, name) : NULL;
	} else {
		struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
		struct ucred cr;
		socklen_t n = sizeof(cr);
		if (!bev || getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
			return -1;
		c->role = moatd_role_for_peer(s->cfg, s->self_uid, cr.uid, cr.gid);
		snprintf(c->identity, sizeof(c->identity), "uid:%u", (unsigned)cr.uid);
		/* moatd's own user is admin, unbounded as the host's user. */
		if (c->role != MOATD_ROLE_NONE && cr.uid != s->self_uid) {
			gid_t gids[PEER_GROUPS_MAX];
			size_t ng = 0;
			moat_error err = {0};
			if (peer_groups(bufferevent_getfd(bev), &cr, gids, &ng, &err) < 0 ||
			    moatd_peer_limit_of(s->cfg, cr.uid, gids, ng, &c->tlim, &err) < 0)
				snprintf(c->refused, sizeof(c->refused), "%s", err.msg);
		}
	}
	/* A token's limits and a peer's are one kind: from here on the
	 * ceiling and the quotas are checked the same way for both. */
	if (c->tlim)
		c->ceiling = s->ceilings[c->tlim - s->cfg->tlim];
	c->who = c->role != MOATD_ROLE_NONE ? ident_get(s, c->identity) : NULL;
	return 0;
}

/* --- session owners: a small record per session made through moatd, in
 * moatd's state folder, so that they outlive a restart as the sessions do */

static int owner_write(srv *s, const char *id, const char *identity, const char *audit_path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/owners/%s.json", s->state, id);
	json_t *j = json_pack("{s:s, s:s}", "owner", identity, "audit", audit_path);
	int r = j ? json_dump_file(j, p, JSON_COMPACT) : -1;
	json_decref(j);
	return r;
}

static json_t *owner_read(srv *s, const char *id)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/owners/%s.json", s->state, id);
	return json_load_file(p, 0, NULL);
}

static const char *owner_of(json_t *o)
{
	return o ? json_string_value(json_object_get(o, "owner")) : NULL;
}

/* Sandboxes an identity holds now: its runs under way and the sessions it
 * made that are still running. */
static uint64_t sandboxes_of(srv *s, const char *identity, unsigned inflight)
{
	moat_session_info *v = NULL;
	size_t n = 0;
	moat_error err = {0};
	uint64_t count = inflight;
	if (moat_session_list(&v, &n, &err) < 0)
		return count;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].running)
			continue;
		json_t *o = owner_read(s, v[i].id);
		const char *w = owner_of(o);
		if (w && strcmp(w, identity) == 0)
			count++;
		json_decref(o);
	}
	free(v);
	return count;
}

/* --- CPU time used, per caller: summed from the result JSON of each run
 * and exec, and kept in STATE/usage.json so that a restart forgets none */

static void usage_save(srv *s)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < s->n_idents; i++)
		if (s->idents[i].cpu_ms)
			json_object_set_new(o, s->idents[i].id, json_integer((json_int_t)s->idents[i].cpu_ms));
	char p[PATH_MAX], tmp[PATH_MAX];
	snprintf(p, sizeof(p), "%s/usage.json", s->state);
	snprintf(tmp, sizeof(tmp), "%s/usage.json.tmp", s->state);
	if (o && json_dump_file(o, tmp, JSON_COMPACT) == 0)
		rename(tmp, p);
	json_decref(o);
}

static void usage_load(srv *s, ident *w)
{
	if (w->cpu_loaded)
		return;
	w->cpu_loaded = true;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/usage.json", s->state);
	json_t *o = json_load_file(p, 0, NULL);
	json_t *v = json_object_get(o, w->id);
	if (json_is_integer(v) && json_integer_value(v) > 0)
		w->cpu_ms = (uint64_t)json_integer_value(v);
	json_decref(o);
}

static ident *ident_get(srv *s, const char *id);

static void usage_add(srv *s, const char *identity, uint64_t cpu_ms)
{
	ident *w = identity && cpu_ms ? ident_get(s, identity) : NULL;
	if (!w)
		return;
	usage_load(s, w);
	w->cpu_ms += cpu_ms;
	usage_save(s);
}

static void usage_charge(srv *s, const char *identity, json_t *result)
{
	json_t *v = json_object_get(result, "cpu_ms");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		usage_add(s, identity, (uint64_t)json_integer_value(v));
}

/* A detached exec's CPU time, charged to its owner once it ended (a
 * marker file in its folder says it was). */
static void cpu_charge_exec(srv *s, const char *execid, json_t *status)
{
	if (strcmp(json_string_value(json_object_get(status, "state")) ?: "", "exited") != 0)
		return;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/execs/%s/charged", s->state, execid);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	usage_charge(s, json_string_value(json_object_get(status, "owner")), json_object_get(status, "result"));
}

/* Every detached exec that ended and is not charged yet. */
static void execs_settle(srv *s)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/execs", s->state);
	DIR *d = opendir(p);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!moatd_exec_id_valid(e->d_name) || faccessat(dirfd(d), e->d_name, F_OK, 0) < 0)
			continue;
		char m[PATH_MAX];
		snprintf(m, sizeof(m), "%s/%s/charged", p, e->d_name);
		if (access(m, F_OK) == 0)
			continue;
		json_t *o = NULL;
		moat_error err = {0};
		if (moatd_detached_status(s->state, e->d_name, 0, &o, &err) == 0)
			cpu_charge_exec(s, e->d_name, o);
		json_decref(o);
	}
	if (d)
		closedir(d);
}

static const moatd_quota *quota_of(srv *s, const caller *c)
{
	return c->tlim && c->tlim->has_quota ? &c->tlim->quota : &s->cfg->quota[c->role];
}

/* 0, or replies 429 naming the limit. */
static int quota_check(srv *s, struct evhttp_request *req, const caller *c, bool sandbox, bool run)
{
	const moatd_quota *q = quota_of(s, c);
	if (!c->who) {
		if (!q->sandboxes && !q->runs_per_minute && !q->cpu_seconds)
			return 0;
		/* No room to count this caller: refused, not let through. */
		reply_error(s, req, 503, "callers", "too many distinct callers to count quotas for (at most %d)",
			    MAX_IDENTS);
		return -1;
	}
	ident *w = c->who;
	size_t per_min = q->runs_per_minute > 100000 ? 100000 : (size_t)q->runs_per_minute;
	uint64_t now = moat__now_ns();
	if (run && per_min) {
		if (!w->runs && !(w->runs = calloc(per_min, sizeof(*w->runs)))) {
			reply_error(s, req, 500, NULL, "out of memory");
			return -1;
		}
		/* The ring is full and its oldest start is within the minute. */
		if (w->n_runs == per_min && now - w->runs[w->next_run] < 60ull * 1000000000) {
			s->refused_429++;
			reply_error(s, req, 429, "runs_per_minute", "quota: runs_per_minute (%llu) reached for %s",
				    (unsigned long long)q->runs_per_minute, c->identity);
			return -1;
		}
	}
	if (q->cpu_seconds) {
		execs_settle(s);
		usage_load(s, w);
		if (w->cpu_ms >= q->cpu_seconds * 1000) {
			s->refused_429++;
			reply_error(s, req, 429, "cpu_seconds", "quota: cpu_seconds (%llu) used up by %s (%llu ms)",
				    (unsigned long long)q->cpu_seconds, c->identity, (unsigned long long)w->cpu_ms);
			return -1;
		}
	}
	if (sandbox && q->sandboxes && sandboxes_of(s, c->identity, c->who->inflight) >= q->sandboxes) {
		s->refused_429++;
		reply_error(s, req, 429, "sandboxes", "quota: sandboxes (%llu) reached for %s",
			    (unsigned long long)q->sandboxes, c->identity);
		return -1;
	}
	if (run && per_min) {
		w->runs[w->next_run] = now;
		w->next_run = (w->next_run + 1) % per_min;
		if (w->n_runs < per_min)
			w->n_runs++;
	}
	return 0;
}

/* --- jobs: one `moat` process per request */

static void job_free(job *j)
{
	srv *s = j->s;
	for (job **p = &s->jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	if (j->resume)
		event_free(j->resume);
	if (j->tick)
		event_free(j->tick);
	if (j->kind == JOB_FOLLOW && j->follow_fd >= 0)
		close(j->follow_fd);
	json_decref(j->result);
	for (int i = 0; i < 2; i++) {
		if (j->ev[i])
			event_free(j->ev[i]);
		if (j->fd[i] >= 0)
			close(j->fd[i]);
		if (j->buf[i])
			evbuffer_free(j->buf[i]);
	}
	if (j->conn)
		j->conn->job = NULL;
	if (j->who && j->who->inflight)
		j->who->inflight--;
	if (j->dir[0]) {
		/* The scratch folder holds only what moatd wrote there. */
		DIR *d = opendir(j->dir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		if (d)
			closedir(d);
		rmdir(j->dir);
	}
	free(j);
}

/* A request's head (its request line and headers) is read before any
 * token or role is checked, and libevent's default cap is none: a client
 * sending one without end would have moatd buffer it all. A bearer token
 * is at most 4 KiB (config.c); past this, the connection is closed. */
#define MOATD_MAX_HEAD (64 << 10)

/* Output streamed to a client waits in its connection's buffer; past this
 * much, moatd stops reading the command's pipes until the client drains it
 * (the command then blocks on its full pipe), so a slow reader costs moatd
 * bounded memory. */
#define STREAM_PAUSE_AT (1u << 20)
#define STREAM_RESUME_AT (256u << 10)

static size_t stream_pending(job *j)
{
	struct evhttp_connection *evcon = j->gone ? NULL : evhttp_request_get_connection(j->req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void stream_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	job *j = arg;
	if (!j->gone && stream_pending(j) > STREAM_RESUME_AT) {
		struct timeval tv = {.tv_usec = 50000};
		evtimer_add(j->resume, &tv);
		return;
	}
	for (int i = 0; i < 2; i++)
		if (j->ev[i])
			event_add(j->ev[i], NULL);
}

static void stream_throttle(job *j)
{
	if (j->gone || stream_pending(j) <= STREAM_PAUSE_AT)
		return;
	if (!j->resume && !(j->resume = evtimer_new(j->s->base, stream_resume, j)))
		return;
	for (int i = 0; i < 2; i++)
		if (j->ev[i])
			event_del(j->ev[i]);
	struct timeval tv = {.tv_usec = 50000};
	evtimer_add(j->resume, &tv);
}

static void stream_line(job *j, json_t *ev)
{
	char *t = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!t || j->gone)
		goto out;
	struct evbuffer *b = evbuffer_new();
	evbuffer_add_printf(b, "%s\n", t);
	evhttp_send_reply_chunk(j->req, b);
	evbuffer_free(b);
out:
	free(t);
}

static int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void read_text(const char *path, size_t max, char **ret)
{
	/* Files moatd or moat wrote into moatd's own folder: never through
	 * a link. */
	*ret = NULL;
	(void)moat__read_file_at(AT_FDCWD, path, max, ret);
}

static char *buf_text(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *t = malloc(n + 1);
	if (t) {
		evbuffer_copyout(b, t, n);
		t[n] = '\0';
	}
	return t;
}

/* moat's own message (its stderr's last line) for an error reply. */
static char *moat_message(job *j)
{
	_cleanup_free_ char *t = buf_text(j->buf[1]);
	if (!t)
		return strdup("moat failed");
	size_t n = strlen(t);
	while (n && t[n - 1] == '\n')
		t[--n] = '\0';
	char *l = strrchr(t, '\n');
	const char *m = l ? l + 1 : t;
	if (strncmp(m, "moat: ", 6) == 0)
		m += 6;
	return strdup(*m ? m : "moat failed");
}

static void observe_latency(srv *s, uint64_t ns)
{
	double sec = (double)ns / 1e9;
	for (size_t i = 0; i < ELEMENTSOF(lat_bounds); i++)
		if (sec <= lat_bounds[i])
			s->lat_buckets[i]++;
	s->lat_count++;
	s->lat_sum += sec;
}

/* A streamed exec's CPU time, from the result its moat wrote. */
static void exec_charge(job *j)
{
	_cleanup_free_ char *text = NULL;
	if (!j->result_path[0])
		return;
	read_text(j->result_path, 1u << 20, &text);
	json_t *r = text ? json_loads(text, 0, NULL) : NULL;
	usage_charge(j->s, j->identity, r);
	json_decref(r);
}

static void job_finish(job *j)
{
	srv *s = j->s;
	int code = exit_code(j->status);
	if (j->gone) {
		/* Nobody to answer: the reply frees the request libevent
		 * handed over when the connection went. */
		if (j->kind == JOB_EXEC)
			exec_charge(j);
		if (j->kind == JOB_JUDGE)
			usage_add(s, j->identity, j->cpu_ms);
		if (j->kind == JOB_EXEC || j->kind == JOB_JUDGE)
			evhttp_send_reply_end(j->req);
		else
			evhttp_send_reply(j->req, 499, "Client Closed Request", NULL);
		job_free(j);
		return;
	}
	switch (j->kind) {
	case JOB_RUN: {
		char p[PATH_MAX];
		_cleanup_free_ char *text = NULL;
		json_t *r = NULL;
		if (j->pooled)
			r = TAKE_PTR(j->result);
		else {
			snprintf(p, sizeof(p), "%s/result.json", j->dir);
			read_text(p, 1u << 20, &text);
			r = text ? json_loads(text, 0, NULL) : NULL;
		}
		if (j->pooled && !r) {
			s->runs_by_status[5]++;
			reply_error(s, j->req, j->pool_code ? j->pool_code : 500, NULL, "pooled sandbox: %s", j->pool_error);
			break;
		}
		if (!json_is_object(r)) {
			json_decref(r);
			_cleanup_free_ char *m = moat_message(j);
			s->runs_by_status[5]++;
			reply_error(s, j->req, code == 125 ? 400 : 500, NULL, "%s", m);
			break;
		}
		observe_latency(s, moat__now_ns() - j->t0);
		const char *st = json_string_value(json_object_get(r, "status"));
		size_t k = 0;
		while (k < ELEMENTSOF(run_statuses) - 1 && !(st && strcmp(st, run_statuses[k]) == 0))
			k++;
		s->runs_by_status[k]++;
		usage_charge(s, j->identity, r);
		for (int i = 0; i < 2; i++) {
			_cleanup_free_ char *t = NULL;
			size_t n = evbuffer_get_length(j->buf[i]);
			t = malloc(n + 1);
			if (t) {
				evbuffer_copyout(j->buf[i], t, n);
				moatd_json_set_bytes(r, i ? "stderr" : "stdout", i ? "stderr_base64" : "stdout_base64", t, n);
			}
			json_object_set_new(r, i ? "stderr_truncated" : "stdout_truncated", json_boolean(j->trunc[i]));
		}
		json_object_set_new(r, "pooled", json_boolean(j->pooled));
		reply_json(s, j->req, 200, r);
		break;
	}
	case JOB_CREATE: {
		_cleanup_free_ char *t = buf_text(j->buf[0]);
		json_t *r = code == 0 && t ? json_loads(t, 0, NULL) : NULL;
		const char *id = json_string_value(json_object_get(r, "id"));
		if (!id) {
			json_decref(r);
			_cleanup_free_ char *m = moat_message(j);
			reply_error(s, j->req, code == 125 ? 400 : 500, NULL, "%s", m);
			break;
		}
		owner_write(s, id, j->identity, j->audit_path);
		json_object_set_new(r, "owner", json_string(j->identity));
		json_object_del(r, "socket");
		json_object_del(r, "state_dir");
		reply_json(s, j->req, 201, r);
		break;
	}
	case JOB_DELETE: {
		if (code != 0) {
			_cleanup_free_ char *m = moat_message(j);
			reply_error(s, j->req, 500, NULL, "%s", m);
			break;
		}
		char p[PATH_MAX];
		json_t *o = owner_read(s, j->session);
		const char *a = json_string_value(json_object_get(o, "audit"));
		if (a)
			unlink(a);
		json_decref(o);
		snprintf(p, sizeof(p), "%s/owners/%s.json", s->state, j->session);
		unlink(p);
		execs_settle(s);
		moatd_detached_forget(s->state, j->session);
		reply_json(s, j->req, 200, json_pack("{s:s, s:b}", "id", j->session, "deleted", 1));
		break;
	}
	case JOB_EXEC:
		exec_charge(j);
		stream_line(j, json_pack("{s:s, s:i}", "type", "exit", "code", code));
		evhttp_send_reply_end(j->req);
		break;
	case JOB_FOLLOW: /* ended by its timer, never by an exit */
		break;
	case JOB_FILE_PUT:
	case JOB_FILE_GET: {
		/* session cp's own refusals (an escaping path, a link, a
		 * device, the session's limits) are the caller's 400. */
		if (code != 0) {
			_cleanup_free_ char *m = moat_message(j);
			if (code == 125 && m && strstr(m, "over its cap of"))
				reply_error(s, j->req, 413, "output_cap", "session files: %s", m);
			else
				reply_error(s, j->req, code == 125 ? 400 : 500, NULL, "%s", m);
			break;
		}
		if (j->kind == JOB_FILE_PUT) {
			struct stat st;
			reply_json(s, j->req, 200,
				   json_pack("{s:s, s:s, s:I}", "id", j->session, "path", j->file_path, "bytes",
					     (json_int_t)(stat(j->file_host, &st) == 0 ? st.st_size : 0)));
			break;
		}
		_cleanup_close_ int fd = open(j->file_host, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			reply_error(s, j->req, 500, NULL, "session files: the copy is not there: %s", strerror(errno));
			break;
		}
		if ((uint64_t)st.st_size > s->cfg->output_cap) {
			reply_error(s, j->req, 413, "output_cap", "session files: %s is %lld bytes, more than output_cap",
				    j->file_path, (long long)st.st_size);
			break;
		}
		struct evbuffer *out = evbuffer_new();
		if (!out || (st.st_size > 0 && evbuffer_add_file(out, TAKE_FD(fd), 0, st.st_size) < 0)) {
			if (out)
				evbuffer_free(out);
			reply_error(s, j->req, 500, NULL, "out of memory");
			break;
		}
		evhttp_add_header(evhttp_request_get_output_headers(j->req), "Content-Type", "application/octet-stream");
		count_reply(s, 200);
		evhttp_send_reply(j->req, 200, "OK", out);
		evbuffer_free(out);
		break;
	}
	case JOB_JUDGE:
		usage_add(s, j->identity, j->cpu_ms);
		if (code == 125) {
			_cleanup_free_ char *m = moat_message(j);
			stream_line(j, json_pack("{s:s, s:s}", "type", "error", "error", m ? m : "moat failed"));
		}
		evhttp_send_reply_end(j->req);
		break;
	}
	job_free(j);
}

/* moatd's orderly stop: every job's process (a moat run, judge, session
 * exec...) is asked to end (SIGTERM: a moat run stops its sandbox), given
 * JOBS_END_MS to do so, then killed; each is reaped and every job freed,
 * its client left without an answer (the connections close next). */
#define JOBS_END_MS 5000
static void jobs_end(srv *s)
{
	for (job *j = s->jobs; j; j = j->next)
		if (j->pid > 0 && !j->exited)
			kill(j->pid, SIGTERM);
	uint64_t until = moat__now_ns() + JOBS_END_MS * 1000000ull;
	for (bool left = true; left;) {
		left = false;
		for (job *j = s->jobs; j; j = j->next) {
			if (j->pid <= 0 || j->exited)
				continue;
			int st;
			pid_t r = waitpid(j->pid, &st, moat__now_ns() < until ? WNOHANG : 0);
			if (r == j->pid || (r < 0 && errno != EINTR))
				j->exited = true;
			else
				left = true;
		}
		if (left && moat__now_ns() >= until)
			for (job *j = s->jobs; j; j = j->next)
				if (j->pid > 0 && !j->exited)
					kill(j->pid, SIGKILL);
		if (left)
			usleep(10000);
	}
	while (s->jobs)
		job_free(s->jobs);
}

static void job_maybe_done(job *j)
{
	if (j->exited && j->fd[0] < 0 && j->fd[1] < 0)
		job_finish(j);
}

/* The CPU time of a judge's cases, from its lines as they pass (each
 * case's line carries its run's cpu_ms), for the caller's cpu_seconds. A
 * line longer than the cap is not a case's and is dropped. */
#define JUDGE_LINE_MAX (1u << 20)
static void judge_count(job *j, const char *buf, size_t n)
{
	evbuffer_add(j->buf[0], buf, n);
	for (;;) {
		struct evbuffer_ptr e = evbuffer_search(j->buf[0], "\n", 1, NULL);
		if (e.pos < 0) {
			if (evbuffer_get_length(j->buf[0]) > JUDGE_LINE_MAX)
				evbuffer_drain(j->buf[0], evbuffer_get_length(j->buf[0]));
			return;
		}
		char *line = malloc((size_t)e.pos + 1);
		if (line) {
			evbuffer_remove(j->buf[0], line, (size_t)e.pos);
			line[e.pos] = '\0';
			json_t *c = json_loads(line, 0, NULL);
			json_t *cpu = json_object_get(c, "cpu_ms");
			if (json_object_get(c, "case") && json_is_integer(cpu) && json_integer_value(cpu) > 0)
				j->cpu_ms += (uint64_t)json_integer_value(cpu);
			json_decref(c);
			free(line);
		}
		evbuffer_drain(j->buf[0], line ? 1 : (size_t)e.pos + 1);
	}
}

static void on_output(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	job *j = arg;
	int i = fd == j->fd[0] ? 0 : 1;
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		event_free(j->ev[i]);
		j->ev[i] = NULL;
		close(j->fd[i]);
		j->fd[i] = -1;
		job_maybe_done(j);
		return;
	}
	if (j->kind == JOB_EXEC) {
		json_t *ev = json_pack("{s:s}", "type", i ? "stderr" : "stdout");
		moatd_json_set_bytes(ev, "data", "data_base64", buf, (size_t)n);
		stream_line(j, ev);
		stream_throttle(j);
	} else if (j->kind == JOB_JUDGE && i == 0) {
		/* moat judge writes one JSON line per case: relayed as
		 * they come. */
		if (!j->gone) {
			struct evbuffer *b = evbuffer_new();
			evbuffer_add(b, buf, (size_t)n);
			evhttp_send_reply_chunk(j->req, b);
			evbuffer_free(b);
			stream_throttle(j);
		}
		judge_count(j, buf, (size_t)n);
	} else if (j->pooled) {
		/* The profile's output limit, counted as moat run counts it
		 * (stdout and stderr together): past it the sandbox ends. */
		uint64_t total = j->out_bytes[0] + j->out_bytes[1];
		size_t take = total >= j->out_cap ? 0 : (uint64_t)n < j->out_cap - total ? (size_t)n : j->out_cap - total;
		size_t have = evbuffer_get_length(j->buf[i]), cap = j->s->cfg->output_cap;
		j->out_bytes[i] += take;
		evbuffer_add(j->buf[i], buf, have >= cap ? 0 : take < cap - have ? take : cap - have);
		if (take < (size_t)n || have + take > cap)
			j->trunc[i] = true;
		if (take < (size_t)n)
			moatd_pool_run_stop(j->prun, "output");
	} else {
		size_t have = evbuffer_get_length(j->buf[i]), cap = j->s->cfg->output_cap;
		size_t take = have >= cap ? 0 : (size_t)n < cap - have ? (size_t)n : cap - have;
		evbuffer_add(j->buf[i], buf, take);
		if (take < (size_t)n)
			j->trunc[i] = true;
	}
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	srv *s = arg;
	for (job *j = s->jobs, *next; j; j = next) {
		next = j->next;
		int st;
		/* A job without a process (pid 0) must never reach waitpid,
		 * which would take any child of the process group. */
		if (j->pid <= 0 || j->exited || waitpid(j->pid, &st, WNOHANG) != j->pid)
			continue;
		j->exited = true;
		j->status = st;
		job_maybe_done(j);
	}
}

/* A memfd holding data, for the child's standard input. */
static int data_fd(const char *data, size_t len)
{
	int fd = memfd_create("moatd-stdin", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (moat__write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void job_watch(job *j, int out, int err);

static int job_spawn(job *j, char **argv, const char *stdin_data, size_t stdin_len)
{
	srv *s = j->s;
	int out[2] = {-1, -1}, err[2] = {-1, -1};
	_cleanup_close_ int in = -1;
	if (stdin_data)
		in = data_fd(stdin_data, stdin_len);
	else
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		goto fail;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		/* The child holds only its three descriptors (the rest are
		 * O_CLOEXEC) and default signal handling. */
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* A process whose client was moatd goes with moatd: an exec's
		 * client at once (the keeper then kills the command), a run
		 * orderly. Creating and removing a session finish. */
		if (j->kind == JOB_EXEC || j->kind == JOB_RUN || j->kind == JOB_JUDGE)
			prctl(PR_SET_PDEATHSIG, j->kind == JOB_EXEC ? SIGKILL : SIGTERM);
		if (getppid() != parent)
			_exit(125);
		if (dup2(in, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(125);
		execv(s->moat, argv);
		dprintf(2, "moat: cannot run %s: %s\n", s->moat, strerror(errno));
		_exit(125);
	}
	close(out[1]);
	close(err[1]);
	j->pid = pid;
	job_watch(j, out[0], err[0]);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return -1;
}

/* Reads the command's stdout and stderr from fds out and err. */
static void job_watch(job *j, int out, int err)
{
	srv *s = j->s;
	j->fd[0] = out;
	j->fd[1] = err;
	for (int i = 0; i < 2; i++) {
		fcntl(j->fd[i], F_SETFL, O_NONBLOCK);
		j->buf[i] = evbuffer_new();
		j->ev[i] = event_new(s->base, j->fd[i], EV_READ | EV_PERSIST, on_output, j);
		event_add(j->ev[i], NULL);
	}
	j->next = s->jobs;
	s->jobs = j;
}

static job *job_new(srv *s, job_kind kind, struct evhttp_request *req, conn *cn, const caller *c)
{
	job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->s = s;
	j->kind = kind;
	j->req = req;
	j->fd[0] = j->fd[1] = -1;
	j->follow_fd = -1;
	j->t0 = moat__now_ns();
	snprintf(j->identity, sizeof(j->identity), "%s", c->identity);
	if (cn) {
		j->conn = cn;
		cn->job = j;
	}
	return j;
}

static int job_mkdir(job *j)
{
	snprintf(j->dir, sizeof(j->dir), "%s/jobs/XXXXXX", j->s->state);
	if (!mkdtemp(j->dir)) {
		j->dir[0] = '\0';
		return -1;
	}
	/* The sandbox's init opens the files placed in it as the sandbox's
	 * user (nobody, when moatd is root): it may pass through the folder,
	 * not list it, and the files' names are random. */
	return chmod(j->dir, 0711);
}

static int write_job_file(job *j, const char *name, const char *data, size_t len, char *ret, size_t ret_len)
{
	char rnd[33];
	if (moat__random_hex(16, rnd) < 0)
		return -1;
	snprintf(ret, ret_len, "%s/%s-%s", j->dir, rnd, name);
	/* The path is in the command line of the moat moatd starts, which
	 * every local user may read (ps): the file is for moat (root, or
	 * moatd's own user) and the sandbox's user alone, never 0644. */
	_cleanup_close_ int fd = open(ret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	if (fd < 0 || moat__write_all(fd, data, len) < 0 ||
	    (geteuid() == 0 && fchown(fd, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_GID) < 0))
		return -1;
	return 0;
}

static int argv_add(char ***v, const char *fmt, ...) _printf_(2, 3);
static int argv_add(char ***v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : moat__strv_push(v, s);
}

/* --- handlers */

static int body_of(struct evhttp_request *req, const char **ret, size_t *ret_len)
{
	struct evbuffer *b = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(b);
	const char *p = n ? (const char *)evbuffer_pullup(b, (ev_ssize_t)n) : "";
	if (!p)
		return -1;
	*ret = p;
	*ret_len = n;
	return 0;
}

/* An agent's limits stay within its profile's (a session's with the
 * session defaults, docs/sessions.md). */
static int agent_ceiling(moatd_body_kind kind, const moatd_request *r, moat_error *err)
{
	const char *profile = "code";
	for (size_t i = 0; r->opts && r->opts[i]; i++)
		if (strncmp(r->opts[i], "--profile=", 10) == 0)
			profile = r->opts[i] + 10;
	_cleanup_policy_ moat_policy *p = NULL;
	if (moat_policy_load_profile(profile, &p, err) < 0)
		return moat_error_wrap(err, "profile");
	if (kind == MOATD_BODY_SESSION)
		moat__session_default_limits(p);
	return moatd_limits_within(r->opts, &p->limits, err);
}

/* The request's policy within its token's ceiling: r->policy becomes the
 * effective policy, which replaces the profile. */
static int ceiling_narrow(const caller *c, moatd_body_kind kind, moatd_request *r, moat_error *err)
{
	char *yaml = NULL;
	int rc = moatd_ceiling_apply(c->ceiling, kind == MOATD_BODY_SESSION, r->policy, r->opts, &yaml, err);
	if (rc < 0)
		return rc;
	free(r->policy);
	r->policy = yaml;
	size_t k = 0;
	for (size_t i = 0; r->opts && r->opts[i]; i++) {
		if (strncmp(r->opts[i], "--profile=", 10) == 0)
			free(r->opts[i]);
		else
			r->opts[k++] = r->opts[i];
	}
	if (r->opts)
		r->opts[k] = NULL;
	return 0;
}

static int decode_or_reply(srv *s, struct evhttp_request *req, moatd_body_kind kind, const caller *c,
			   moatd_request *r)
{
	const char *body;
	size_t len;
	moat_error err = {0};
	if (body_of(req, &body, &len) < 0) {
		reply_error(s, req, 500, NULL, "out of memory");
		return -1;
	}
	/* A token with a ceiling may ask for any policy within it (checked
	 * below); without one, an agent keeps to the built-in profiles. */
	moatd_role as = c->ceiling && c->role < MOATD_ROLE_OPERATOR ? MOATD_ROLE_OPERATOR : c->role;
	if (moatd_request_decode(kind, as, body, len, r, &err) < 0 ||
	    (!c->ceiling && c->role == MOATD_ROLE_AGENT && kind != MOATD_BODY_EXEC && agent_ceiling(kind, r, &err) < 0) ||
	    (c->ceiling && kind != MOATD_BODY_EXEC && ceiling_narrow(c, kind, r, &err) < 0)) {
		reply_error(s, req, err.code == EACCES ? 403 : err.code == ENOMEM ? 500 : 400, NULL, "%s", err.msg);
		moatd_request_done(r);
		return -1;
	}
	return 0;
}

static void start_job_or_fail(srv *s, job *j, char **argv, const moatd_request *r)
{
	if (job_spawn(j, argv, r ? r->stdin_data : NULL, r ? r->stdin_len : 0) < 0) {
		reply_error(s, j->req, 500, NULL, "cannot start %s: %s", s->moat, strerror(errno));
		job_free(j);
		return;
	}
	if (j->kind == JOB_EXEC || j->kind == JOB_JUDGE) {
		struct evkeyvalq *h = evhttp_request_get_output_headers(j->req);
		evhttp_add_header(h, "Content-Type", "application/x-ndjson");
		count_reply(s, 200);
		evhttp_send_reply_start(j->req, 200, "OK");
		/* A streamed reply may be silent as long as its command is:
		 * the client owes nothing more to read, so no read timeout;
		 * the write timeout stays, and drops a client that stops
		 * reading while output waits for it. */
		struct evhttp_connection *evcon = evhttp_request_get_connection(j->req);
		struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
		struct timeval w = {.tv_sec = (time_t)s->cfg->timeout_s};
		if (bev)
			bufferevent_set_timeouts(bev, NULL, &w);
	}
}

/* The status a result gives a run that met limit (its "limit" field). */
static const char *limit_status(const char *limit)
{
	static const char *const map[][2] = {{"wall", "timeout"},   {"output", "output_limit"}, {"memory", "oom"},
					     {"pids", "pids_limit"}, {"cpu", "cpu_limit"}};
	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (strcmp(limit, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* How a pooled run ended, as `moat run`'s result says it: the command's
 * end and the limit it met from the keeper's exit, what the sandbox
 * enforced and measured from the keeper's report of it (the same figures
 * moat run reads of its own sandbox), the wall and output limits moatd
 * held itself. */
static void pooled_done(void *arg, const moatd_pool_end *e)
{
	job *j = arg;
	j->prun = NULL;
	j->exited = true;
	if (!e->ok && !e->limit) {
		snprintf(j->pool_error, sizeof(j->pool_error), "%s", e->error);
		/* A spawn the keeper refused as a bad request, as a cold
		 * run's would be. */
		j->pool_code = e->spawn_error == EINVAL || e->spawn_error == E2BIG ? 400 : 500;
		j->status = 125 << 8;
		job_maybe_done(j);
		return;
	}
	const moat_keeper_exit *x = &e->x;
	/* moatd's own stop (wall, output) first, as moat run's kill is:
	 * then the limit the keeper saw the command meet. */
	const char *limit = e->limit ? e->limit : e->ok && x->limit[0] ? x->limit : NULL;
	const char *status = limit && limit_status(limit) ? limit_status(limit) : x->status;
	bool exited = e->ok && strcmp(x->status, "exited") == 0;
	int sig = e->ok && strcmp(x->status, "signaled") == 0 ? x->signal : 0;
	int code = exited ? x->exit_code : sig ? 128 + sig : 125;
	if (e->limit) {
		/* Killed by moatd, as `moat run` kills for its wall and output
		 * limits: no exit code, SIGKILL (none for a command that ended
		 * by itself right at the output cap). */
		exited = false;
		sig = strcmp(e->limit, "output") == 0 && e->ok && strcmp(x->status, "exited") == 0 && !x->error[0]
			      ? 0
			      : SIGKILL;
		code = 128 + SIGKILL;
	}
	json_t *sb = e->sandbox;
	json_t *cu = json_object_get(sb, "cpu_user_ms"), *cs = json_object_get(sb, "cpu_sys_ms");
	json_int_t cpu_user = json_is_integer(cu) ? json_integer_value(cu) : (json_int_t)x->cpu_user_ms;
	json_int_t cpu_sys = json_is_integer(cs) ? json_integer_value(cs) : (json_int_t)x->cpu_sys_ms;
	json_t *peak = json_object_get(sb, "memory_peak_bytes");
	json_t *r = json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:O, s:I, s:I, s:b, s:i, s:o}", "status", status,
			      "exit_code", exited ? json_integer(x->exit_code) : json_null(), "signal",
			      sig ? json_integer(sig) : json_null(), "wall_ms", (json_int_t)x->wall_ms, "cpu_ms",
			      cpu_user + cpu_sys, "cpu_user_ms", cpu_user, "cpu_sys_ms", cpu_sys, "memory_peak_bytes",
			      json_is_integer(peak) ? peak : json_null(), "stdout_bytes", (json_int_t)j->out_bytes[0],
			      "stderr_bytes", (json_int_t)j->out_bytes[1], "output_truncated", j->trunc[0] || j->trunc[1],
			      "output_dropped_bytes", 0, "limit", limit ? json_string(limit) : json_null());
	/* A command its sandbox ended for a limit has no error of its own
	 * ("ended with its sandbox"), as moat run says it. */
	if (r && e->ok && x->error[0] && !e->limit && !(limit && sig == SIGKILL))
		json_object_set_new(r, "error", json_string(x->error));
	if (r)
		json_object_set_new(r, "exit_status", json_integer(code));
	if (r && sb) {
		json_object_set(r, "isolation", json_object_get(sb, "isolation"));
		/* The template leaves the wall clock to moatd: it is moatd's
		 * timer that holds it, listed first as moat run lists it. */
		json_t *enf = json_object(), *theirs = json_object_get(sb, "enforced");
		if (enf && j->time_ms && j->time_ms != MOAT_UNLIMITED)
			json_object_set_new(enf, "wall",
					    json_pack("{s:I, s:s}", "limit", (json_int_t)j->time_ms, "by", "timer"));
		const char *key;
		json_t *v;
		json_object_foreach(theirs, key, v)
			if (enf && strcmp(key, "wall") != 0)
				json_object_set(enf, key, v);
		json_object_set_new(r, "enforced", enf);
		json_t *note = json_object_get(sb, "limits_note");
		if (json_is_string(note))
			json_object_set(r, "limits_note", note);
	}
	if (!r)
		snprintf(j->pool_error, sizeof(j->pool_error), "out of memory");
	j->result = r;
	j->status = (code & 0xff) << 8;
	job_maybe_done(j);
}

/* A run in a ready sandbox of the pool, when the pool's template can
 * serve it (moatd_pool_plan_run) and one is ready. false: run it cold. */
static bool run_pooled(srv *s, struct evhttp_request *req, conn *cn, const caller *c, const moatd_request *r)
{
	moatd_pool_plan plan;
	if (!moatd_pool_plan_run(&s->cfg->pool, r->opts, r->policy != NULL, r->n_files, &plan)) {
		moatd_pool_count_cold(s->pool, plan.why_cold);
		return false;
	}
	job *j = job_new(s, JOB_RUN, req, cn, c);
	if (!j)
		return false;
	int out[2] = {-1, -1}, err[2] = {-1, -1};
	_cleanup_close_ int in = r->stdin_data ? data_fd(r->stdin_data, r->stdin_len) : -1;
	moat_error e = {0};
	int rc;
	if ((r->stdin_data && in < 0) || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		rc = moat_error_set(&e, errno, "pipes");
	else
		rc = moatd_pool_run_start(s->pool, &plan, r->argv, in, out[1], err[1], pooled_done, j, &j->prun, &e);
	/* The keeper has its copies of the write ends (or none). */
	if (out[1] >= 0)
		close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	if (rc < 0) {
		if (out[0] >= 0)
			close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		job_free(j);
		if (rc == -ENOENT)
			return false;
		reply_error(s, req, rc == -EINVAL || rc == -E2BIG ? 400 : 500, NULL, "%s", e.msg);
		return true;
	}
	j->pooled = true;
	j->out_cap = plan.output_bytes;
	j->time_ms = plan.time_ms;
	j->who = c->who;
	if (j->who)
		j->who->inflight++;
	job_watch(j, out[0], err[0]);
	return true;
}

static void do_run(srv *s, struct evhttp_request *req, conn *cn, const caller *c, bool judge)
{
	moatd_request r;
	/* Declared before the first jump to out, which runs its cleanup. */
	_cleanup_strv_free_ char **argv = NULL;
	job *j = NULL;
	if (decode_or_reply(s, req, judge ? MOATD_BODY_JUDGE : MOATD_BODY_RUN, c, &r) < 0)
		return;
	if (quota_check(s, req, c, true, true) < 0)
		goto out;
	/* A pooled sandbox is made to its profile alone: whatever narrows a
	 * run (a caller's ceiling, a quota's limit) must be in r's options or
	 * policy by here, where it makes the run cold (poolplan.h). */
	if (!judge && s->pool && run_pooled(s, req, cn, c, &r))
		goto out;
	j = job_new(s, judge ? JOB_JUDGE : JOB_RUN, req, cn, c);
	char p[PATH_MAX];
	if (!j || job_mkdir(j) < 0) {
		reply_error(s, req, 500, NULL, "scratch folder: %s", strerror(errno));
		if (j)
			job_free(j);
		goto out;
	}
	int rc = argv_add(&argv, "moat") | argv_add(&argv, judge ? "judge" : "run");
	if (r.policy && write_job_file(j, "policy.json", r.policy, strlen(r.policy), p, sizeof(p)) == 0)
		rc |= argv_add(&argv, "--policy=%s", p);
	for (size_t i = 0; r.opts && r.opts[i]; i++)
		rc |= moat__strv_push(&argv, r.opts[i]);
	for (size_t i = 0; i < r.n_files; i++) {
		char name[32];
		snprintf(name, sizeof(name), "file%zu", i);
		if (write_job_file(j, name, r.files[i].data, r.files[i].len, p, sizeof(p)) < 0)
			rc = -1;
		rc |= argv_add(&argv, "--ro=%s:%s", p, r.files[i].path);
	}
	if (judge) {
		if (write_job_file(j, "cases.jsonl", r.cases, strlen(r.cases), p, sizeof(p)) < 0)
			rc = -1;
		rc |= argv_add(&argv, "--tests=%s", p);
		if (write_job_file(j, r.source_name, r.source, strlen(r.source), p, sizeof(p)) < 0)
			rc = -1;
		rc |= argv_add(&argv, "--source=%s", p);
	} else {
		rc |= argv_add(&argv, "--result=%s/result.json", j->dir);
		rc |= argv_add(&argv, "--");
		for (size_t i = 0; r.argv[i]; i++)
			rc |= moat__strv_push(&argv, r.argv[i]);
	}
	if (rc < 0) {
		reply_error(s, req, 500, NULL, "preparing the run: %s", strerror(errno));
		job_free(j);
		goto out;
	}
	j->who = c->who;
	if (j->who)
		j->who->inflight++;
	start_job_or_fail(s, j, argv, &r);
out:
	moatd_request_done(&r);
}

static void do_session_create(srv *s, struct evhttp_request *req, conn *cn, const caller *c)
{
	moatd_request r;
	_cleanup_strv_free_ char **argv = NULL;
	job *j = NULL;
	if (decode_or_reply(s, req, MOATD_BODY_SESSION, c, &r) < 0)
		return;
	if (quota_check(s, req, c, true, false) < 0)
		goto out;
	j = job_new(s, JOB_CREATE, req, cn, c);
	char p[PATH_MAX], rnd[33];
	if (!j || job_mkdir(j) < 0 || moat__random_hex(16, rnd) < 0) {
		reply_error(s, req, 500, NULL, "scratch folder: %s", strerror(errno));
		if (j)
			job_free(j);
		goto out;
	}
	/* The session's audit log is moatd's: the keeper appends to it. */
	snprintf(j->audit_path, sizeof(j->audit_path), "%s/audit/%s.jsonl", s->state, rnd);
	int rc = argv_add(&argv, "moat") | argv_add(&argv, "session") | argv_add(&argv, "create") |
		 argv_add(&argv, "--json") | argv_add(&argv, "--audit=%s", j->audit_path);
	if (r.policy && write_job_file(j, "policy.json", r.policy, strlen(r.policy), p, sizeof(p)) == 0)
		rc |= argv_add(&argv, "--policy=%s", p);
	for (size_t i = 0; r.opts && r.opts[i]; i++)
		rc |= moat__strv_push(&argv, r.opts[i]);
	if (rc < 0) {
		reply_error(s, req, 500, NULL, "out of memory");
		job_free(j);
		goto out;
	}
	j->who = c->who;
	if (j->who)
		j->who->inflight++;
	start_job_or_fail(s, j, argv, NULL);
out:
	moatd_request_done(&r);
}

static json_t *session_json(srv *s, const moat_session_info *v)
{
	json_t *o = owner_read(s, v->id);
	json_t *j = json_pack("{s:s, s:s?, s:s, s:s?, s:I, s:i, s:s, s:s?}", "id", v->id, "name",
			      v->name[0] ? v->name : NULL, "state", v->running ? "running" : "dead", "reason",
			      v->running ? NULL : v->reason, "created", (json_int_t)v->created, "keeper_pid",
			      (int)v->keeper_pid, "policy_sha256", v->policy_sha256, "owner", owner_of(o));
	json_decref(o);
	return j;
}

static void do_session_list(srv *s, struct evhttp_request *req, const caller *c)
{
	moat_session_info *v = NULL;
	size_t n = 0;
	moat_error err = {0};
	if (moat_session_list(&v, &n, &err) < 0) {
		reply_error(s, req, 500, NULL, "%s", err.msg);
		return;
	}
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = owner_read(s, v[i].id);
		/* An agent sees its own sessions only. */
		if (moatd_may_touch_session(c->role, c->identity, owner_of(o)) || c->role == MOATD_ROLE_VIEWER)
			json_array_append_new(a, session_json(s, &v[i]));
		json_decref(o);
	}
	free(v);
	reply_json(s, req, 200, json_pack("{s:o}", "sessions", a));
}

/* Finds the session and checks the caller may touch it; replies on failure. */
static int session_for(srv *s, struct evhttp_request *req, const caller *c, const char *key, bool read_only,
		       moat_session_info *ret)
{
	moat_error err = {0};
	if (moat_session_find(key, ret, &err) < 0) {
		if (err.code == ENOENT)
			reply_error(s, req, 404, NULL, "session %s: no such session", key);
		else
			reply_error(s, req, 500, NULL, "session %s: %s", key, err.msg);
		return -1;
	}
	json_t *o = owner_read(s, ret->id);
	bool ok = moatd_may_touch_session(c->role, c->identity, owner_of(o)) ||
		  (read_only && c->role == MOATD_ROLE_VIEWER);
	json_decref(o);
	if (!ok) {
		/* Not found, rather than forbidden: an agent learns nothing of
		 * others' sessions. */
		reply_error(s, req, 404, NULL, "session %s: no such session", key);
		return -1;
	}
	return 0;
}

static void do_session_delete(srv *s, struct evhttp_request *req, conn *cn, const caller *c, const char *key)
{
	moat_session_info v;
	if (session_for(s, req, c, key, false, &v) < 0)
		return;
	job *j = job_new(s, JOB_DELETE, req, cn, c);
	_cleanup_strv_free_ char **argv = NULL;
	if (!j || (argv_add(&argv, "moat") | argv_add(&argv, "session") | argv_add(&argv, "rm") |
		   argv_add(&argv, "%s", v.id)) < 0) {
		reply_error(s, req, 500, NULL, "out of memory");
		if (j)
			job_free(j);
		return;
	}
	snprintf(j->session, sizeof(j->session), "%s", v.id);
	start_job_or_fail(s, j, argv, NULL);
}

/* PUT/GET /v1/sessions/{id}/files?path=/ABS: the body copied into the
 * session, or the file copied out, by `moat session cp` (its rules: no link
 * or .. on either side, no devices, FIFOs or sockets, no setuid bits, the
 * session's limits). */
static void do_session_file(srv *s, struct evhttp_request *req, conn *cn, const caller *c, const char *key, bool put)
{
	moat_session_info v;
	if (session_for(s, req, c, key, !put, &v) < 0)
		return;
	if (!v.running) {
		reply_error(s, req, 409, NULL, "session %s: not running (%s)", key, v.reason);
		return;
	}
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq params;
	TAILQ_INIT(&params);
	if (!q || evhttp_parse_query_str(q, &params) < 0) {
		reply_error(s, req, 400, "path", "path: missing (expected ?path=/ABSOLUTE/PATH in the session)");
		return;
	}
	const char *path = evhttp_find_header(&params, "path");
	bool ok = path && path[0] == '/' && strlen(path) < PATH_MAX / 2 && !strchr(path, '\n');
	for (struct evkeyval *kv = params.tqh_first; ok && kv; kv = kv->next.tqe_next)
		ok = strcmp(kv->key, "path") == 0;
	if (!ok) {
		evhttp_clear_headers(&params);
		reply_error(s, req, 400, "path",
			    "path: expected one absolute path in the session (?path=/ABSOLUTE/PATH, nothing else)");
		return;
	}
	job *j = job_new(s, put ? JOB_FILE_PUT : JOB_FILE_GET, req, cn, c);
	_cleanup_strv_free_ char **argv = NULL;
	int rc = j && job_mkdir(j) == 0 ? 0 : -1;
	if (j) {
		snprintf(j->session, sizeof(j->session), "%s", v.id);
		snprintf(j->file_path, sizeof(j->file_path), "%s", path);
	}
	evhttp_clear_headers(&params);
	if (rc == 0 && put) {
		const char *body;
		size_t len;
		rc = body_of(req, &body, &len);
		if (rc == 0)
			rc = write_job_file(j, "upload", body, len, j->file_host, sizeof(j->file_host));
	} else if (rc == 0)
		snprintf(j->file_host, sizeof(j->file_host), "%s/download", j->dir);
	if (rc == 0)
		rc = argv_add(&argv, "moat") | argv_add(&argv, "session") | argv_add(&argv, "cp");
	if (rc == 0 && put)
		rc = argv_add(&argv, "%s", j->file_host) | argv_add(&argv, "%s:%s", v.id, j->file_path);
	else if (rc == 0)
		/* A file, at most output_cap: a sparse file in the session is
		 * dense here, and a folder's tree would stay in the job's
		 * folder (job_free removes files only). */
		rc = argv_add(&argv, "--max-bytes=%llu", (unsigned long long)s->cfg->output_cap) |
		     argv_add(&argv, "--file") | argv_add(&argv, "%s:%s", v.id, j->file_path) |
		     argv_add(&argv, "%s", j->file_host);
	if (rc < 0) {
		reply_error(s, req, 500, NULL, "session files: cannot stage the copy: %s", strerror(errno ? errno : ENOMEM));
		if (j)
			job_free(j);
		return;
	}
	start_job_or_fail(s, j, argv, NULL);
}

/* ?wait=false: the command is started under a watcher of its own
 * (detach.c) and the answer is its id, at once (202). Neither the client
 * leaving nor moatd ending touches it. */
static void exec_detached(srv *s, struct evhttp_request *req, const caller *c, const moat_session_info *v,
			  const moatd_request *r)
{
	char id[MOATD_EXEC_ID_LEN + 1];
	_cleanup_strv_free_ char **argv = NULL;
	if (moatd_detached_new_id(id) < 0) {
		reply_error(s, req, 500, NULL, "exec id: no random bytes");
		return;
	}
	int rc = argv_add(&argv, "moat") | argv_add(&argv, "session") | argv_add(&argv, "exec") |
		 argv_add(&argv, "%s", v->id);
	for (size_t i = 0; r->opts && r->opts[i]; i++)
		rc |= moat__strv_push(&argv, r->opts[i]);
	if (r->stdin_data)
		rc |= argv_add(&argv, "-i");
	rc |= argv_add(&argv, "--result=%s/execs/%s/result.json", s->state, id) | argv_add(&argv, "--");
	for (size_t i = 0; r->argv[i]; i++)
		rc |= moat__strv_push(&argv, r->argv[i]);
	if (rc < 0) {
		reply_error(s, req, 500, NULL, "out of memory");
		return;
	}
	moatd_detached_spec sp = {.state = s->state,
				  .moat = s->moat,
				  .argv = argv,
				  .command = r->argv,
				  .stdin_data = r->stdin_data,
				  .stdin_len = r->stdin_len,
				  .output_cap = s->cfg->output_cap,
				  .session = v->id,
				  .owner = c->identity};
	moat_error err = {0};
	if (moatd_detached_start(&sp, id, &err) < 0) {
		reply_error(s, req, 500, NULL, "%s", err.msg);
		return;
	}
	s->execs++;
	reply_json(s, req, 202, json_pack("{s:s, s:s, s:s}", "id", id, "session", v->id, "state", "running"));
}

/* GET /v1/sessions/{id}/exec/{execid}: a detached exec's state, exit code,
 * result and (capped) output. Another identity's exec is as unknown as
 * another's session. */
static void do_exec_get(srv *s, struct evhttp_request *req, const caller *c, const char *key, const char *execid)
{
	moat_session_info v;
	if (session_for(s, req, c, key, false, &v) < 0)
		return;
	json_t *o = NULL;
	moat_error err = {0};
	if (moatd_detached_status(s->state, execid, s->cfg->output_cap, &o, &err) < 0) {
		reply_error(s, req, err.code == ENOENT ? 404 : 500, NULL, "%s", err.msg);
		return;
	}
	const char *sess = json_string_value(json_object_get(o, "session"));
	const char *owner = json_string_value(json_object_get(o, "owner"));
	if (!sess || strcmp(sess, v.id) != 0 || !moatd_may_touch_session(c->role, c->identity, owner)) {
		json_decref(o);
		reply_error(s, req, 404, NULL, "exec %s: no such exec in session %s", execid, key);
		return;
	}
	cpu_charge_exec(s, execid, o);
	reply_json(s, req, 200, o);
}

/* An exec's time within its caller's ceiling: the session it runs in was
 * made within the ceiling's limits.wall, which bounds the session's whole
 * life and so every command in it; a command asking for longer would be
 * promised what the session cannot give, so it is refused naming the
 * field, as a run asking for more than its ceiling is. */
static int exec_time_within(srv *s, struct evhttp_request *req, const caller *c, const moatd_request *r)
{
	if (!c->ceiling || c->ceiling->limits.wall_ms == MOAT_UNLIMITED)
		return 0;
	for (size_t i = 0; r->opts && r->opts[i]; i++) {
		uint64_t ms = 0;
		moat_error err = {0};
		if (strncmp(r->opts[i], "--time=", 7) != 0 || moat_parse_duration_ms(r->opts[i] + 7, &ms, &err) < 0 ||
		    ms <= c->ceiling->limits.wall_ms)
			continue;
		char cs[32], ps[32];
		moat_format_duration_ms(ms, cs, sizeof(cs));
		moat_format_duration_ms(c->ceiling->limits.wall_ms, ps, sizeof(ps));
		reply_error(s, req, 403, NULL, "time: %s exceeds the token ceiling's limits.wall %s", cs, ps);
		return -1;
	}
	return 0;
}

static void do_session_exec(srv *s, struct evhttp_request *req, conn *cn, const caller *c, const char *key)
{
	moat_session_info v;
	if (session_for(s, req, c, key, false, &v) < 0)
		return;
	moatd_request r;
	_cleanup_strv_free_ char **argv = NULL;
	job *j = NULL;
	if (decode_or_reply(s, req, MOATD_BODY_EXEC, c, &r) < 0)
		return;
	if (exec_time_within(s, req, c, &r) < 0)
		goto out;
	if (!v.running) {
		reply_error(s, req, 409, NULL, "session %s: not running (%s)", key, v.reason);
		goto out;
	}
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	if (q) {
		if (strcmp(q, "wait=false") == 0 || strcmp(q, "wait=0") == 0)
			r.wait = false;
		else if (strcmp(q, "wait=true") != 0 && strcmp(q, "wait=1") != 0) {
			reply_error(s, req, 400, NULL, "%.64s: unknown query (expected wait=false)", q);
			goto out;
		}
	}
	if (quota_check(s, req, c, false, false) < 0)
		goto out;
	if (!r.wait) {
		exec_detached(s, req, c, &v, &r);
		goto out;
	}
	j = job_new(s, JOB_EXEC, req, cn, c);
	int rc = j && job_mkdir(j) == 0 ? 0 : -1;
	rc |= argv_add(&argv, "moat") | argv_add(&argv, "session") | argv_add(&argv, "exec") |
	      argv_add(&argv, "%s", v.id);
	if (j) {
		/* The result, for the CPU time the caller's quota counts. */
		snprintf(j->result_path, sizeof(j->result_path), "%s/result.json", j->dir);
		rc |= argv_add(&argv, "--result=%s", j->result_path);
	}
	for (size_t i = 0; r.opts && r.opts[i]; i++)
		rc |= moat__strv_push(&argv, r.opts[i]);
	/* An exec's stdin is /dev/null unless asked for (session exec -i). */
	if (r.stdin_data)
		rc |= argv_add(&argv, "-i");
	rc |= argv_add(&argv, "--");
	for (size_t i = 0; r.argv[i]; i++)
		rc |= moat__strv_push(&argv, r.argv[i]);
	if (rc < 0) {
		reply_error(s, req, 500, NULL, "out of memory");
		if (j)
			job_free(j);
		goto out;
	}
	s->execs++;
	start_job_or_fail(s, j, argv, &r);
out:
	moatd_request_done(&r);
}

/* ?follow=1: what the log holds, then what is appended to it, until the
 * session ends or the client leaves. */
static void follow_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	job *j = arg;
	if (j->gone) {
		evhttp_send_reply_end(j->req);
		job_free(j);
		return;
	}
	bool running = true;
	if (++j->ticks % 5 == 0) {
		moat_session_info v;
		moat_error err = {0};
		running = moat_session_find(j->session, &v, &err) == 0 && v.running;
	}
	if (stream_pending(j) < STREAM_PAUSE_AT) {
		char buf[65536];
		ssize_t n;
		size_t sent = 0;
		struct evbuffer *b = evbuffer_new();
		while (b && sent < STREAM_PAUSE_AT && (n = read(j->follow_fd, buf, sizeof(buf))) > 0) {
			evbuffer_add(b, buf, (size_t)n);
			sent += (size_t)n;
		}
		if (b && evbuffer_get_length(b))
			evhttp_send_reply_chunk(j->req, b);
		if (b)
			evbuffer_free(b);
	}
	if (!running) {
		evhttp_send_reply_end(j->req);
		job_free(j);
		return;
	}
	struct timeval tv = {.tv_usec = 200000};
	evtimer_add(j->tick, &tv);
}

/* The length of fd's first size bytes cut after their last newline: a
 * line the keeper is still writing is left for the next read. */
static off_t audit_whole_lines(int fd, off_t size)
{
	char buf[4096];
	off_t end = size;
	while (end > 0) {
		size_t n = end < (off_t)sizeof(buf) ? (size_t)end : sizeof(buf);
		ssize_t r = pread(fd, buf, n, end - (off_t)n);
		if (r != (ssize_t)n)
			return size;
		for (size_t i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				return end - (off_t)n + (off_t)i;
		end -= (off_t)n;
	}
	return 0;
}

static void do_session_audit(srv *s, struct evhttp_request *req, conn *cn, const caller *c, const char *key)
{
	moat_session_info v;
	if (session_for(s, req, c, key, true, &v) < 0)
		return;
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	bool follow = false;
	if (q) {
		if (strcmp(q, "follow=1") == 0 || strcmp(q, "follow=true") == 0)
			follow = true;
		else if (strcmp(q, "follow=0") != 0 && strcmp(q, "follow=false") != 0) {
			reply_error(s, req, 400, NULL, "%.64s: unknown query (expected follow=1)", q);
			return;
		}
	}
	json_t *o = owner_read(s, v.id);
	const char *a = json_string_value(json_object_get(o, "audit"));
	if (follow && a) {
		int fd = open(a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		json_decref(o);
		job *j = fd >= 0 ? job_new(s, JOB_FOLLOW, req, cn, c) : NULL;
		if (!j) {
			if (fd >= 0)
				close(fd);
			reply_error(s, req, 404, NULL, "session %s: no audit log", key);
			return;
		}
		j->follow_fd = fd;
		snprintf(j->session, sizeof(j->session), "%s", v.id);
		j->tick = evtimer_new(s->base, follow_tick, j);
		j->next = s->jobs;
		s->jobs = j;
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/jsonl");
		count_reply(s, 200);
		evhttp_send_reply_start(req, 200, "OK");
		struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
		struct timeval w = {.tv_sec = (time_t)s->cfg->timeout_s};
		if (bev)
			bufferevent_set_timeouts(bev, NULL, &w);
		follow_tick(-1, 0, j);
		return;
	}
	/* The whole log, however long: libevent sends it from the file
	 * (sendfile or mmap), so a log of any size costs moatd no copy. The
	 * keeper may be appending: the reply ends at the last whole line of
	 * what the file held when it was opened. Files moatd or moat wrote
	 * into moatd's own folder: never through a link. */
	_cleanup_close_ int fd = a ? open(a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	json_decref(o);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		reply_error(s, req, 404, NULL, "session %s: no audit log (a session made outside moatd has none here)",
			    key);
		return;
	}
	off_t len = audit_whole_lines(fd, st.st_size);
	struct evbuffer *b = evbuffer_new();
	if (!b || (len > 0 && evbuffer_add_file(b, TAKE_FD(fd), 0, len) < 0)) {
		if (b)
			evbuffer_free(b);
		reply_error(s, req, 500, NULL, "session %s: audit log: %s", key, strerror(errno ? errno : ENOMEM));
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/jsonl");
	count_reply(s, 200);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/* --- approvals: each running session's keeper holds its own queue */

/* How long moatd waits on a session's keeper for an approvals answer: a
 * keeper answers from its loop at once, so a keeper silent this long is
 * stopped or hung; seconds, so that a loaded machine is not mistaken for
 * one. (moatd serves one request at a time meanwhile.) */
#define MOATD_KEEPER_ASK_S 10

/* Asks one session's keeper. -ENOTSUP: it holds no queue; -ESRCH: it is
 * gone (its session ended, so it holds nothing). Any other error: it could
 * not be asked (stopped, hung, overloaded), which says nothing about what
 * it holds, so the caller must not take it for "holds none". */
static int keeper_ask(const moat_session_info *v, json_t *body, json_t **ret, moat_error *err)
{
	if (v->unanswered)
		return moat_error_set(err, ETIMEDOUT, "%s", v->reason);
	_cleanup_keeper_ moat_keeper *k = NULL;
	int r = moat_keeper_connect(v->socket, &k, err);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return moat_error_set(err, ESRCH, "session %s: not running", v->id);
	if (r < 0)
		return r;
	if (strcmp(moat_keeper_sandbox_id(k), v->id) != 0)
		return moat_error_set(err, ESRCH, "session %s: not running", v->id);
	if ((r = moat_keeper_set_timeout(k, MOATD_KEEPER_ASK_S, err)) < 0)
		return r;
	r = moat_keeper_approvals(k, body, ret, err);
	if (r < 0 && (err->code == ENOTSUP || strstr(err->msg, "no approval queue") ||
		      strstr(err->msg, "unknown message type 'approvals'")))
		return -ENOTSUP;
	return r;
}

/* "ID (why), ID (why)": the sessions in v that could not be asked, for a
 * 503's message; NULL when out of memory. */
static char *unreachable_words(json_t *ids, json_t *whys)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	size_t i;
	json_t *id;
	json_array_foreach(ids, i, id) fprintf(f, "%s%s (%.160s)", i ? ", " : "", json_string_value(id),
					       json_string_value(json_array_get(whys, i)) ?: "?");
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The running sessions whose approvals the caller may see (a viewer: all;
 * an agent: its own), or only the one ?session= names. */
static int approval_sessions(srv *s, struct evhttp_request *req, const caller *c, const char *only,
			     moat_session_info **ret, size_t *ret_n)
{
	moat_error err = {0};
	*ret = NULL;
	*ret_n = 0;
	if (only) {
		moat_session_info *v = calloc(1, sizeof(*v));
		if (!v || session_for(s, req, c, only, c->role == MOATD_ROLE_VIEWER, v) < 0) {
			if (!v)
				reply_error(s, req, 500, NULL, "out of memory");
			free(v);
			return -1;
		}
		*ret = v;
		*ret_n = 1;
		return 0;
	}
	moat_session_info *v = NULL;
	size_t n = 0, k = 0;
	if (moat_session_list(&v, &n, &err) < 0) {
		reply_error(s, req, 500, NULL, "%s", err.msg);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = owner_read(s, v[i].id);
		if (v[i].running && (moatd_may_touch_session(c->role, c->identity, owner_of(o)) ||
				     c->role == MOATD_ROLE_VIEWER))
			v[k++] = v[i];
		json_decref(o);
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

static void do_approvals_list(srv *s, struct evhttp_request *req, const caller *c)
{
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq params;
	TAILQ_INIT(&params);
	const char *only = NULL;
	if (q) {
		bool ok = evhttp_parse_query_str(q, &params) == 0;
		for (struct evkeyval *kv = params.tqh_first; ok && kv; kv = kv->next.tqe_next)
			ok = strcmp(kv->key, "session") == 0 && kv == params.tqh_first;
		only = ok ? evhttp_find_header(&params, "session") : NULL;
		if (!ok || !only || !*only || strlen(only) > MOATD_ID_MAX) {
			evhttp_clear_headers(&params);
			reply_error(s, req, 400, NULL, "%.64s: unknown query (expected session=ID)", q);
			return;
		}
	}
	_cleanup_free_ moat_session_info *v = NULL;
	size_t n = 0;
	int rc = approval_sessions(s, req, c, only, &v, &n);
	evhttp_clear_headers(&params);
	if (rc < 0)
		return;
	/* A keeper that cannot be asked is named in unreachable, never left
	 * out quietly: an empty list must mean that nothing waits. */
	json_t *all = json_array(), *body = json_pack("{s:s}", "op", "ls");
	json_t *unreach = json_array(), *whys = json_array();
	for (size_t i = 0; all && body && unreach && whys && i < n; i++) {
		json_t *ans = NULL;
		moat_error err = {0};
		if (!v[i].running)
			continue;
		int r = keeper_ask(&v[i], body, &ans, &err);
		if (r == -ENOTSUP || r == -ESRCH)
			continue;
		if (r < 0) {
			json_array_append_new(unreach, json_string(v[i].id));
			json_array_append_new(whys, json_string(err.msg));
			continue;
		}
		size_t k;
		json_t *it;
		json_array_foreach(json_object_get(ans, "approvals"), k, it) {
			json_object_set_new(it, "session", json_string(v[i].id));
			json_object_set_new(it, "session_name", v[i].name[0] ? json_string(v[i].name) : json_null());
			json_array_append(all, it);
		}
		json_decref(ans);
	}
	json_decref(body);
	if (!all || !unreach || !whys) {
		json_decref(all);
		json_decref(unreach);
		json_decref(whys);
		reply_error(s, req, 500, NULL, "out of memory");
		return;
	}
	/* ?session= names one session: when it could not be read there is no
	 * list to give. */
	if (only && json_array_size(unreach)) {
		_cleanup_free_ char *w = unreachable_words(unreach, whys);
		json_decref(all);
		json_decref(unreach);
		json_decref(whys);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
		reply_error(s, req, 503, NULL, "approvals: session %s did not answer", w ? w : "?");
		return;
	}
	json_decref(whys);
	reply_json(s, req, 200, json_pack("{s:o, s:o}", "approvals", all, "unreachable", unreach));
}

/* POST /v1/approvals/{id}: the decision goes to the keeper that holds id,
 * with the caller's identity as who decided; moatd's own log has it too. */
static void do_approval_decide(srv *s, struct evhttp_request *req, const caller *c, const char *id)
{
	const char *body;
	size_t len;
	json_t *kreq = NULL;
	moat_error err = {0};
	if (body_of(req, &body, &len) < 0 || moatd_decision_decode(id, body, len, &kreq, &err) < 0) {
		reply_error(s, req, err.code == ENOMEM || !err.msg[0] ? 500 : 400, NULL, "%s",
			    err.msg[0] ? err.msg : "out of memory");
		return;
	}
	json_object_set_new(kreq, "by", json_string(c->identity));
	_cleanup_free_ moat_session_info *v = NULL;
	size_t n = 0;
	if (approval_sessions(s, req, c, NULL, &v, &n) < 0) {
		json_decref(kreq);
		return;
	}
	json_t *ls = json_pack("{s:s}", "op", "ls");
	/* The sessions whose keepers could not be asked, and why: any of them
	 * may hold id, so not finding it elsewhere is no 404. */
	json_t *unreach = json_array(), *whys = json_array();
	for (size_t i = 0; ls && unreach && whys && i < n; i++) {
		json_t *ans = NULL;
		moat_error e = {0};
		/* Only the keeper that holds id is told: another (a keeper of
		 * another moat's, on a shared host) is not sent a decision. */
		int r = keeper_ask(&v[i], ls, &ans, &e);
		if (r == -ENOTSUP || r == -ESRCH)
			continue;
		if (r < 0) {
			json_array_append_new(unreach, json_string(v[i].id));
			json_array_append_new(whys, json_string(e.msg));
			continue;
		}
		bool holds = false;
		size_t k;
		json_t *it;
		json_array_foreach(json_object_get(ans, "approvals"), k, it)
			holds = holds || strcmp(json_string_value(json_object_get(it, "id")) ?: "", id) == 0;
		json_decref(ans);
		ans = NULL;
		if (!holds)
			continue;
		r = keeper_ask(&v[i], kreq, &ans, &e);
		if (r == -ENOTSUP || r == -ENOENT || r == -ESRCH)
			continue;
		if (r < 0) {
			json_decref(kreq);
			json_decref(ls);
			json_decref(unreach);
			json_decref(whys);
			if (r != -EINVAL && r != -E2BIG && r != -EALREADY && r != -ENOMEM) {
				/* It answered the list, then not the decision:
				 * whether it took it, only its log can say. */
				evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
				reply_error(s, req, 503, NULL,
					    "approval %s: session %s did not answer the decision (%s); list the "
					    "approvals to see whether it still waits",
					    id, v[i].id, e.msg);
				return;
			}
			/* The keeper names the field ("approvals.for_ms: ...")
			 * or the state it found ("a1b2c3d4: approved already":
			 * decided or timed out since the list above). */
			reply_error(s, req, moatd_decision_status(r), NULL, "%s", e.msg);
			return;
		}
		const char *op = json_string_value(json_object_get(kreq, "op"));
		json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:s}", "identity", c->identity, "role",
				      moatd_role_name(c->role), "id", id, "session_id", v[i].id, "decision", op);
		json_t *kind = json_object_get(kreq, "kind"), *scope = json_object_get(kreq, "scope");
		if (kind)
			json_object_set(f, "kind", kind);
		if (scope)
			json_object_set(f, "scope", scope);
		if (s->audit && f && moat_audit_event(s->audit, "approval.decision", f, 0, &e) < 0)
			fprintf(stderr, "moatd: audit: %s\n", e.msg);
		else if (!s->audit)
			json_decref(f);
		json_object_set_new(ans, "session", json_string(v[i].id));
		json_object_set_new(ans, "decision", json_string(strcmp(op, "approve") == 0 ? "approved" : "denied"));
		json_object_set_new(ans, "by", json_string(c->identity));
		json_decref(kreq);
		json_decref(ls);
		json_decref(unreach);
		json_decref(whys);
		reply_json(s, req, 200, ans);
		return;
	}
	json_decref(kreq);
	json_decref(ls);
	if (!unreach || !whys) {
		json_decref(unreach);
		json_decref(whys);
		reply_error(s, req, 500, NULL, "out of memory");
		return;
	}
	if (json_array_size(unreach)) {
		_cleanup_free_ char *w = unreachable_words(unreach, whys);
		json_decref(unreach);
		json_decref(whys);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
		reply_error(s, req, 503, NULL,
			    "approval %s: not held by the sessions that answered, and session %s did not answer", id,
			    w ? w : "?");
		return;
	}
	json_decref(unreach);
	json_decref(whys);
	reply_error(s, req, 404, NULL, "approval %s: no running session you may see holds it", id);
}

/* A process's resident memory in bytes (0 when it is gone). */
static uint64_t rss_of(pid_t pid)
{
	char p[64];
	_cleanup_free_ char *st = NULL;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	read_text(p, 8192, &st);
	const char *l = st ? strstr(st, "\nVmRSS:") : NULL;
	return l ? strtoull(l + 8, NULL, 10) * 1024 : 0;
}

/* One metric's HELP and TYPE lines (Prometheus text format); its samples
 * follow. */
static void metric_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric of one sample, without labels. */
static void metric_one(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v)
{
	metric_head(b, name, type, help);
	evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* How long the keepers' figures are reused: asking every running keeper
 * its status costs a connection and a round trip each, on moatd's one
 * thread, and a scraper (or many) may ask every few milliseconds. Which
 * sessions run is read from their locks on every request (cheap, exact);
 * only what the keepers count is at most this old. */
#define METRICS_KEEPERS_TTL_NS (1000000000ull)

/* What the running sessions' keepers report (their status): the requests
 * their gateways decided and the actions their approval gates hold. Sums
 * over the sessions alive now, so gauges: a session that ends takes its
 * counts with it. */
static void metrics_keepers(srv *s, struct evbuffer *b, const moat_session_info *v, size_t n)
{
	uint64_t now = moat__now_ns();
	uint64_t *fig = s->keepers_fig;
	if (!s->keepers_at || now - s->keepers_at >= METRICS_KEEPERS_TTL_NS) {
		memset(s->keepers_fig, 0, sizeof(s->keepers_fig));
		for (size_t i = 0; i < n; i++) {
			if (!v[i].running)
				continue;
			moat_error err = {0};
			_cleanup_keeper_ moat_keeper *k = NULL;
			moat_keeper_msg m;
			if (moat_keeper_connect(v[i].socket, &k, &err) < 0 || moat_keeper_status(k, &m, &err) < 0)
				continue;
			fig[0] += m.net_allowed;
			fig[1] += m.net_denied;
			fig[2] += m.approvals_pending;
			fig[3] += m.approvals_leases;
			moat_keeper_msg_done(&m);
		}
		s->keepers_at = moat__now_ns();
	}
	metric_head(b, "moatd_gateway_requests", "gauge",
		    "Requests the running sessions' gateways decided, by decision.");
	evbuffer_add_printf(b,
			    "moatd_gateway_requests{decision=\"allow\"} %llu\nmoatd_gateway_requests{decision=\"deny\"} %llu\n",
			    (unsigned long long)fig[0], (unsigned long long)fig[1]);
	metric_one(b, "moatd_approvals_pending", "gauge", "Actions the running sessions hold for a person's decision.",
		   fig[2]);
	metric_one(b, "moatd_approval_leases", "gauge", "Approval leases in force in the running sessions.", fig[3]);
}

static void do_metrics(srv *s, struct evhttp_request *req)
{
	struct evbuffer *b = evbuffer_new();
	moat_session_info *v = NULL;
	size_t n = 0, running = 0;
	uint64_t keeper_rss = 0;
	moat_error err = {0};
	if (moat_session_list(&v, &n, &err) == 0)
		for (size_t i = 0; i < n; i++) {
			running += v[i].running;
			if (v[i].running)
				keeper_rss += rss_of(v[i].keeper_pid);
		}
	metrics_keepers(s, b, v, n);
	free(v);
	unsigned inflight = 0;
	for (job *j = s->jobs; j; j = j->next)
		inflight += j->kind == JOB_RUN;
	metric_head(b, "moatd_sandboxes", "gauge", "Sandboxes by state.");
	evbuffer_add_printf(b, "moatd_sandboxes{kind=\"session\",state=\"running\"} %zu\n", running);
	evbuffer_add_printf(b, "moatd_sandboxes{kind=\"session\",state=\"dead\"} %zu\n", n - running);
	evbuffer_add_printf(b, "moatd_sandboxes{kind=\"run\",state=\"running\"} %u\n", inflight);
	metric_head(b, "moatd_runs_total", "counter", "Runs finished, by status.");
	for (size_t i = 0; i < ELEMENTSOF(run_statuses); i++)
		evbuffer_add_printf(b, "moatd_runs_total{status=\"%s\"} %llu\n", run_statuses[i],
				    (unsigned long long)s->runs_by_status[i]);
	metric_one(b, "moatd_execs_total", "counter", "Commands started in sessions.", s->execs);
	metric_head(b, "moatd_requests_total", "counter", "Requests answered, by status class.");
	for (int i = 1; i < 6; i++)
		evbuffer_add_printf(b, "moatd_requests_total{code=\"%dxx\"} %llu\n", i,
				    (unsigned long long)s->requests[i]);
	metric_head(b, "moatd_refused_total", "counter", "Requests refused for load or quota.");
	evbuffer_add_printf(b, "moatd_refused_total{reason=\"connections\"} %llu\nmoatd_refused_total{reason=\"quota\"} %llu\n",
			    (unsigned long long)s->refused_503, (unsigned long long)s->refused_429);
	metric_one(b, "moatd_keeper_rss_bytes", "gauge", "Resident memory of the running sessions' keepers.", keeper_rss);
	metric_one(b, "moatd_rss_bytes", "gauge", "Resident memory of moatd itself.", rss_of(getpid()));
	metric_one(b, "moatd_connections", "gauge", "Open client connections.", s->n_conns);
	metric_head(b, "moatd_run_seconds", "histogram", "Time from request to result of a run.");
	for (size_t i = 0; i < ELEMENTSOF(lat_bounds); i++)
		evbuffer_add_printf(b, "moatd_run_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i],
				    (unsigned long long)s->lat_buckets[i]);
	evbuffer_add_printf(b, "moatd_run_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)s->lat_count);
	evbuffer_add_printf(b, "moatd_run_seconds_sum %.6f\nmoatd_run_seconds_count %llu\n", s->lat_sum,
			    (unsigned long long)s->lat_count);
	if (s->pool)
		moatd_pool_metrics(s->pool, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
	count_reply(s, 200);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void do_openapi(srv *s, struct evhttp_request *req)
{
	json_t *j = NULL;
	moat_error err = {0};
	if (moatd_yaml_to_json(s->openapi, strlen(s->openapi), &j, &err) < 0) {
		reply_error(s, req, 500, NULL, "openapi: %s", err.msg);
		return;
	}
	reply_json(s, req, 200, j);
}

static void handle(struct evhttp_request *req, void *arg, bool tcp)
{
	srv *s = arg;
	bool fresh;
	conn *cn = conn_of(s, req, &fresh);
	if (!cn) {
		reply_error(s, req, 503, NULL, "out of memory");
		return;
	}
	if (fresh && s->n_conns > s->cfg->max_connections) {
		/* Past the cap a connection gets one answer and is closed,
		 * rather than holding a descriptor of moatd's. */
		s->refused_503++;
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		reply_error(s, req, 503, "max_connections", "too many connections (at most %llu)",
			    (unsigned long long)s->cfg->max_connections);
		return;
	}
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *method;
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET: method = "GET"; break;
	case EVHTTP_REQ_POST: method = "POST"; break;
	case EVHTTP_REQ_PUT: method = "PUT"; break;
	case EVHTTP_REQ_DELETE: method = "DELETE"; break;
	default: method = "OTHER"; break;
	}
	char key[MOATD_ID_MAX + 1], sub[MOATD_ID_MAX + 1];
	moatd_route r = path ? moatd_route_match_sub(method, path, key, sub) : MOATD_R_NOT_FOUND;
	if (r == MOATD_R_NOT_FOUND) {
		reply_error(s, req, 404, NULL, "%s: no such route", path ? path : "?");
		return;
	}
	if (r == MOATD_R_BAD_METHOD) {
		reply_error(s, req, 405, NULL, "%s: method %s not allowed", path, method);
		return;
	}
	caller c;
	if (caller_of(s, req, tcp, &c) < 0) {
		reply_error(s, req, 500, NULL, "cannot tell who is calling");
		return;
	}
	if (r != MOATD_R_HEALTH && c.role == MOATD_ROLE_NONE) {
		if (moatd_route_changes(r))
			audit_call(s, &c, r, req, tcp ? 401 : 403, key);
		if (tcp) {
			evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
			reply_error(s, req, 401, NULL, "a bearer token is needed (Authorization: Bearer TOKEN)");
		} else
			reply_error(s, req, 403, NULL, "%s has no role here", c.identity);
		return;
	}
	if (r != MOATD_R_HEALTH && c.refused[0]) {
		if (moatd_route_changes(r))
			audit_call(s, &c, r, req, 403, key);
		reply_error(s, req, 403, NULL, "%s", c.refused);
		return;
	}
	if (!moatd_role_allows(c.role, r)) {
		if (moatd_route_changes(r))
			audit_call(s, &c, r, req, 403, key);
		reply_error(s, req, 403, NULL, "%s: the %s role may not call this", moatd_route_name(r),
			    moatd_role_name(c.role));
		return;
	}
	if (moatd_route_changes(r))
		audit_call(s, &c, r, req, 0, key);
	switch (r) {
	case MOATD_R_HEALTH:
		reply_json(s, req, 200, json_pack("{s:s, s:s}", "status", "ok", "version", MOATD_VERSION));
		break;
	case MOATD_R_METRICS:
		do_metrics(s, req);
		break;
	case MOATD_R_OPENAPI:
		do_openapi(s, req);
		break;
	case MOATD_R_RUN:
		do_run(s, req, cn, &c, false);
		break;
	case MOATD_R_JUDGE:
		do_run(s, req, cn, &c, true);
		break;
	case MOATD_R_SESSION_CREATE:
		do_session_create(s, req, cn, &c);
		break;
	case MOATD_R_SESSION_LIST:
		do_session_list(s, req, &c);
		break;
	case MOATD_R_SESSION_GET: {
		moat_session_info v;
		if (session_for(s, req, &c, key, true, &v) == 0)
			reply_json(s, req, 200, session_json(s, &v));
		break;
	}
	case MOATD_R_SESSION_DELETE:
		do_session_delete(s, req, cn, &c, key);
		break;
	case MOATD_R_SESSION_EXEC:
		do_session_exec(s, req, cn, &c, key);
		break;
	case MOATD_R_SESSION_AUDIT:
		do_session_audit(s, req, cn, &c, key);
		break;
	case MOATD_R_SESSION_FILE_PUT:
		do_session_file(s, req, cn, &c, key, true);
		break;
	case MOATD_R_SESSION_FILE_GET:
		do_session_file(s, req, cn, &c, key, false);
		break;
	case MOATD_R_SESSION_EXEC_GET:
		do_exec_get(s, req, &c, key, sub);
		break;
	case MOATD_R_APPROVAL_LIST:
		do_approvals_list(s, req, &c);
		break;
	case MOATD_R_APPROVAL_DECIDE:
		do_approval_decide(s, req, &c, sub);
		break;
	default:
		reply_error(s, req, 404, NULL, "no such route");
	}
}

static void handle_unix(struct evhttp_request *req, void *arg)
{
	handle(req, arg, false);
}

static void handle_tcp(struct evhttp_request *req, void *arg)
{
	handle(req, arg, true);
}

static struct bufferevent *tls_bev(struct event_base *base, void *arg)
{
	srv *s = arg;
	SSL *ssl = SSL_new(s->ssl);
	return ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)
		   : NULL;
}

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	srv *s = arg;
	event_base_loopbreak(s->base);
}

/* --- setup */

static int mkdir_p(const char *path, mode_t mode)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		*c = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* A listener whose accept fails for want of descriptors (a flood of
 * connections that send nothing, which max_connections cannot count before
 * their first request) is retried by libevent at once, for ever: moatd
 * spun and wrote a warning a try. It pauses instead, and is re-armed
 * shortly; one line says so, at most every 10 s. The guards are
 * file-static: libevent hands the error callback the evhttp's own argument,
 * and moatd runs one server. */
#define ACCEPT_PAUSE_MS 250
static struct accept_guard {
	struct evconnlistener *l;
	struct event *resume;
} accept_guards[2];
static time_t accept_said;

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evconnlistener_enable(arg);
}

static void accept_error(struct evconnlistener *l, void *arg)
{
	(void)arg;
	int e = EVUTIL_SOCKET_ERROR();
	for (size_t i = 0; i < ELEMENTSOF(accept_guards); i++) {
		if (accept_guards[i].l != l)
			continue;
		evconnlistener_disable(l);
		struct timeval tv = {.tv_usec = ACCEPT_PAUSE_MS * 1000};
		evtimer_add(accept_guards[i].resume, &tv);
	}
	time_t now = time(NULL);
	if (now - accept_said >= 10) {
		accept_said = now;
		fprintf(stderr, "moatd: accept: %s; not accepting for %d ms at a time meanwhile\n", strerror(e),
			ACCEPT_PAUSE_MS);
	}
}

/* -EINVAL when there is no listener (b is NULL: libevent failed);
 * otherwise 0, the listener guarded when there was room and memory. */
static int accept_guard(struct evhttp_bound_socket *b)
{
	struct evconnlistener *l = b ? evhttp_bound_socket_get_listener(b) : NULL;
	if (!l)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(accept_guards); i++) {
		if (accept_guards[i].l)
			continue;
		/* Out of memory at start: served unguarded, as before. */
		if (!(accept_guards[i].resume = evtimer_new(evconnlistener_get_base(l), accept_resume, l)))
			return 0;
		accept_guards[i].l = l;
		evconnlistener_set_error_cb(l, accept_error);
		return 0;
	}
	return 0;
}

static void accept_guards_free(void)
{
	for (size_t i = 0; i < ELEMENTSOF(accept_guards); i++) {
		if (accept_guards[i].resume)
			event_free(accept_guards[i].resume);
		accept_guards[i] = (struct accept_guard){0};
	}
}

/* Socket activation (contrib/moatd.socket): systemd passes the listening
 * socket as descriptor 3 and names this process in LISTEN_PID. */
static int listen_activated(srv *s, moat_error *err)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || strtol(pid, NULL, 10) != getpid())
		return 0;
	if (strcmp(fds, "1") != 0)
		return moat_error_set(err, MOAT_EINPUT, "LISTEN_FDS=%s: expected one socket", fds);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	int fd = 3;
	int type = 0;
	socklen_t n = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) < 0 || type != SOCK_STREAM)
		return moat_error_set(err, EBADF, "the activated socket (descriptor 3)");
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return moat_error_set(err, errno, "the activated socket");
	if (accept_guard(evhttp_accept_socket_with_handle(s->http_unix, fd)) < 0)
		return moat_error_set(err, EIO, "serve the activated socket");
	s->activated = true;
	return 1;
}

static int listen_unix(srv *s, moat_error *err)
{
	int r = listen_activated(s, err);
	if (r != 0)
		return r < 0 ? r : 0;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(s->socket) >= sizeof(a.sun_path))
		return moat_error_set(err, ENAMETOOLONG, "socket %s", s->socket);
	strcpy(a.sun_path, s->socket);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", s->socket);
	char *sl = strrchr(dir, '/');
	if (sl && sl != dir) {
		*sl = '\0';
		/* As root the socket is for every user the configuration
		 * gives a role (the folder is searchable, the socket open to
		 * all; the role is checked per request); rootless it is the
		 * user's alone. */
		if (mkdir_p(dir, s->self_uid == 0 ? 0755 : 0700) < 0)
			return moat_error_set(err, errno, "socket folder %s", dir);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return moat_error_set(err, errno, "socket");
	/* A socket left by a moatd that died is replaced; a live one is not. */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EAGAIN) {
		close(fd);
		return moat_error_set(err, EADDRINUSE, "%s: another moatd answers there", s->socket);
	}
	unlink(s->socket);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(s->socket, s->self_uid == 0 ? 0666 : 0600) < 0 ||
	    listen(fd, 128) < 0) {
		int e = errno;
		close(fd);
		return moat_error_set(err, e, "listen on %s", s->socket);
	}
	if (accept_guard(evhttp_accept_socket_with_handle(s->http_unix, fd)) < 0) {
		close(fd);
		return moat_error_set(err, EIO, "serve %s", s->socket);
	}
	return 0;
}

static int listen_tcp(srv *s, moat_error *err)
{
	const char *l = s->cfg->listen;
	const char *colon = strrchr(l, ':');
	char host[256];
	if (!colon || (size_t)(colon - l) >= sizeof(host))
		return moat_error_set(err, MOAT_EINPUT, "listen %s: expected HOST:PORT", l);
	memcpy(host, l, (size_t)(colon - l));
	host[colon - l] = '\0';
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535)
		return moat_error_set(err, MOAT_EINPUT, "listen %s: bad port", l);
	struct in_addr ia;
	if (inet_pton(AF_INET, host, &ia) != 1)
		return moat_error_set(err, MOAT_EINPUT, "listen %s: expected an IPv4 address", l);
	/* Tokens travel in the clear without TLS: only on loopback then. */
	if (!s->cfg->tls_cert && (ntohl(ia.s_addr) >> 24) != 127)
		return moat_error_set(err, MOAT_EINPUT, "listen %s: beyond loopback only with tls (cert and key)", l);
	s->http_tcp = evhttp_new(s->base);
	if (!s->http_tcp)
		return moat_error_set(err, ENOMEM, "http");
	if (s->cfg->tls_cert) {
		s->ssl = SSL_CTX_new(TLS_server_method());
		if (!s->ssl || SSL_CTX_set_min_proto_version(s->ssl, TLS1_2_VERSION) != 1 ||
		    SSL_CTX_use_certificate_chain_file(s->ssl, s->cfg->tls_cert) != 1 ||
		    SSL_CTX_use_PrivateKey_file(s->ssl, s->cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(s->ssl) != 1)
			return moat_error_set(err, MOAT_EINPUT, "tls: cannot load %s / %s", s->cfg->tls_cert,
					      s->cfg->tls_key);
		evhttp_set_bevcb(s->http_tcp, tls_bev, s);
	}
	evhttp_set_gencb(s->http_tcp, handle_tcp, s);
	evhttp_set_max_body_size(s->http_tcp, (ev_ssize_t)s->cfg->max_body);
	evhttp_set_max_headers_size(s->http_tcp, MOATD_MAX_HEAD);
	evhttp_set_timeout(s->http_tcp, (int)s->cfg->timeout_s);
	evhttp_set_allowed_methods(s->http_tcp,
				   EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
	if (accept_guard(evhttp_bind_socket_with_handle(s->http_tcp, host, (ev_uint16_t)port)) < 0)
		return moat_error_set(err, errno ? errno : EADDRINUSE, "listen %s", l);
	return 0;
}

int moatd_serve(moatd_config *cfg, const char *moat, const char *openapi, moat_error *err)
{
	srv s_, *s = &s_;
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->openapi = openapi;
	s->self_uid = getuid();
	snprintf(s->moat, sizeof(s->moat), "%s", moat);
	snprintf(s->socket, sizeof(s->socket), "%s", cfg->socket);
	snprintf(s->state, sizeof(s->state), "%s", cfg->state_dir);
	int rc = 0;
	/* The state folder and jobs/ are passed through by sandboxes' inits
	 * (see job_mkdir); owners/ and audit/ are moatd's alone. */
	const struct {
		const char *sub;
		mode_t mode;
	} subs[] = {{"", 0711}, {"/jobs", 0711}, {"/owners", 0700}, {"/audit", 0700}, {"/execs", 0700}, {"/usage", 0700}};
	for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s%s", s->state, subs[i].sub);
		if (mkdir_p(p, subs[i].mode) < 0 || chmod(p, subs[i].mode) < 0)
			return moat_error_set(err, errno, "state folder %s", p);
	}
	/* Each token's ceiling, read once: a bad one stops moatd here rather
	 * than failing that token's every request. */
	if (cfg->n_tlim && !(s->ceilings = calloc(cfg->n_tlim, sizeof(*s->ceilings))))
		return moat_error_set(err, ENOMEM, "token ceilings");
	for (size_t i = 0; i < cfg->n_tlim; i++)
		if (cfg->tlim[i].policy && (moat_policy_load_file(cfg->tlim[i].policy, &s->ceilings[i], err) < 0 ||
					    moatd_ceiling_check(s->ceilings[i], err) < 0)) {
			rc = moat_error_wrap(err, "%s.%s.policy", cfg->tlim[i].section, cfg->tlim[i].name);
			goto out_ceilings;
		}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/moatd-audit.jsonl", s->state);
	/* A SIGKILL can cut a line's write() short (docs/audit.md, "Crash
	 * safety"): the partial line is set aside and logged, not a reason
	 * for moatd to stay down. */
	char moved[PATH_MAX];
	if ((rc = moat_audit_open_recover(p, NULL, &s->audit, moved, err)) < 0) {
		rc = moat_error_wrap(err, "audit log");
		goto out_ceilings;
	}
	if (moved[0])
		fprintf(stderr, "moatd: audit log %s ended in a partial line, set aside in %s\n", p, moved);
	signal(SIGPIPE, SIG_IGN);
	s->base = event_base_new();
	s->http_unix = s->base ? evhttp_new(s->base) : NULL;
	if (!s->http_unix) {
		rc = moat_error_set(err, ENOMEM, "event loop");
		goto out;
	}
	evhttp_set_gencb(s->http_unix, handle_unix, s);
	evhttp_set_max_body_size(s->http_unix, (ev_ssize_t)cfg->max_body);
	evhttp_set_max_headers_size(s->http_unix, MOATD_MAX_HEAD);
	evhttp_set_timeout(s->http_unix, (int)cfg->timeout_s);
	evhttp_set_allowed_methods(s->http_unix,
				   EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
	if ((rc = listen_unix(s, err)) < 0)
		goto out;
	if (cfg->listen && (rc = listen_tcp(s, err)) < 0)
		goto out;
	s->sigchld = evsignal_new(s->base, SIGCHLD, on_sigchld, s);
	s->sigterm = evsignal_new(s->base, SIGTERM, on_stop, s);
	s->sigint = evsignal_new(s->base, SIGINT, on_stop, s);
	event_add(s->sigchld, NULL);
	event_add(s->sigterm, NULL);
	event_add(s->sigint, NULL);
	if (cfg->pool.n && (rc = moatd_pool_new(s->base, &cfg->pool, s->moat, s->state, &s->pool, err)) < 0)
		goto out;
	fprintf(stderr, "moatd: serving on %s%s%s\n", s->activated ? "the socket systemd passed" : s->socket,
		cfg->listen ? " and " : "",
		cfg->listen ? cfg->listen : "");
	event_base_dispatch(s->base);
	if (!s->activated)
		unlink(s->socket);
out:
	/* Commands under way are ended with moatd's orderly stop; sessions
	 * are their keepers' and stay. */
	jobs_end(s);
	if (s->sigchld)
		event_free(s->sigchld);
	if (s->sigterm)
		event_free(s->sigterm);
	if (s->sigint)
		event_free(s->sigint);
	accept_guards_free();
	if (s->http_unix)
		evhttp_free(s->http_unix);
	if (s->http_tcp)
		evhttp_free(s->http_tcp);
	if (s->ssl)
		SSL_CTX_free(s->ssl);
	/* Pooled sandboxes nobody took end with moatd; after the
	 * connections, whose ends may still stop a pooled run. */
	moatd_pool_free(s->pool);
	if (s->base)
		event_base_free(s->base);
	moat_audit_close(s->audit);
	for (size_t i = 0; i < s->n_idents; i++)
		free(s->idents[i].runs);
out_ceilings:
	for (size_t i = 0; s->ceilings && i < cfg->n_tlim; i++)
		moat_policy_free(s->ceilings[i]);
	free(s->ceilings);
	return rc;
}
