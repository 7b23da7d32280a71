/* Sessions (session.h): records of long-lived sandboxes, and the front's
 * side of stopping and removing them (exec: session-exec.c). */
#include "session.h"

#include "config.h"
#include "units.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#define RECORD "session.json"
/* A record is a few hundred bytes; anything larger is not one of ours. */
#define RECORD_MAX 8192

bool moat__session_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > MOAT_SESSION_NAME_MAX)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return false;
	}
	/* A name that reads as an id would make `ID|NAME` ambiguous. */
	return !moat__keeper_id_valid(s);
}

static int base_open(char *path, size_t len, moat_error *err)
{
	return moat__runtime_base_open("sessions", path, len, err);
}

/* Writes the record of s into its folder dfd, replacing it whole. */
static int record_write(int dfd, const moat_session_info *s, bool stopped, moat_error *err)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:s, s:s, s:b, s:s, s:b, s:I, s:I, s:s, s:b, s:b}", "id", s->id,
			      "name", s->name, "created", (json_int_t)s->created, "keeper_pid", (int)s->keeper_pid,
			      "socket", s->socket, "policy_sha256", s->policy_sha256, "stopped", stopped, "workspace",
			      s->workspace, "workspace_persistent", s->workspace_persistent, "ttl_ms",
			      (json_int_t)s->ttl_ms, "idle_ms", (json_int_t)s->idle_ms, "audit_log", s->audit_log,
			      "audit_own", s->audit_own, "record", s->record);
	_cleanup_free_ char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!txt)
		return moat_error_set(err, ENOMEM, "out of memory");
	(void)unlinkat(dfd, RECORD ".new", 0);
	_cleanup_close_ int fd = openat(dfd, RECORD ".new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || moat__write_all(fd, txt, strlen(txt)) < 0 || moat__write_all(fd, "\n", 1) < 0 ||
	    renameat(dfd, RECORD ".new", dfd, RECORD) < 0)
		return moat_error_errno(err, errno, "session %s: write its record", s->id);
	return 0;
}

/* Reads the record in folder dfd (named id); *ret_stopped: whether it was
 * stopped. -EINVAL for anything that is not a record moat wrote. */
static int record_read(int dfd, const char *id, moat_session_info *ret, bool *ret_stopped)
{
	_cleanup_close_ int fd = openat(dfd, RECORD, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[RECORD_MAX + 1];
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || (len += (size_t)n) >= sizeof(buf) - 1)
			break;
	}
	if (len >= RECORD_MAX)
		return -EINVAL;
	json_t *o = json_loadb(buf, len, 0, NULL);
	const char *rid, *name, *sock, *sha, *ws = "", *alog = "";
	int aown = 0, rec = 0;
	json_int_t created, ttl = 0, idle = 0;
	int pid, stopped, ws_persistent = 0;
	int r = -EINVAL;
	if (o &&
	    json_unpack(o, "{s:s, s:s, s:I, s:i, s:s, s:s, s:b, s?:s, s?:b, s?:I, s?:I, s?:s, s?:b, s?:b}", "id", &rid,
			"name", &name, "created", &created, "keeper_pid", &pid, "socket", &sock, "policy_sha256", &sha,
			"stopped", &stopped, "workspace", &ws, "workspace_persistent", &ws_persistent, "ttl_ms", &ttl,
			"idle_ms", &idle, "audit_log", &alog, "audit_own", &aown, "record", &rec) == 0 &&
	    strlen(alog) < sizeof(ret->audit_log) &&
	    ttl >= 0 && idle >= 0 &&
	    strcmp(rid, id) == 0 && strlen(name) < sizeof(ret->name) && strlen(sock) < sizeof(ret->socket) &&
	    strlen(sha) < sizeof(ret->policy_sha256) && strlen(ws) < sizeof(ret->workspace)) {
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->id, sizeof(ret->id), "%s", rid);
		snprintf(ret->name, sizeof(ret->name), "%s", name);
		snprintf(ret->socket, sizeof(ret->socket), "%s", sock);
		snprintf(ret->policy_sha256, sizeof(ret->policy_sha256), "%s", sha);
		snprintf(ret->workspace, sizeof(ret->workspace), "%s", ws);
		ret->workspace_persistent = ws_persistent;
		snprintf(ret->audit_log, sizeof(ret->audit_log), "%s", alog);
		ret->audit_own = aown;
		ret->record = rec;
		ret->ttl_ms = (uint64_t)ttl;
		ret->idle_ms = (uint64_t)idle;
		ret->created = created;
		ret->keeper_pid = pid;
		*ret_stopped = stopped;
		r = 0;
	}
	json_decref(o);
	return r;
}

/* What the keeper wrote in end.json when it ended, into s->end_reason. */
static void read_end(int dfd, moat_session_info *s)
{
	s->end_reason[0] = '\0';
	_cleanup_close_ int fd = openat(dfd, "end.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[512];
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return;
	json_t *o = json_loadb(buf, (size_t)n, 0, NULL);
	const char *r = NULL;
	json_t *l = o ? json_object_get(o, "limit") : NULL;
	const char *limit = json_is_string(l) ? json_string_value(l) : NULL;
	if (o && json_unpack(o, "{s:s}", "reason", &r) == 0 && strlen(r) < sizeof(s->end_reason))
		snprintf(s->end_reason, sizeof(s->end_reason), "%s", r);
	if (limit && strcmp(s->end_reason, "limit") == 0)
		snprintf(s->reason, sizeof(s->reason), "limit: %.32s", limit);
	json_decref(o);
}

static void say_why_dead(moat_session_info *s, bool stopped, int dfd);

/* Whether the session's keeper lives, from its runtime folder alone (the
 * folder of its socket, BASE/sandboxes/ID): the keeper holds an flock on
 * ID/lock for as long as it lives (keeper.h), and the record names its
 * pid. What a listing needs, without a hello to every keeper of the user:
 * each one would wake for it, and a stopped one would hold the listing up
 * until the hello timed out. The keeper removes its ctl as it stops
 * taking clients (a stop returns after that), so a keeper that is ending
 * shows as dead, as the hello had it; one alive but not answering shows
 * as running, as with the hello too (its reason is for a dead one). */
static void probe_lock(moat_session_info *s, bool stopped, int dfd)
{
	s->running = false;
	s->unanswered = false;
	s->reason[0] = '\0';
	char dir[PATH_MAX];
	const char *slash = strrchr(s->socket, '/');
	size_t dlen = slash ? (size_t)(slash - s->socket) : 0;
	const char *leaf = NULL;
	if (slash && dlen < sizeof(dir)) {
		memcpy(dir, s->socket, dlen);
		dir[dlen] = '\0';
		leaf = strrchr(dir, '/');
	}
	/* The socket's folder is the keeper's, named by the session's id. */
	if (leaf && strcmp(leaf + 1, s->id) == 0 && strcmp(slash, "/ctl") == 0) {
		_cleanup_close_ int kfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int lock = kfd >= 0 ? openat(kfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
		struct stat st;
		/* Held: its keeper's (the pid checked too: a sweep holds a dead
		 * keeper's lock for as long as it takes to remove its folder). */
		if (lock >= 0 && fstat(lock, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
			if (flock(lock, LOCK_SH | LOCK_NB) < 0)
				s->running = errno == EWOULDBLOCK && s->keeper_pid > 0 &&
					     (kill(s->keeper_pid, 0) == 0 || errno == EPERM) &&
					     faccessat(kfd, "ctl", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		}
	}
	if (!s->running)
		say_why_dead(s, stopped, dfd);
}

/* Whether the session's keeper answers: a hello on its socket; when it
 * does not, why it ended, in words. With keep, a keeper that answered
 * stays connected there (the caller's to close). */
static void probe(moat_session_info *s, bool stopped, int dfd, moat_keeper **keep)
{
	moat_keeper *k = NULL;
	moat_error err = {0};
	int r = moat_keeper_connect(s->socket, &k, &err);
	s->running = r == 0 && strcmp(moat_keeper_sandbox_id(k), s->id) == 0;
	if (s->running && keep && !*keep)
		*keep = TAKE_PTR(k);
	moat_keeper_close(k);
	s->reason[0] = '\0';
	/* A keeper that took the connection but said nothing is alive (its
	 * socket is there, its queue took us): stopped or hung, not ended. */
	s->unanswered = r == -ETIMEDOUT;
	s->busy = false;
	if (s->unanswered) {
		s->running = true;
		snprintf(s->reason, sizeof(s->reason), "not answering: %s", err.msg);
		return;
	}
	/* One at its connection cap said so (keeper.c): alive, and busy. */
	s->busy = r == -EBUSY;
	if (s->busy) {
		s->running = s->unanswered = true;
		snprintf(s->reason, sizeof(s->reason), "%s", err.msg);
		return;
	}
	if (s->running)
		return;
	say_why_dead(s, stopped, dfd);
}

/* Why the session's keeper ended, in words, into s->reason. */
static void say_why_dead(moat_session_info *s, bool stopped, int dfd)
{
	read_end(dfd, s);
	if (s->reason[0])
		return;
	const char *why = s->end_reason;
	char d[32];
	if (strcmp(why, "ttl") == 0) {
		moat_format_duration_ms(s->ttl_ms, d, sizeof(d));
		snprintf(s->reason, sizeof(s->reason), "ttl: its time to live (%s) passed", d);
	} else if (strcmp(why, "idle") == 0) {
		moat_format_duration_ms(s->idle_ms, d, sizeof(d));
		snprintf(s->reason, sizeof(s->reason), "idle: no command for %s", d);
	}
	else if (stopped || strcmp(why, "stopped") == 0)
		snprintf(s->reason, sizeof(s->reason), "stopped");
	else if (why[0])
		snprintf(s->reason, sizeof(s->reason), "%s", why);
	else
		snprintf(s->reason, sizeof(s->reason), "keeper killed: it ended without a stop or saying why");
}

/* base's folder as a directory stream of its own, from the start. */
static int sessions_open(int base_fd, const char *base, DIR **ret, moat_error *err)
{
	int dup = fcntl(base_fd, F_DUPFD_CLOEXEC, 3);
	DIR *dir = dup >= 0 ? fdopendir(dup) : NULL;
	if (!dir) {
		int e = errno;
		if (dup >= 0)
			close(dup);
		return moat_error_errno(err, e, "sessions %s: read it", base);
	}
	rewinddir(dir);
	*ret = dir;
	return 0;
}

/* The next session folder of this user in dir whose record reads (only
 * the folder named only_id, when not NULL): its record in *s, and its
 * folder, open, returned (the caller closes it). -1: no more. */
static int sessions_next(DIR *dir, int base_fd, const char *only_id, moat_session_info *s, bool *stopped)
{
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!moat__keeper_id_valid(de->d_name) || (only_id && strcmp(de->d_name, only_id) != 0))
			continue;
		_cleanup_close_ int dfd = openat(base_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid())
			continue;
		*stopped = false;
		if (record_read(dfd, de->d_name, s, stopped) < 0)
			continue;
		return TAKE_FD(dfd);
	}
	return -1;
}

static int cmp_created(const void *a, const void *b)
{
	const moat_session_info *x = a, *y = b;
	return x->created < y->created ? -1 : x->created > y->created ? 1 : strcmp(x->id, y->id);
}

/* The sessions in base (only those whose id or name is key, when key is
 * not NULL: the others' keepers are not asked, so that finding one session
 * costs one keeper's hello, not one per session of the user). With ret_k,
 * the connection to the first one found running is kept there (a name is
 * never an id and is used once, so at most one matches key). Without
 * probe, no keeper is asked at all (running false, no reason). */
static int list_in(int base_fd, const char *base, const char *key, bool probe_them, moat_session_info **ret,
		   size_t *ret_n, moat_keeper **ret_k, moat_error *err)
{
	DIR *dir = NULL;
	int r = sessions_open(base_fd, base, &dir, err);
	if (r < 0)
		return r;
	moat_session_info *v = NULL;
	size_t n = 0;
	/* An id names its folder (a name is never an id): the others are not
	 * opened, nor their records read. */
	bool key_is_id = key && moat__keeper_id_valid(key);
	moat_session_info s;
	bool stopped;
	for (int fd; n < MOAT_SESSION_MAX && (fd = sessions_next(dir, base_fd, key_is_id ? key : NULL, &s, &stopped)) >= 0;) {
		_cleanup_close_ int dfd = fd;
		if (key && strcmp(s.id, key) != 0 && !(s.name[0] && strcmp(s.name, key) == 0))
			continue;
		snprintf(s.dir, sizeof(s.dir), "%s/%s", base, s.id);
		/* Listing all: the keepers' locks tell which live, and none is
		 * asked. Finding one: it is asked (its caller talks to it). */
		if (probe_them && !key && !ret_k)
			probe_lock(&s, stopped, dfd);
		else if (probe_them)
			probe(&s, stopped, dfd, ret_k);
		else {
			s.running = false;
			s.reason[0] = '\0';
		}
		moat_session_info *nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(dir);
			return moat_error_set(err, ENOMEM, "out of memory");
		}
		v = nv;
		v[n++] = s;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), cmp_created);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* create's check: how many sessions base holds (*ret_n, up to
 * MOAT_SESSION_MAX) and, when name is not NULL, the id of the one named
 * so (ret_taken, "" when none). What list_in counts, but each record is
 * read into one place on the stack and no list is built: a list entry is
 * some 17 kB, and a list of every session of the user, grown one entry at
 * a time, cost create a page fault per 4 kB of it and a remap per entry. */
static int count_names(int base_fd, const char *base, const char *name, size_t *ret_n,
		       char ret_taken[MOAT_KEEPER_ID_LEN], moat_error *err)
{
	DIR *dir = NULL;
	int r = sessions_open(base_fd, base, &dir, err);
	if (r < 0)
		return r;
	size_t n = 0;
	ret_taken[0] = '\0';
	moat_session_info s;
	bool stopped;
	for (int fd; n < MOAT_SESSION_MAX && (fd = sessions_next(dir, base_fd, NULL, &s, &stopped)) >= 0;) {
		close(fd);
		n++;
		if (name && s.name[0] && strcmp(s.name, name) == 0) {
			snprintf(ret_taken, MOAT_KEEPER_ID_LEN, "%s", s.id);
			break;
		}
	}
	closedir(dir);
	*ret_n = n;
	return 0;
}

int moat_session_list(moat_session_info **ret, size_t *ret_n, moat_error *err)
{
	char base[PATH_MAX];
	_cleanup_close_ int fd = base_open(base, sizeof(base), err);
	if (fd < 0)
		return fd;
	return list_in(fd, base, NULL, true, ret, ret_n, NULL, err);
}

int moat_session_find_connected(const char *key, moat_session_info *ret, moat_keeper **ret_k, moat_error *err)
{
	_cleanup_free_ moat_session_info *v = NULL;
	size_t n = 0;
	char base[PATH_MAX];
	if (ret_k)
		*ret_k = NULL;
	_cleanup_close_ int fd = base_open(base, sizeof(base), err);
	if (fd < 0)
		return fd;
	moat_keeper *k = NULL;
	int r = list_in(fd, base, key, true, &v, &n, ret_k ? &k : NULL, err);
	if (r < 0) {
		moat_keeper_close(k);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].id, key) == 0 || (v[i].name[0] && strcmp(v[i].name, key) == 0)) {
			*ret = v[i];
			/* Alive but silent: no connection to hand over. */
			if (ret_k && ret->unanswered) {
				moat_keeper_close(k);
				return moat_error_set(err, ret->busy ? EBUSY : ETIMEDOUT, "session %s: %s", ret->id,
						      ret->reason);
			}
			/* k is that session's: the only one that matched. */
			if (ret_k && ret->running)
				*ret_k = TAKE_PTR(k);
			moat_keeper_close(k);
			return 0;
		}
	moat_keeper_close(k);
	return moat_error_set(err, ENOENT, "no session with the id or name '%s'", key);
}

int moat_session_find(const char *key, moat_session_info *ret, moat_error *err)
{
	return moat_session_find_connected(key, ret, NULL, err);
}

void moat__session_default_limits(moat_policy *p)
{
	if (!(p->limits_set & MOAT_LIMIT_WALL))
		p->limits.wall_ms = MOAT_SESSION_DEFAULT_WALL_MS;
	if (!(p->limits_set & MOAT_LIMIT_CPU_TIME))
		p->limits.cpu_ms = MOAT_SESSION_DEFAULT_CPU_MS;
}

int moat_session_create(const moat_policy *policy, const char *name, const moat_session_workspace *ws,
			const moat_session_lifetime *life, const moat_keeper_start_opts *opts, moat_session_info *ret,
			moat_error *err)
{
	if (name && !moat__session_name_valid(name))
		return moat_error_set(err, EINVAL,
				      "session name '%s': 1 to %d characters of A-Z a-z 0-9 . _ -, starting with a "
				      "letter or digit, and not a session id",
				      name, MOAT_SESSION_NAME_MAX);
	char base[PATH_MAX];
	_cleanup_close_ int base_fd = base_open(base, sizeof(base), err);
	if (base_fd < 0)
		return base_fd;
	/* One create at a time per user: the name is checked and taken under
	 * this lock, so two creates with one name cannot both win. */
	_cleanup_close_ int lock = openat(base_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return moat_error_errno(err, errno, "sessions %s: take its lock", base);
	/* Names and a count only: no keeper is asked (one hello per session
	 * of the user would be on every create's path), but the one whose
	 * name is taken, for the message. */
	size_t n = 0;
	char taken[MOAT_KEEPER_ID_LEN] = "";
	int r = count_names(base_fd, base, name, &n, taken, err);
	if (r < 0)
		return r;
	if (taken[0]) {
		_cleanup_free_ moat_session_info *w = NULL;
		size_t nw = 0;
		bool running = list_in(base_fd, base, name, true, &w, &nw, NULL, err) >= 0 && nw && w[0].running;
		return moat_error_set(err, EEXIST, "session name '%s': in use by session %s (%s)", name, taken,
				      running ? "running" : "dead; 'moat session rm' it to free the name");
	}
	if (n >= MOAT_SESSION_MAX)
		return moat_error_set(err, EAGAIN, "sessions: %d are there already (remove some)", MOAT_SESSION_MAX);
	/* The run specification's hash is the one session.start logs. */
	_cleanup_config_ moat_config *c = NULL;
	if ((r = moat_policy_compile(policy, NULL, &c, err)) < 0)
		return r;
	_cleanup_free_ char *yaml = moat_policy_to_yaml(policy);
	if (!yaml)
		return moat_error_set(err, ENOMEM, "out of memory");
	moat_keeper_info ki;
	if ((r = moat_keeper_start(yaml, opts, &ki, err)) < 0)
		return r;
	moat_session_info s;
	memset(&s, 0, sizeof(s));
	snprintf(s.id, sizeof(s.id), "%s", ki.id);
	snprintf(s.name, sizeof(s.name), "%s", name ? name : "");
	snprintf(s.socket, sizeof(s.socket), "%s", ki.socket);
	snprintf(s.policy_sha256, sizeof(s.policy_sha256), "%s", c->policy_sha256);
	snprintf(s.dir, sizeof(s.dir), "%s/%s", base, s.id);
	s.keeper_pid = ki.pid;
	s.created = (int64_t)time(NULL);
	s.running = true;
	if (ws && ws->host_path)
		snprintf(s.workspace, sizeof(s.workspace), "%s", ws->host_path);
	if (life) {
		s.ttl_ms = life->ttl_ms;
		s.idle_ms = life->idle_ms;
	}
	r = 0;
	s.record = ws && ws->record;
	if (ws && ws->log_path)
		snprintf(s.audit_log, sizeof(s.audit_log), "%s", ws->log_path);
	if (ws && ws->log_tmp) {
		s.audit_own = true;
		r = moat__session_log_adopt(ws->log_tmp, s.id, s.audit_log, sizeof(s.audit_log), err);
	}
	if (r >= 0 && ws && ws->persistent_tmp) {
		/* Its path, made before the keeper, is the one its policy
		 * names: it keeps it (session-workspace.c). */
		s.workspace_persistent = true;
	}
	_cleanup_close_ int dfd = -1;
	if (r < 0)
		;
	else if (mkdirat(base_fd, s.id, 0700) < 0 ||
	    (dfd = openat(base_fd, s.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = moat_error_errno(err, errno, "session %s: make its folder", s.dir);
	else
		r = record_write(dfd, &s, false, err);
	if (r >= 0) {
		/* The keeper enforces the lifetime and says, in this folder,
		 * why the session ended. */
		moat_keeper *lk = NULL;
		if ((r = moat_keeper_connect(ki.socket, &lk, err)) >= 0)
			r = moat_keeper_lifetime(lk, s.ttl_ms, s.idle_ms, dfd, err);
		moat_keeper_close(lk);
	}
	if (r < 0) {
		/* No session without its record: its keeper goes. */
		moat_keeper *k = NULL;
		moat_error e2 = {0};
		if (moat_keeper_connect(ki.socket, &k, &e2) == 0)
			(void)moat_keeper_stop(k, &e2);
		moat_keeper_close(k);
		if (dfd >= 0) {
			(void)unlinkat(dfd, RECORD, 0);
			(void)unlinkat(dfd, "end.json", 0);
		}
		(void)unlinkat(base_fd, s.id, AT_REMOVEDIR);
		if (s.workspace_persistent)
			(void)moat__session_workspace_purge(ws->persistent_tmp, &e2);
		if (s.audit_own)
			(void)moat__session_log_remove(s.id, &e2);
		return r;
	}
	*ret = s;
	return 0;
}

/* Waits until the keeper has closed the connection: it ends only after
 * its sandbox has. */
static void wait_closed(moat_keeper *k)
{
	struct pollfd p = {.fd = moat_keeper_fd(k), .events = POLLIN};
	for (;;) {
		char b[512];
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return;
		ssize_t n = recv(p.fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static int mark_stopped(const moat_session_info *s, moat_error *err)
{
	char base[PATH_MAX];
	_cleanup_close_ int base_fd = base_open(base, sizeof(base), err);
	if (base_fd < 0)
		return base_fd;
	_cleanup_close_ int dfd = openat(base_fd, s->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_errno(err, errno, "session %s: open its folder", s->id);
	return record_write(dfd, s, true, err);
}

int moat_session_stop(const moat_session_info *s, moat_error *err)
{
	_cleanup_keeper_ moat_keeper *k = NULL;
	if (moat_keeper_connect(s->socket, &k, err) < 0 || strcmp(moat_keeper_sandbox_id(k), s->id) != 0)
		return moat_error_set(err, ESRCH, "session %s: not running", s->name[0] ? s->name : s->id);
	int r = mark_stopped(s, err);
	if (r < 0)
		return r;
	if ((r = moat_keeper_stop(k, err)) < 0)
		return r;
	wait_closed(k);
	return 0;
}

/* The recordings (create --record) in a session's folder: rec-*.cast. */
static void remove_recordings(int dfd)
{
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "rec-", 4) == 0 && n > 5 && strcmp(e->d_name + n - 5, ".cast") == 0)
			(void)unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

int moat_session_remove(const moat_session_info *s, bool purge, moat_error *err)
{
	moat_session_info cur = *s;
	if (cur.running) {
		int r = moat_session_stop(&cur, err);
		if (r < 0 && r != -ESRCH)
			return r;
	}
	char base[PATH_MAX];
	_cleanup_close_ int base_fd = base_open(base, sizeof(base), err);
	if (base_fd < 0)
		return base_fd;
	_cleanup_close_ int dfd = openat(base_fd, cur.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0) {
		(void)unlinkat(dfd, RECORD, 0);
		(void)unlinkat(dfd, RECORD ".new", 0);
		(void)unlinkat(dfd, "end.json", 0);
		(void)unlinkat(dfd, "end.json.new", 0);
		remove_recordings(dfd);
	}
	if (unlinkat(base_fd, cur.id, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return moat_error_errno(err, errno, "session %s: remove its folder", cur.dir);
	if (cur.audit_own) {
		int r = moat__session_log_remove(cur.id, err);
		if (r < 0)
			return r;
	}
	if (purge && cur.workspace_persistent) {
		const char *slash = strrchr(cur.workspace, '/');
		int r = moat__session_workspace_purge(slash ? slash + 1 : cur.workspace, err);
		if (r < 0)
			return r;
	}
	/* A killed keeper's runtime folder (its lock free) goes too. */
	_cleanup_close_ int kfd = moat__keeper_base_open(NULL, 0, err);
	if (kfd >= 0)
		(void)moat__keeper_sweep(kfd);
	return 0;
}
