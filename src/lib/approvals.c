/* Approval gates, the keeper's side (approvals.h): the pure queue behind a
 * lock, the clocks, the ids, the audit events and the notify command. */
#include "approvals.h"

#include "audit.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The notify command's input is one JSON object; more than a pipe's
 * buffer would need a writer that waits, so it is capped below that. */
#define NOTIFY_MAX_INPUT 16384
/* The notify command runs on the host for something the sandbox causes:
 * at most a burst of this many at once, then one a second; the ones over
 * it are counted into the next one's JSON ("suppressed"). */
/* New holds a sandbox may cause: a burst of this many, then so many a
 * second; one more is refused at once (429), so that a loop of requests
 * that open and give up cannot flood the queue, the log and the host. */
#define ASK_BURST 64
#define ASK_EVERY_MS 100
#define NOTIFY_BURST 10
#define NOTIFY_EVERY_MS 1000
/* A lease's duration, and a note, have caps too: a lease for longer than a
 * year is a mistake, not a decision. */
#define LEASE_MAX_MS (366ull * 24 * 3600 * 1000)

struct moat_approvals {
	pthread_mutex_t lock;
	moat_approval_queue q;
	char session[64];
	uint64_t timeout_ms;
	char *notify;
	struct moat_audit *audit;
	moat_approvals_wake_fn wake;
	void *wake_ud;
	moat_approvals_wake_fn schedule;
	void *schedule_ud;

	struct {
		moat_approvals_wake_fn fn;
		void *ud;
	} wakes[MOAT_APPROVALS_MAX_WAKES];
	size_t n_wakes;
	bool ended;
	char end_reason[128];
	moat_rate notify_rate;
	uint64_t notify_suppressed;
	moat_rate ask_rate;
};

static uint64_t mono_ms(void)
{
	return moat__now_ns() / 1000000;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A moment on the monotonic clock as seconds since the epoch (a double,
 * as the audit log's own times). */
static json_t *when_json(uint64_t t_mono, uint64_t now_mono, uint64_t now_wall)
{
	if (t_mono == UINT64_MAX)
		return json_null();
	int64_t w = (int64_t)now_wall + ((int64_t)t_mono - (int64_t)now_mono);
	return json_real((double)w / 1000.0);
}

int moat_approvals_new(const moat_approvals_opts *o, moat_approvals **ret, moat_error *err)
{
	moat_approvals *ap = calloc(1, sizeof(*ap));
	if (!ap)
		return moat_error_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&ap->lock, NULL);
	moat__approval_queue_init(&ap->q);
	snprintf(ap->session, sizeof(ap->session), "%s", o->session ? o->session : "");
	ap->timeout_ms = o->timeout_ms ? o->timeout_ms : MOAT_APPROVAL_DEFAULT_TIMEOUT_MS;
	ap->audit = o->audit;
	ap->notify_rate = (moat_rate){.burst = NOTIFY_BURST, .every_ms = NOTIFY_EVERY_MS};
	ap->ask_rate = (moat_rate){.burst = ASK_BURST, .every_ms = ASK_EVERY_MS};
	if (o->notify && !(ap->notify = strdup(o->notify))) {
		moat_approvals_free(ap);
		return moat_error_set(err, ENOMEM, "out of memory");
	}
	*ret = ap;
	return 0;
}

void moat_approvals_free(moat_approvals *ap)
{
	if (!ap)
		return;
	moat__approval_queue_done(&ap->q);
	free(ap->notify);
	pthread_mutex_destroy(&ap->lock);
	free(ap);
}

void moat_approvals_set_session(moat_approvals *ap, const char *session)
{
	pthread_mutex_lock(&ap->lock);
	snprintf(ap->session, sizeof(ap->session), "%s", session ? session : "");
	pthread_mutex_unlock(&ap->lock);
}

void moat_approvals_set_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud)
{
	pthread_mutex_lock(&ap->lock);
	ap->wake = fn;
	ap->wake_ud = ud;
	pthread_mutex_unlock(&ap->lock);
}

void moat_approvals_set_schedule(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud)
{
	pthread_mutex_lock(&ap->lock);
	ap->schedule = fn;
	ap->schedule_ud = ud;
	pthread_mutex_unlock(&ap->lock);
}

bool moat_approvals_add_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud)
{
	pthread_mutex_lock(&ap->lock);
	bool ok = ap->n_wakes < MOAT_APPROVALS_MAX_WAKES;
	if (ok) {
		ap->wakes[ap->n_wakes].fn = fn;
		ap->wakes[ap->n_wakes++].ud = ud;
	}
	pthread_mutex_unlock(&ap->lock);
	return ok;
}

void moat_approvals_remove_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud)
{
	pthread_mutex_lock(&ap->lock);
	for (size_t i = 0; i < ap->n_wakes; i++)
		if (ap->wakes[i].fn == fn && ap->wakes[i].ud == ud) {
			ap->wakes[i] = ap->wakes[--ap->n_wakes];
			break;
		}
	pthread_mutex_unlock(&ap->lock);
}

/* The wakes are called with the lock held so that a holder cannot be
 * removed (and freed) while its wake runs; a wake is an eventfd write and
 * never takes the lock. */
static void wake(moat_approvals *ap)
{
	pthread_mutex_lock(&ap->lock);
	moat_approvals_wake_fn fn = ap->wake;
	void *ud = ap->wake_ud;
	for (size_t i = 0; i < ap->n_wakes; i++)
		ap->wakes[i].fn(ap->wakes[i].ud);
	pthread_mutex_unlock(&ap->lock);
	if (fn)
		fn(ud);
}

/* ---- JSON ---- */

static json_t *argv_json(const moat_ask *a)
{
	json_t *v = json_array();
	const char *p = a->args;
	for (size_t i = 0; v && i < a->n_argv; i++, p += strlen(p) + 1)
		json_array_append_new(v, moat_audit_bytes_json(p));
	return v;
}

/* What was asked, into o. */
static void ask_fields(json_t *o, const moat_ask *a)
{
	char what[MOAT_APPROVAL_PATH_MAX + 512];
	moat__approval_ask_format(a, what, sizeof(what));
	json_object_set_new(o, "action",
			    json_string(a->kind == MOAT_ASK_NET ? "net" : a->kind == MOAT_ASK_TOOL ? "tool" : "exec"));
	json_object_set_new(o, "what", moat_audit_bytes_json(what));
	if (a->kind == MOAT_ASK_NET) {
		json_object_set_new(o, "host", json_string(a->host));
		json_object_set_new(o, "port", json_integer(a->port));
		json_object_set_new(o, "method", a->method[0] ? json_string(a->method) : json_null());
		json_object_set_new(o, "path", a->method[0] ? moat_audit_bytes_json(a->path) : json_null());
	} else if (a->kind == MOAT_ASK_TOOL) {
		json_object_set_new(o, "server", moat_audit_bytes_json(a->exe));
		json_object_set_new(o, "tool", moat_audit_bytes_json(a->args));
	} else {
		json_object_set_new(o, "exe", moat_audit_bytes_json(a->exe));
		json_object_set_new(o, "argv", argv_json(a));
	}
}

json_t *moat__approval_to_json(const moat_approval *e, const char *session, uint64_t now_mono_ms,
			       uint64_t now_wall_ms)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_string(e->id));
	json_object_set_new(o, "session", json_string(session ? session : ""));
	json_object_set_new(o, "state", json_string(moat_approval_state_to_string(e->state)));
	ask_fields(o, &e->ask);
	json_object_set_new(o, "asked_at", when_json(e->asked_ms, now_mono_ms, now_wall_ms));
	json_object_set_new(o, "expires_at", when_json(e->expires_ms, now_mono_ms, now_wall_ms));
	return o;
}

static json_t *lease_json(const moat_lease *l, uint64_t now_mono, uint64_t now_wall)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "lease", json_string(l->id));
	json_object_set_new(o, "kind", json_string(moat_lease_kind_to_string(l->kind)));
	json_object_set_new(o, "scope", json_string(moat_scope_to_string(l->scope)));
	ask_fields(o, &l->what);
	json_object_set_new(o, "granted_at", when_json(l->granted_ms, now_mono, now_wall));
	json_object_set_new(o, "until",
			    l->kind == MOAT_LEASE_FOR ? when_json(l->until_ms, now_mono, now_wall) : json_null());
	json_object_set_new(o, "by_uid", json_integer(l->by));
	json_object_set_new(o, "note", moat_audit_bytes_json(l->note));
	json_object_set_new(o, "used", json_integer((json_int_t)l->used));
	return o;
}

/* Writes one event. Every one is fsync'd, as the gateway's decisions are:
 * the log must say who let what through even if the host dies right
 * after. What a person did (an allow, a deny, a lease granted or revoked)
 * goes past the log's size cap (MOAT_AUDIT_ALWAYS): a person's pace bounds
 * it, and a sandbox that filled the log with requests must not keep the
 * decisions out of it. */
static void audit_flags(moat_approvals *ap, const char *type, json_t *f, unsigned flags)
{
	if (!ap->audit) {
		json_decref(f);
		return;
	}
	moat_error err = {0};
	(void)moat_audit_event(ap->audit, type, f, MOAT_AUDIT_SYNC | flags, &err);
}

static void audit(moat_approvals *ap, const char *type, json_t *f)
{
	audit_flags(ap, type, f, 0);
}

static void audit_decision(moat_approvals *ap, const moat_approval *e, const char *decision, const moat_lease *l,
			   const char *kind, const char *scope, const char *by)
{
	json_t *f = json_object();
	if (!f)
		return;
	json_object_set_new(f, "id", json_string(e->id));
	json_object_set_new(f, "decision", json_string(decision));
	char what[MOAT_APPROVAL_PATH_MAX + 512];
	moat__approval_ask_format(&e->ask, what, sizeof(what));
	json_object_set_new(f, "what", moat_audit_bytes_json(what));
	bool by_person = strcmp(decision, "allow") == 0 || strcmp(decision, "deny") == 0;
	json_object_set_new(f, "by_uid", by_person ? json_integer(e->by) : json_null());
	/* Who decided, as the front that relayed the decision knows them
	 * (moatd: a token's name or a uid); the uid is that front's. */
	if (by_person && by)
		json_object_set_new(f, "by", moat_audit_bytes_json(by));
	if (kind)
		json_object_set_new(f, "kind", json_string(kind));
	if (scope)
		json_object_set_new(f, "scope", json_string(scope));
	if (l) {
		uint64_t nm = mono_ms(), nw = wall_ms();
		json_object_set_new(f, "lease", json_string(l->id));
		json_object_set_new(f, "until",
				    l->kind == MOAT_LEASE_FOR ? when_json(l->until_ms, nm, nw) : json_null());
	}
	json_object_set_new(f, strcmp(decision, "allow") == 0 ? "note" : "reason", moat_audit_bytes_json(e->reason));
	audit_flags(ap, "approval.decision", f, by_person ? MOAT_AUDIT_ALWAYS : 0);
}

static void on_timeout(void *ud, const moat_approval *e)
{
	audit_decision(ud, e, "timeout", NULL, NULL, NULL, NULL);
}

static void on_lease_expire(void *ud, const moat_lease *l)
{
	json_t *f = json_pack("{s:s, s:I}", "lease", l->id, "used", (json_int_t)l->used);
	if (f)
		audit(ud, "lease.expire", f);
}

/* ---- notify ---- */

/* Runs the notify command with in on its standard input, detached: a
 * child that forks the command and exits at once, so the command is
 * never ours to reap and a slow one holds nothing up. Only async-signal-
 * safe calls after fork (this process has threads). */
static void notify_run(const char *cmd, const char *in, const char *id, const char *session)
{
	size_t len = strlen(in);
	if (len > NOTIFY_MAX_INPUT)
		return;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	/* The whole input fits the pipe's buffer: written before the fork,
	 * so no one waits on a command that does not read it. */
	if (moat__write_all(p[1], in, len) < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	close(p[1]);
	char env_id[64], env_session[96];
	snprintf(env_id, sizeof(env_id), "MOAT_APPROVAL_ID=%s", id);
	snprintf(env_session, sizeof(env_session), "MOAT_SESSION=%s", session);
	char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", env_id, env_session, NULL};
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);
		setsid();
		/* The keeper ignores SIGPIPE; the command must not inherit that. */
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigaction(SIGPIPE, &dfl, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(p[0], 0) < 0 || (devnull >= 0 && (dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)))
			_exit(127);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(p[0]);
	if (devnull >= 0)
		close(devnull);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* ---- the holder's side ---- */

static void outcome_from(const moat_approval *e, uint64_t timeout_ms, moat_approvals_outcome *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->state = e->state;
	snprintf(ret->id, sizeof(ret->id), "%s", e->id);
	snprintf(ret->lease, sizeof(ret->lease), "%s", e->lease);
	snprintf(ret->reason, sizeof(ret->reason), "%s", e->reason);
	ret->timeout_ms = timeout_ms;
	ret->ended = e->state == MOAT_APPROVAL_DENIED && e->by == (uid_t)-1;
}

int moat_approvals_ask(moat_approvals *ap, const moat_ask *a, uint64_t ticket, moat_approvals_outcome *ret,
		       moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	uint64_t now = mono_ms(), nw = wall_ms();
	pthread_mutex_lock(&ap->lock);
	moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	if (ap->ended) {
		pthread_mutex_unlock(&ap->lock);
		return moat_error_set(err, ESHUTDOWN, "%s", ap->end_reason);
	}
	moat_lease *l = moat__approval_lease_match(&ap->q, a, now);
	if (l) {
		l->used++;
		ret->state = MOAT_APPROVAL_ALLOWED;
		snprintf(ret->lease, sizeof(ret->lease), "%s", l->id);
		pthread_mutex_unlock(&ap->lock);
		return 0;
	}
	if (!moat__rate_take(&ap->ask_rate, now)) {
		pthread_mutex_unlock(&ap->lock);
		return moat_error_set(err, E2BIG, "more than %d requests asked for approval at once, and over %d a second",
				      ASK_BURST, (int)(1000 / ASK_EVERY_MS));
	}
	char hex[9], id[MOAT_APPROVAL_ID_LEN];
	moat_approval *e = NULL;
	int r = -EEXIST;
	/* A fresh random id; the rare clash is drawn again. */
	for (int tries = 0; tries < 8 && r == -EEXIST; tries++) {
		if (moat__random_hex(4, hex) < 0) {
			r = moat_error_set(err, EIO, "approval id: no random bytes");
			break;
		}
		snprintf(id, sizeof(id), "a%s", hex);
		if (moat__approval_find_ticket(&ap->q, ticket)) {
			r = moat_error_set(err, EEXIST, "ticket %llu is held already", (unsigned long long)ticket);
			break;
		}
		r = moat__approval_add(&ap->q, a, id, ticket, now, ap->timeout_ms, &e, err);
	}
	if (r < 0) {
		pthread_mutex_unlock(&ap->lock);
		return r;
	}
	outcome_from(e, ap->timeout_ms, ret);
	/* Under the lock: once the deciding side has cleared its callback
	 * (moat_approvals_set_schedule), none runs any more. */
	if (ap->schedule)
		ap->schedule(ap->schedule_ud);
	json_t *o = moat__approval_to_json(e, ap->session, now, nw);
	json_t *f = json_deep_copy(o);
	if (f) {
		json_object_del(f, "session");
		json_object_del(f, "state");
		json_object_set_new(f, "timeout_ms", json_integer((json_int_t)ap->timeout_ms));
		audit(ap, "approval.request", f);
	}
	_cleanup_free_ char *cmd = NULL;
	if (ap->notify && moat__rate_take(&ap->notify_rate, now)) {
		cmd = strdup(ap->notify);
		if (o && ap->notify_suppressed)
			json_object_set_new(o, "suppressed", json_integer((json_int_t)ap->notify_suppressed));
		ap->notify_suppressed = 0;
	} else if (ap->notify)
		ap->notify_suppressed++;
	char session[64];
	snprintf(session, sizeof(session), "%s", ap->session);
	pthread_mutex_unlock(&ap->lock);
	if (cmd && o) {
		/* One line: a command may append it to a file as it is. */
		_cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
		_cleanup_free_ char *line = NULL;
		if (s && asprintf(&line, "%s\n", s) > 0)
			notify_run(cmd, line, id, session);
	}
	json_decref(o);
	return 0;
}

void moat_approvals_poll(moat_approvals *ap, uint64_t ticket, moat_approvals_outcome *ret)
{
	uint64_t now = mono_ms();
	pthread_mutex_lock(&ap->lock);
	moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	moat_approval *e = moat__approval_find_ticket(&ap->q, ticket);
	if (!e) {
		memset(ret, 0, sizeof(*ret));
		ret->state = MOAT_APPROVAL_DENIED;
		snprintf(ret->reason, sizeof(ret->reason), "nothing is held for this request");
	} else {
		outcome_from(e, ap->timeout_ms, ret);
		if (e->state != MOAT_APPROVAL_PENDING)
			moat__approval_remove_ticket(&ap->q, ticket, NULL);
	}
	pthread_mutex_unlock(&ap->lock);
}

void moat_approvals_withdraw(moat_approvals *ap, uint64_t ticket, const char *why)
{
	pthread_mutex_lock(&ap->lock);
	moat_approval got;
	if (moat__approval_remove_ticket(&ap->q, ticket, &got) && got.state == MOAT_APPROVAL_PENDING) {
		snprintf(got.reason, sizeof(got.reason), "%s", why);
		audit_decision(ap, &got, "withdrawn", NULL, NULL, NULL, NULL);
	}
	pthread_mutex_unlock(&ap->lock);
}

void moat_approvals_end(moat_approvals *ap, const char *why)
{
	if (!ap)
		return;
	pthread_mutex_lock(&ap->lock);
	ap->ended = true;
	snprintf(ap->end_reason, sizeof(ap->end_reason), "%s", why);
	for (size_t i = 0; i < ap->q.n; i++) {
		moat_approval *e = &ap->q.v[i];
		if (e->state != MOAT_APPROVAL_PENDING)
			continue;
		e->state = MOAT_APPROVAL_DENIED;
		e->by = (uid_t)-1; /* no one: the sandbox ended */
		snprintf(e->reason, sizeof(e->reason), "%s", why);
		audit_decision(ap, e, "ended", NULL, NULL, NULL, NULL);
	}
	pthread_mutex_unlock(&ap->lock);
	wake(ap);
}

/* ---- the deciding side ---- */

void moat_approvals_tick(moat_approvals *ap)
{
	if (!ap)
		return;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&ap->lock);
	bool due = moat__approval_next_deadline(&ap->q) <= now;
	size_t before = due ? moat__approval_pending(&ap->q) : 0;
	if (due)
		moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	bool timed_out = due && moat__approval_pending(&ap->q) < before;
	pthread_mutex_unlock(&ap->lock);
	if (timed_out)
		wake(ap);
}

void moat_approvals_counts(moat_approvals *ap, size_t *pending, size_t *leases)
{
	*pending = *leases = 0;
	if (!ap)
		return;
	/* Not expired here: the clock's tick does that, and wakes the holder. */
	pthread_mutex_lock(&ap->lock);
	*pending = moat__approval_pending(&ap->q);
	*leases = ap->q.n_leases;
	pthread_mutex_unlock(&ap->lock);
}

uint64_t moat_approvals_next_deadline(moat_approvals *ap)
{
	if (!ap)
		return UINT64_MAX;
	pthread_mutex_lock(&ap->lock);
	uint64_t t = moat__approval_next_deadline(&ap->q);
	pthread_mutex_unlock(&ap->lock);
	return t;
}

static int req_str(json_t *req, const char *key, bool required, size_t max, const char **ret, moat_error *err)
{
	json_t *v = json_object_get(req, key);
	if (!v) {
		*ret = NULL;
		return required ? moat_error_set(err, EINVAL, "approvals.%s: missing", key) : 0;
	}
	if (!json_is_string(v))
		return moat_error_set(err, EINVAL, "approvals.%s: not a string", key);
	if (json_string_length(v) > max)
		return moat_error_set(err, E2BIG, "approvals.%s: longer than %zu bytes", key, max);
	if (memchr(json_string_value(v), '\0', json_string_length(v)))
		return moat_error_set(err, EINVAL, "approvals.%s: holds a NUL byte", key);
	*ret = json_string_value(v);
	return 0;
}

static int check_keys(json_t *req, const char *const *allowed, moat_error *err)
{
	const char *key;
	json_t *v;
	json_object_foreach(req, key, v) {
		bool ok = strcmp(key, "op") == 0;
		for (size_t i = 0; !ok && allowed[i]; i++)
			ok = strcmp(key, allowed[i]) == 0;
		if (!ok) {
			_cleanup_free_ char *shown = moat__escape_controls_dup(key);
			return moat_error_set(err, EINVAL, "approvals.%.64s: unknown field", shown ? shown : "?");
		}
	}
	return 0;
}

static int do_approve(moat_approvals *ap, uid_t uid, json_t *req, json_t **ret, moat_error *err)
{
	static const char *const keys[] = {"id", "kind", "for_ms", "scope", "note", "by", NULL};
	const char *id, *kind, *scope, *note, *by;
	int r;
	if ((r = check_keys(req, keys, err)) < 0 || (r = req_str(req, "id", true, 16, &id, err)) < 0 ||
	    (r = req_str(req, "by", false, 128, &by, err)) < 0 ||
	    (r = req_str(req, "kind", false, 16, &kind, err)) < 0 ||
	    (r = req_str(req, "scope", false, 16, &scope, err)) < 0 ||
	    (r = req_str(req, "note", false, MOAT_APPROVAL_NOTE_MAX - 1, &note, err)) < 0)
		return r;
	moat_decision d = {.allow = true, .kind = MOAT_LEASE_ONCE, .scope = MOAT_SCOPE_EXACT, .by = uid, .note = note};
	if (kind && strcmp(kind, "once") == 0)
		d.kind = MOAT_LEASE_ONCE;
	else if (kind && strcmp(kind, "for") == 0)
		d.kind = MOAT_LEASE_FOR;
	else if (kind && strcmp(kind, "session") == 0)
		d.kind = MOAT_LEASE_SESSION;
	else if (kind)
		return moat_error_set(err, EINVAL, "approvals.kind: not once, for or session");
	if (scope) {
		int s = moat_scope_from_string(scope);
		if (s < 0)
			return moat_error_set(err, EINVAL, "approvals.scope: not exact, path or host");
		d.scope = (moat_scope)s;
	}
	json_t *f = json_object_get(req, "for_ms");
	if (f) {
		if (!json_is_integer(f) || json_integer_value(f) <= 0 || (uint64_t)json_integer_value(f) > LEASE_MAX_MS)
			return moat_error_set(err, EINVAL, "approvals.for_ms: not a duration between 1 ms and a year");
		if (d.kind != MOAT_LEASE_FOR)
			return moat_error_set(err, EINVAL, "approvals.for_ms: only a 'for' lease has a duration");
		d.for_ms = (uint64_t)json_integer_value(f);
	} else if (d.kind == MOAT_LEASE_FOR)
		return moat_error_set(err, EINVAL, "approvals.for_ms: missing (a 'for' lease needs a duration)");
	char lid[MOAT_APPROVAL_ID_LEN] = "", hex[9];
	if (d.kind != MOAT_LEASE_ONCE) {
		if (moat__random_hex(4, hex) < 0)
			return moat_error_set(err, EIO, "lease id: no random bytes");
		snprintf(lid, sizeof(lid), "l%s", hex);
		d.lease_id = lid;
	}
	uint64_t now = mono_ms(), nw = wall_ms();
	pthread_mutex_lock(&ap->lock);
	moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	moat_approval *e = moat__approval_find(&ap->q, id);
	moat_lease *l = NULL;
	r = moat__approval_decide(&ap->q, id, &d, now, &l, err);
	if (r < 0) {
		pthread_mutex_unlock(&ap->lock);
		return r;
	}
	const char *sc = d.kind == MOAT_LEASE_ONCE ? NULL : moat_scope_to_string(d.scope);
	if (l) {
		json_t *g = lease_json(l, now, nw);
		if (g) {
			json_object_set_new(g, "approval", json_string(id));
			if (by)
				json_object_set_new(g, "by", moat_audit_bytes_json(by));
			json_object_del(g, "used");
			json_object_del(g, "granted_at");
			audit_flags(ap, "lease.grant", g, MOAT_AUDIT_ALWAYS);
		}
		/* Every approval the lease let through has its decision. */
		for (size_t i = 0; i < ap->q.n; i++)
			if (strcmp(ap->q.v[i].lease, l->id) == 0)
				audit_decision(ap, &ap->q.v[i], "allow", l, moat_lease_kind_to_string(d.kind), sc, by);
	} else
		audit_decision(ap, e, "allow", NULL, "once", NULL, by);
	*ret = json_pack("{s:s}", "id", id);
	if (*ret && l) {
		json_object_set_new(*ret, "lease", json_string(l->id));
		json_object_set_new(*ret, "until", l->kind == MOAT_LEASE_FOR ? when_json(l->until_ms, now, nw) : json_null());
	}
	pthread_mutex_unlock(&ap->lock);
	wake(ap);
	return *ret ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

static int do_deny(moat_approvals *ap, uid_t uid, json_t *req, json_t **ret, moat_error *err)
{
	static const char *const keys[] = {"id", "reason", "by", NULL};
	const char *id, *reason, *by;
	int r;
	if ((r = check_keys(req, keys, err)) < 0 || (r = req_str(req, "id", true, 16, &id, err)) < 0 ||
	    (r = req_str(req, "by", false, 128, &by, err)) < 0 ||
	    (r = req_str(req, "reason", false, MOAT_APPROVAL_NOTE_MAX - 1, &reason, err)) < 0)
		return r;
	moat_decision d = {.allow = false, .by = uid, .note = reason};
	uint64_t now = mono_ms();
	pthread_mutex_lock(&ap->lock);
	moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	r = moat__approval_decide(&ap->q, id, &d, now, NULL, err);
	if (r == 0)
		audit_decision(ap, moat__approval_find(&ap->q, id), "deny", NULL, NULL, NULL, by);
	pthread_mutex_unlock(&ap->lock);
	if (r < 0)
		return r;
	wake(ap);
	*ret = json_pack("{s:s}", "id", id);
	return *ret ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

static int do_revoke(moat_approvals *ap, uid_t uid, json_t *req, json_t **ret, moat_error *err)
{
	static const char *const keys[] = {"lease", NULL};
	const char *id;
	int r;
	if ((r = check_keys(req, keys, err)) < 0 || (r = req_str(req, "lease", true, 16, &id, err)) < 0)
		return r;
	pthread_mutex_lock(&ap->lock);
	moat_lease got;
	r = moat__approval_revoke(&ap->q, id, &got, err);
	if (r == 0) {
		json_t *f = json_pack("{s:s, s:i, s:I}", "lease", got.id, "by_uid", (int)uid, "used", (json_int_t)got.used);
		if (f)
			audit_flags(ap, "lease.revoke", f, MOAT_AUDIT_ALWAYS);
	}
	pthread_mutex_unlock(&ap->lock);
	if (r < 0)
		return r;
	*ret = json_pack("{s:s}", "lease", id);
	return *ret ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

static int do_list(moat_approvals *ap, bool leases, json_t *req, json_t **ret, moat_error *err)
{
	static const char *const keys[] = {NULL};
	int r = check_keys(req, keys, err);
	if (r < 0)
		return r;
	uint64_t now = mono_ms(), nw = wall_ms();
	json_t *a = json_array();
	pthread_mutex_lock(&ap->lock);
	moat__approval_expire(&ap->q, now, on_timeout, on_lease_expire, ap);
	if (leases)
		for (size_t i = 0; a && i < ap->q.n_leases; i++)
			json_array_append_new(a, lease_json(&ap->q.leases[i], now, nw));
	else
		for (size_t i = 0; a && i < ap->q.n; i++)
			if (ap->q.v[i].state == MOAT_APPROVAL_PENDING)
				json_array_append_new(a, moat__approval_to_json(&ap->q.v[i], ap->session, now, nw));
	pthread_mutex_unlock(&ap->lock);
	*ret = a ? json_pack("{s:o}", leases ? "leases" : "approvals", a) : NULL;
	return *ret ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

int moat_approvals_request(moat_approvals *ap, uid_t uid, json_t *req, json_t **ret, moat_error *err)
{
	*ret = NULL;
	const char *op;
	if (!ap)
		return moat_error_set(err, ENOTSUP, "this sandbox has no approval queue");
	if (!json_is_object(req))
		return moat_error_set(err, EINVAL, "approvals.body: not an object");
	int r = req_str(req, "op", true, 16, &op, err);
	if (r < 0)
		return r;
	if (strcmp(op, "ls") == 0)
		return do_list(ap, false, req, ret, err);
	if (strcmp(op, "leases") == 0)
		return do_list(ap, true, req, ret, err);
	if (strcmp(op, "approve") == 0)
		return do_approve(ap, uid, req, ret, err);
	if (strcmp(op, "deny") == 0)
		return do_deny(ap, uid, req, ret, err);
	if (strcmp(op, "revoke") == 0)
		return do_revoke(ap, uid, req, ret, err);
	_cleanup_free_ char *shown = moat__escape_controls_dup(op);
	return moat_error_set(err, EINVAL, "approvals.op: unknown operation '%.32s'", shown ? shown : "?");
}
