/* Approval gates, the pure part (approval.h). */
#include "approval.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"once", "for", "session"};
static const char *const scope_names[] = {"exact", "path", "host"};
static const char *const state_names[] = {"pending", "allowed", "denied", "timed_out"};

const char *moat_lease_kind_to_string(moat_lease_kind k)
{
	return (unsigned)k < ELEMENTSOF(kind_names) ? kind_names[k] : "?";
}

const char *moat_scope_to_string(moat_scope s)
{
	return (unsigned)s < ELEMENTSOF(scope_names) ? scope_names[s] : "?";
}

int moat_scope_from_string(const char *s)
{
	for (size_t i = 0; s && i < ELEMENTSOF(scope_names); i++)
		if (strcmp(s, scope_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *moat_approval_state_to_string(moat_approval_state s)
{
	return (unsigned)s < ELEMENTSOF(state_names) ? state_names[s] : "?";
}

/* ---- asks ---- */

static int copy_capped(char *dst, size_t cap, const char *src, const char *what, moat_error *err)
{
	size_t n = src ? strlen(src) : 0;
	if (n >= cap)
		return moat_error_set(err, E2BIG, "%s: longer than %zu bytes", what, cap - 1);
	memcpy(dst, src ? src : "", n + 1);
	return 0;
}

int moat__approval_ask_net(moat_ask *a, const char *host, uint16_t port, const char *method, const char *path,
			   moat_error *err)
{
	memset(a, 0, sizeof(*a));
	a->kind = MOAT_ASK_NET;
	a->port = port;
	int r;
	if (!host || !*host)
		return moat_error_set(err, EINVAL, "host: empty");
	if ((r = copy_capped(a->host, sizeof(a->host), host, "host", err)) < 0 ||
	    (r = copy_capped(a->method, sizeof(a->method), method, "method", err)) < 0)
		return r;
	size_t n = path ? strlen(path) : 0;
	if (n >= sizeof(a->path)) {
		/* Cut, and marked: a cut path names no request exactly, so it
		 * can be decided once but matches no exact or path lease. */
		n = sizeof(a->path) - 1;
		a->path_cut = true;
	}
	if (path)
		memcpy(a->path, path, n);
	a->path[n] = '\0';
	return 0;
}

int moat__approval_ask_exec(moat_ask *a, const char *exe, char *const *argv, moat_error *err)
{
	memset(a, 0, sizeof(*a));
	a->kind = MOAT_ASK_EXEC;
	int r = copy_capped(a->exe, sizeof(a->exe), exe, "exe", err);
	if (r < 0)
		return r;
	if (!exe || exe[0] != '/')
		return moat_error_set(err, EINVAL, "exe: not an absolute path");
	for (size_t i = 0; argv && argv[i]; i++) {
		size_t n = strlen(argv[i]) + 1;
		if (i >= MOAT_APPROVAL_ARGV_MAX || a->args_len + n > sizeof(a->args)) {
			a->argv_cut = true;
			break;
		}
		memcpy(a->args + a->args_len, argv[i], n);
		a->args_len += n;
		a->n_argv++;
	}
	return 0;
}

int moat__approval_ask_tool(moat_ask *a, const char *server, const char *tool, const char *args_json,
			    moat_error *err)
{
	memset(a, 0, sizeof(*a));
	a->kind = MOAT_ASK_TOOL;
	int r = copy_capped(a->exe, sizeof(a->exe), server, "server", err);
	if (r < 0)
		return r;
	size_t tn = tool ? strlen(tool) + 1 : 0;
	if (tn <= 1 || tn > MOAT_APPROVAL_METHOD_MAX * 8)
		return moat_error_set(err, EINVAL, "tool: a name of 1 to %d bytes is required", MOAT_APPROVAL_METHOD_MAX * 8 - 1);
	memcpy(a->args, tool, tn);
	a->args_len = tn;
	a->n_argv = 1;
	const char *j = args_json ? args_json : "{}";
	size_t jn = strlen(j);
	size_t room = sizeof(a->args) - a->args_len - 1;
	if (jn > room) {
		jn = room;
		a->argv_cut = true;
	}
	memcpy(a->args + a->args_len, j, jn);
	a->args[a->args_len + jn] = '\0';
	a->args_len += jn + 1;
	a->n_argv = 2;
	return 0;
}

void moat__approval_ask_format(const moat_ask *a, char *buf, size_t len)
{
	if (!len)
		return;
	if (a->kind == MOAT_ASK_TOOL) {
		const char *args = a->args + strlen(a->args) + 1;
		snprintf(buf, len, "tool %s %s %s%s", a->exe, a->args, args, a->argv_cut ? "..." : "");
		return;
	}
	if (a->kind == MOAT_ASK_NET) {
		if (a->method[0])
			snprintf(buf, len, "%s %s://%s:%u%s%s", a->method, a->tls ? "https" : "http", a->host,
				 (unsigned)a->port, a->path, a->path_cut ? "..." : "");
		else
			snprintf(buf, len, "CONNECT %s:%u", a->host, (unsigned)a->port);
		return;
	}
	size_t off = (size_t)snprintf(buf, len, "%s", a->exe);
	const char *p = a->args;
	/* argv[0] is the name the program was called by; the path says it. */
	for (size_t i = 0; i < a->n_argv; i++, p += strlen(p) + 1)
		if (i > 0 && off < len)
			off += (size_t)snprintf(buf + off, len - off, " %s", p);
	if (a->argv_cut && off < len)
		snprintf(buf + off, len - off, " ...");
}

/* ---- matching ---- */

int moat__approval_scope_check(const moat_ask *a, moat_scope scope, moat_error *err)
{
	if ((unsigned)scope > MOAT_SCOPE_HOST)
		return moat_error_set(err, EINVAL, "scope: not exact, path or host");
	if (a->kind == MOAT_ASK_EXEC && scope == MOAT_SCOPE_HOST)
		return moat_error_set(err, EINVAL, "scope: host is for network requests; a program takes exact or path");
	if (a->kind == MOAT_ASK_TOOL && scope == MOAT_SCOPE_HOST)
		return moat_error_set(err, EINVAL, "scope: host is for network requests; a tool takes exact or path");
	return 0;
}

/* The folder of a request's path: up to and including its last '/' before
 * any query ("/v1/mail/send?x=1" -> "/v1/mail/"). */
static size_t path_folder_len(const char *path)
{
	size_t end = strcspn(path, "?#");
	size_t n = 0;
	for (size_t i = 0; i < end; i++)
		if (path[i] == '/')
			n = i + 1;
	return n;
}

/* Whether a path lies inside folder (len bytes, ending in '/'), judged on
 * the path before its query. A path with a dot segment or an encoded
 * slash could climb out after the server decodes it: never inside. */
static bool path_inside(const char *path, const char *folder, size_t len)
{
	if (len == 0 || strncmp(path, folder, len) != 0)
		return false;
	size_t end = strcspn(path, "?#");
	for (size_t i = 0; i < end; i++) {
		if (path[i] == '%' && (strncasecmp(path + i, "%2f", 3) == 0 || strncasecmp(path + i, "%5c", 3) == 0 ||
				       strncasecmp(path + i, "%2e", 3) == 0))
			return false;
		if (path[i] == '\\')
			return false;
		if (path[i] == '.' && (i == 0 || path[i - 1] == '/') &&
		    (path[i + 1] == '/' || i + 1 == end || (path[i + 1] == '.' && (path[i + 2] == '/' || i + 2 == end))))
			return false;
	}
	return true;
}

bool moat__lease_matches(const moat_lease *l, const moat_ask *a, uint64_t now_ms)
{
	if (l->kind == MOAT_LEASE_FOR && now_ms >= l->until_ms)
		return false;
	if (l->kind == MOAT_LEASE_ONCE)
		return false;
	const moat_ask *w = &l->what;
	if (w->kind != a->kind)
		return false;
	if (a->kind == MOAT_ASK_NET) {
		if (strcmp(w->host, a->host) != 0 || w->port != a->port)
			return false;
		switch (l->scope) {
		case MOAT_SCOPE_HOST:
			return true;
		case MOAT_SCOPE_PATH:
			if (a->path_cut || w->path_cut || strcmp(w->method, a->method) != 0)
				return false;
			if (!w->method[0])
				return true; /* a tunnel has no path: path is host */
			return path_inside(a->path, w->path, path_folder_len(w->path));
		case MOAT_SCOPE_EXACT:
			return !a->path_cut && !w->path_cut && strcmp(w->method, a->method) == 0 &&
			       strcmp(w->path, a->path) == 0;
		}
		return false;
	}
	if (strcmp(w->exe, a->exe) != 0)
		return false;
	if (a->kind == MOAT_ASK_TOOL) {
		/* path: the same tool with any arguments */
		if (strcmp(w->args, a->args) != 0)
			return false;
		if (l->scope == MOAT_SCOPE_PATH)
			return true;
	}
	switch (l->scope) {
	case MOAT_SCOPE_PATH:
		return true;
	case MOAT_SCOPE_EXACT:
		return !a->argv_cut && !w->argv_cut && w->n_argv == a->n_argv && w->args_len == a->args_len &&
		       memcmp(w->args, a->args, a->args_len) == 0;
	default:
		return false;
	}
}

/* ---- the queue ---- */

void moat__approval_queue_init(moat_approval_queue *q)
{
	memset(q, 0, sizeof(*q));
}

void moat__approval_queue_done(moat_approval_queue *q)
{
	free(q->v);
	free(q->leases);
	moat__approval_queue_init(q);
}

size_t moat__approval_pending(const moat_approval_queue *q)
{
	size_t n = 0;
	for (size_t i = 0; i < q->n; i++)
		n += q->v[i].state == MOAT_APPROVAL_PENDING;
	return n;
}

moat_lease *moat__approval_lease_match(moat_approval_queue *q, const moat_ask *a, uint64_t now_ms)
{
	for (size_t i = 0; i < q->n_leases; i++)
		if (moat__lease_matches(&q->leases[i], a, now_ms))
			return &q->leases[i];
	return NULL;
}

bool moat__approval_id_valid(const char *s, char prefix)
{
	if (!s || s[0] != prefix || strlen(s) != 9)
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

moat_approval *moat__approval_find(moat_approval_queue *q, const char *id)
{
	for (size_t i = 0; id && i < q->n; i++)
		if (strcmp(q->v[i].id, id) == 0)
			return &q->v[i];
	return NULL;
}

moat_approval *moat__approval_find_ticket(moat_approval_queue *q, uint64_t ticket)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].ticket == ticket)
			return &q->v[i];
	return NULL;
}

static moat_lease *lease_find(moat_approval_queue *q, const char *id)
{
	for (size_t i = 0; id && i < q->n_leases; i++)
		if (strcmp(q->leases[i].id, id) == 0)
			return &q->leases[i];
	return NULL;
}

int moat__approval_add(moat_approval_queue *q, const moat_ask *a, const char *id, uint64_t ticket, uint64_t now_ms,
		       uint64_t timeout_ms, moat_approval **ret, moat_error *err)
{
	if (!moat__approval_id_valid(id, 'a'))
		return moat_error_set(err, EINVAL, "id: not an approval id");
	if (moat__approval_find(q, id) || moat__approval_find_ticket(q, ticket) || lease_find(q, id))
		return moat_error_set(err, EEXIST, "approval %s: the id or ticket is in use", id);
	/* Decided entries not collected yet count too: their holders are
	 * still connections of the sandbox's. */
	if (q->n >= MOAT_APPROVAL_MAX_PENDING)
		return moat_error_set(err, E2BIG, "%d actions wait for approval already", MOAT_APPROVAL_MAX_PENDING);
	moat_approval *v = realloc(q->v, (q->n + 1) * sizeof(*v));
	if (!v)
		return moat_error_set(err, ENOMEM, "out of memory");
	q->v = v;
	moat_approval *e = &q->v[q->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->ticket = ticket;
	e->ask = *a;
	e->asked_ms = now_ms;
	/* A timeout so large it wraps is no timeout at all: capped. */
	e->expires_ms = timeout_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + timeout_ms;
	e->state = MOAT_APPROVAL_PENDING;
	if (ret)
		*ret = e;
	return 0;
}

int moat__approval_decide(moat_approval_queue *q, const char *id, const moat_decision *d, uint64_t now_ms,
			  moat_lease **ret_lease, moat_error *err)
{
	if (ret_lease)
		*ret_lease = NULL;
	moat_approval *e = moat__approval_find(q, id);
	if (!e)
		return moat_error_set(err, ENOENT, "%s: no such approval waits", id);
	if (e->state == MOAT_APPROVAL_PENDING && now_ms >= e->expires_ms)
		return moat_error_set(err, EALREADY, "%s: timed out already", id);
	if (e->state != MOAT_APPROVAL_PENDING)
		return moat_error_set(err, EALREADY, "%s: %s already", id, moat_approval_state_to_string(e->state));
	if (d->note && strlen(d->note) >= MOAT_APPROVAL_NOTE_MAX)
		return moat_error_set(err, E2BIG, "%s: longer than %d bytes", d->allow ? "note" : "reason",
				      MOAT_APPROVAL_NOTE_MAX - 1);
	if (!d->allow) {
		e->state = MOAT_APPROVAL_DENIED;
		e->by = d->by;
		snprintf(e->reason, sizeof(e->reason), "%s", d->note && *d->note ? d->note : "no reason given");
		return 0;
	}
	if ((unsigned)d->kind > MOAT_LEASE_SESSION)
		return moat_error_set(err, EINVAL, "kind: not once, for or session");
	int r = moat__approval_scope_check(&e->ask, d->scope, err);
	if (r < 0)
		return r;
	if (d->kind == MOAT_LEASE_ONCE) {
		if (d->scope != MOAT_SCOPE_EXACT)
			return moat_error_set(err, EINVAL,
					      "scope: a once approval is for that one action; a scope needs --for or --session");
		e->state = MOAT_APPROVAL_ALLOWED;
		e->by = d->by;
		snprintf(e->reason, sizeof(e->reason), "%s", d->note ? d->note : "");
		return 0;
	}
	if (d->kind == MOAT_LEASE_FOR && d->for_ms == 0)
		return moat_error_set(err, EINVAL, "for: a lease needs a duration above zero");
	if (!moat__approval_id_valid(d->lease_id, 'l') || lease_find(q, d->lease_id))
		return moat_error_set(err, EINVAL, "lease: not a fresh lease id");
	if (q->n_leases >= MOAT_APPROVAL_MAX_LEASES)
		return moat_error_set(err, E2BIG, "%d leases are held already; revoke some first", MOAT_APPROVAL_MAX_LEASES);
	moat_lease *v = realloc(q->leases, (q->n_leases + 1) * sizeof(*v));
	if (!v)
		return moat_error_set(err, ENOMEM, "out of memory");
	q->leases = v;
	moat_lease *l = &q->leases[q->n_leases++];
	memset(l, 0, sizeof(*l));
	snprintf(l->id, sizeof(l->id), "%s", d->lease_id);
	l->kind = d->kind;
	l->scope = d->scope;
	l->what = e->ask;
	l->granted_ms = now_ms;
	l->until_ms = d->kind == MOAT_LEASE_FOR ? (d->for_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + d->for_ms) : 0;
	l->by = d->by;
	snprintf(l->note, sizeof(l->note), "%s", d->note ? d->note : "");
	/* The asked action and every other one waiting that the lease
	 * covers go through now, each naming the lease. */
	for (size_t i = 0; i < q->n; i++) {
		moat_approval *o = &q->v[i];
		if (o->state != MOAT_APPROVAL_PENDING || now_ms >= o->expires_ms)
			continue;
		if (o != e && !moat__lease_matches(l, &o->ask, now_ms))
			continue;
		o->state = MOAT_APPROVAL_ALLOWED;
		o->by = d->by;
		snprintf(o->reason, sizeof(o->reason), "%s", l->note);
		snprintf(o->lease, sizeof(o->lease), "%s", l->id);
		l->used++;
	}
	if (ret_lease)
		*ret_lease = l;
	return 0;
}

void moat__approval_expire(moat_approval_queue *q, uint64_t now_ms,
			   void (*on_timeout)(void *ud, const moat_approval *a),
			   void (*on_lease_expire)(void *ud, const moat_lease *l), void *ud)
{
	for (size_t i = 0; i < q->n; i++) {
		moat_approval *e = &q->v[i];
		if (e->state != MOAT_APPROVAL_PENDING || now_ms < e->expires_ms)
			continue;
		e->state = MOAT_APPROVAL_TIMED_OUT;
		snprintf(e->reason, sizeof(e->reason), "no one decided in time");
		if (on_timeout)
			on_timeout(ud, e);
	}
	for (size_t i = 0; i < q->n_leases;) {
		moat_lease *l = &q->leases[i];
		if (l->kind == MOAT_LEASE_FOR && now_ms >= l->until_ms) {
			if (on_lease_expire)
				on_lease_expire(ud, l);
			q->leases[i] = q->leases[--q->n_leases];
		} else
			i++;
	}
}

int moat__approval_revoke(moat_approval_queue *q, const char *id, moat_lease *ret, moat_error *err)
{
	moat_lease *l = lease_find(q, id);
	if (!l)
		return moat_error_set(err, ENOENT, "%s: no such lease is held", id ? id : "");
	if (ret)
		*ret = *l;
	*l = q->leases[--q->n_leases];
	return 0;
}

bool moat__approval_remove_ticket(moat_approval_queue *q, uint64_t ticket, moat_approval *ret)
{
	moat_approval *e = moat__approval_find_ticket(q, ticket);
	if (!e)
		return false;
	if (ret)
		*ret = *e;
	/* Asking order is kept: ls lists the oldest first. */
	size_t i = (size_t)(e - q->v);
	memmove(&q->v[i], &q->v[i + 1], (q->n - i - 1) * sizeof(*e));
	q->n--;
	return true;
}

uint64_t moat__approval_next_deadline(const moat_approval_queue *q)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].state == MOAT_APPROVAL_PENDING && q->v[i].expires_ms < t)
			t = q->v[i].expires_ms;
	for (size_t i = 0; i < q->n_leases; i++)
		if (q->leases[i].kind == MOAT_LEASE_FOR && q->leases[i].until_ms < t)
			t = q->leases[i].until_ms;
	return t;
}

bool moat__rate_take(moat_rate *r, uint64_t now_ms)
{
	uint64_t cap = r->burst * 1000;
	if (!r->started) {
		r->started = true;
		r->tokens_milli = cap;
		r->last_ms = now_ms;
	}
	if (now_ms > r->last_ms && r->every_ms) {
		uint64_t add = (now_ms - r->last_ms) * 1000 / r->every_ms;
		r->tokens_milli = add > cap - r->tokens_milli ? cap : r->tokens_milli + add;
		r->last_ms = now_ms;
	}
	if (r->tokens_milli < 1000)
		return false;
	r->tokens_milli -= 1000;
	return true;
}
