/* The run events (docs/audit.md): one helper per type, so that every writer
 * spells the fields the same way. */
#include "audit.h"

#include <fcntl.h>
#include <pwd.h>
#include <string.h>

#include "config.h"
#include "filetrail.h"
#include "result.h"

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, moat_audit_bytes_json(v[i]));
	return a;
}

/* The isolation object exactly as the JSON result prints it, so the two can
 * never disagree. */
static json_t *isolation_json(const moat_isolation *iso)
{
	moat_result r;
	moat_result_init(&r);
	r.isolation = *iso;
	_cleanup_free_ char *s = moat_result_to_json(&r);
	json_t *j = s ? json_loads(s, 0, NULL) : NULL;
	json_t *i = json_incref(json_object_get(j, "isolation"));
	json_decref(j);
	return i ? i : json_null();
}

int moat_audit_session_start(moat_audit *a, const char *policy_name, const char *policy_hash,
			     char *const *argv, const moat_isolation *iso, moat_error *err)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	char pwbuf[1024];
	struct passwd pw, *pwp = NULL;
	uid_t uid = getuid();
	getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp);
	json_t *f = json_object();
	json_object_set_new(f, "policy", policy_name ? json_string(policy_name) : json_null());
	json_object_set_new(f, "policy_sha256", policy_hash ? json_string(policy_hash) : json_null());
	json_t *u = json_object();
	json_object_set_new(u, "uid", json_integer(uid));
	json_object_set_new(u, "name", pwp ? json_string(pwp->pw_name) : json_null());
	json_object_set_new(f, "user", u);
	json_object_set_new(f, "host", json_string(host));
	json_object_set_new(f, "argv", strv_json(argv));
	json_object_set_new(f, "isolation", iso ? isolation_json(iso) : json_null());
	return moat_audit_event(a, "session.start", f, MOAT_AUDIT_SYNC | MOAT_AUDIT_ALWAYS, err);
}

int moat_audit_exec(moat_audit *a, const char *path, char *const *argv, pid_t pid, pid_t parent,
		    const char *source, moat_error *err)
{
	json_t *f = json_object();
	json_object_set_new(f, "path", moat_audit_bytes_json(path));
	json_object_set_new(f, "argv", strv_json(argv));
	json_object_set_new(f, "pid", json_integer(pid));
	json_object_set_new(f, "parent", parent > 0 ? json_integer(parent) : json_null());
	json_object_set_new(f, "source", json_string(source));
	return moat_audit_event(a, "exec", f, 0, err);
}

/* The access mode and the flags that change a file, by name. */
json_t *moat_audit_open_flags_json(int flags)
{
	static const struct {
		int bit;
		const char *name;
	} names[] = {
		{O_CREAT, "O_CREAT"},   {O_EXCL, "O_EXCL"},         {O_TRUNC, "O_TRUNC"},
		{O_APPEND, "O_APPEND"}, {O_DIRECTORY, "O_DIRECTORY"}, {O_NOFOLLOW, "O_NOFOLLOW"},
		{O_TMPFILE & ~O_DIRECTORY, "O_TMPFILE"}, {O_PATH, "O_PATH"},
	};
	json_t *a = json_array();
	int acc = flags & O_ACCMODE;
	json_array_append_new(a, json_string(acc == O_RDONLY ? "O_RDONLY" : acc == O_WRONLY ? "O_WRONLY" : "O_RDWR"));
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (flags & names[i].bit)
			json_array_append_new(a, json_string(names[i].name));
	return a;
}

json_t *moat_audit_bytes_json(const char *p)
{
	/* Paths are bytes; jansson needs UTF-8. Anything else is kept as
	 * \xNN escapes so that the exact bytes remain readable. */
	json_t *s = json_string(p);
	if (s)
		return s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return json_null();
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c >= 0x20 && *c < 0x7f && *c != '\\')
			fputc(*c, f);
		else
			fprintf(f, "\\x%02x", *c);
	fclose(f);
	s = json_string(buf);
	free(buf);
	return s ? s : json_null();
}

int moat_audit_file(moat_audit *a, const char *type, const char *syscall, const char *path, const char *path2,
		    int flags, int64_t result, pid_t pid, moat_error *err)
{
	json_t *f = json_object();
	json_object_set_new(f, "path", moat_audit_bytes_json(path));
	if (path2)
		json_object_set_new(f, "to", moat_audit_bytes_json(path2));
	json_object_set_new(f, "syscall", json_string(syscall));
	if (strcmp(type, "file.open") == 0 || strcmp(type, "file.write") == 0)
		json_object_set_new(f, "flags", moat_audit_open_flags_json(flags));
	json_object_set_new(f, "result", result == MOAT_AUDIT_UNKNOWN ? json_null() : json_integer(result));
	json_object_set_new(f, "pid", json_integer(pid));
	return moat_audit_event(a, type, f, 0, err);
}

int moat_audit_limit_hit(moat_audit *a, const char *limit, uint64_t value, const char *unit, moat_error *err)
{
	json_t *f = json_object();
	json_object_set_new(f, "limit", json_string(limit));
	json_object_set_new(f, "value", value == UINT64_MAX ? json_null() : json_integer((json_int_t)value));
	json_object_set_new(f, "unit", unit ? json_string(unit) : json_null());
	/* At most one a run, and the reason it ended: past the cap too. */
	return moat_audit_event(a, "limit.hit", f, MOAT_AUDIT_SYNC | MOAT_AUDIT_ALWAYS, err);
}

int moat_audit_denied(moat_audit *a, const char *layer, const char *what, const char *detail, moat_error *err)
{
	json_t *f = json_object();
	json_object_set_new(f, "layer", json_string(layer));
	json_object_set_new(f, "what", json_string(what));
	json_object_set_new(f, "detail", detail ? json_string(detail) : json_null());
	return moat_audit_event(a, "denied", f, MOAT_AUDIT_SYNC, err);
}

int moat_audit_session_stop(moat_audit *a, const moat_result *r, json_t *extra, moat_error *err)
{
	_cleanup_free_ char *s = moat_result_to_json(r);
	json_t *res = s ? json_loads(s, 0, NULL) : NULL;
	if (!res)
		return moat_error_set(err, ENOMEM, "audit session.stop");
	/* The isolation report is already in session.start. */
	json_object_del(res, "isolation");
	json_t *f = json_object();
	json_object_set_new(f, "result", res);
	if (extra)
		json_object_update(f, extra);
	json_decref(extra);
	return moat_audit_event(a, "session.stop", f, MOAT_AUDIT_SYNC | MOAT_AUDIT_ALWAYS, err);
}

void moat__audit_run_started(moat_audit *a, const moat_config *c, const moat_isolation *iso, pid_t cmd_pid,
			     bool trail)
{
	/* The hash of the effective policy, flags included, computed once
	 * when it was attached (not the file re-read, which may have changed
	 * since). */
	const char *name = c->profile ? c->profile : c->policy_path ? c->policy_path : "code";
	moat_audit_session_start(a, name, c->policy_sha256[0] ? c->policy_sha256 : NULL, c->argv, iso, NULL);
	/* With the trail on, the exec is seen by the kernel's own account of
	 * it, with the path PATH search found. */
	if (!trail && cmd_pid > 0)
		moat_audit_exec(a, c->argv[0], c->argv, cmd_pid, 1, "supervisor", NULL);
}

/* The limit behind a status, and its configured value. */
static bool limit_of(const moat_config *c, const moat_result *r, const char **name, uint64_t *v, const char **unit)
{
	const char *l = r->limit_hit;
	if (!l[0]) {
		switch (r->status) {
		case MOAT_STATUS_TIMEOUT: l = "wall"; break;
		case MOAT_STATUS_CPU_LIMIT: l = "cpu"; break;
		case MOAT_STATUS_OOM: l = "memory"; break;
		case MOAT_STATUS_PIDS_LIMIT: l = "pids"; break;
		case MOAT_STATUS_OUTPUT_LIMIT: l = "output"; break;
		default: return false;
		}
	}
	*name = l;
	*v = UINT64_MAX;
	*unit = NULL;
	if (strcmp(l, "wall") == 0)
		*v = c->limits.wall_ms, *unit = "ms";
	else if (strcmp(l, "cpu") == 0)
		*v = c->limits.cpu_ms, *unit = "ms";
	else if (strcmp(l, "memory") == 0)
		*v = c->limits.memory_bytes, *unit = "bytes";
	else if (strcmp(l, "pids") == 0)
		*v = c->limits.pids, *unit = "count";
	else if (strcmp(l, "output") == 0)
		*v = c->limits.output_bytes, *unit = "bytes";
	return true;
}

void moat__audit_run_finished(moat_audit *a, const moat_config *c, const moat_result *r,
			      const moat_filetrail_stats *trail)
{
	const char *name, *unit;
	uint64_t v;
	if (limit_of(c, r, &name, &v, &unit))
		moat_audit_limit_hit(a, name, v, unit, NULL);
	json_t *extra = NULL;
	if (trail && trail->notifications) {
		extra = json_pack("{s{sIsIsIsIs[ss*]}}", "trail", "notifications", (json_int_t)trail->notifications,
				  "events", (json_int_t)trail->events, "unreadable", (json_int_t)trail->unreadable,
				  "racy", (json_int_t)trail->racy, "sources", "seccomp",
				  trail->fanotify ? "fanotify" : NULL);
		if (extra && trail->fanotify) {
			json_t *tr = json_object_get(extra, "trail");
			json_object_set_new(tr, "fanotify_events", json_integer((json_int_t)trail->fanotify_events));
			json_object_set_new(tr, "fanotify_lost", json_integer((json_int_t)trail->fanotify_lost));
		}
	}
	uint64_t dropped = moat_audit_dropped(a);
	if (dropped) {
		if (!extra)
			extra = json_object();
		json_object_set_new(extra, "audit_dropped", json_integer((json_int_t)dropped));
	}
	moat_audit_session_stop(a, r, extra, NULL);
}
