/* moatd's router and request decoders: pure functions of the request, so
 * that the unit tests and the fuzz target (tests/fuzz/fuzz_moatd.c) reach
 * every branch without a server. */
#include "moatd.h"

#include <string.h>

#include "config.h"
#include "units.h"
#include "util.h"

static const char *const route_names[_MOATD_R_MAX] = {
	[MOATD_R_HEALTH] = "health",
	[MOATD_R_METRICS] = "metrics",
	[MOATD_R_OPENAPI] = "openapi",
	[MOATD_R_RUN] = "run",
	[MOATD_R_JUDGE] = "judge",
	[MOATD_R_SESSION_CREATE] = "session.create",
	[MOATD_R_SESSION_LIST] = "session.list",
	[MOATD_R_SESSION_GET] = "session.get",
	[MOATD_R_SESSION_DELETE] = "session.delete",
	[MOATD_R_SESSION_EXEC] = "session.exec",
	[MOATD_R_SESSION_AUDIT] = "session.audit",
	[MOATD_R_SESSION_FILE_PUT] = "session.file.put",
	[MOATD_R_SESSION_FILE_GET] = "session.file.get",
	[MOATD_R_SESSION_EXEC_GET] = "session.exec.get",
	[MOATD_R_APPROVAL_LIST] = "approval.list",
	[MOATD_R_APPROVAL_DECIDE] = "approval.decide",
};

const char *moatd_route_name(moatd_route r)
{
	return r >= 0 && r < _MOATD_R_MAX ? route_names[r] : "unknown";
}

bool moatd_route_changes(moatd_route r)
{
	switch (r) {
	case MOATD_R_RUN:
	case MOATD_R_JUDGE:
	case MOATD_R_SESSION_CREATE:
	case MOATD_R_SESSION_DELETE:
	case MOATD_R_SESSION_EXEC:
	case MOATD_R_SESSION_FILE_PUT:
	case MOATD_R_APPROVAL_DECIDE:
		return true;
	default:
		return false;
	}
}

/* A session key in a path: what moat_session_find takes (an id or a name),
 * checked here so that nothing odd reaches the file system. */
static bool key_valid(const char *s, size_t n)
{
	if (n == 0 || n > MOATD_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '.' || c == '_' || c == '-'));
		if (!ok)
			return false;
	}
	return true;
}

moatd_route moatd_route_match(const char *method, const char *path, char ret_id[MOATD_ID_MAX + 1])
{
	char sub[MOATD_ID_MAX + 1];
	return moatd_route_match_sub(method, path, ret_id, sub);
}

/* An exec's id (32 hex digits) or an approval's (a and 8 hex digits). */
static bool hex_id(const char *s, size_t n, size_t want, char prefix)
{
	if (n != want + (prefix ? 1 : 0) || (prefix && s[0] != prefix))
		return false;
	for (size_t i = prefix ? 1 : 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

moatd_route moatd_route_match_sub(const char *method, const char *path, char ret_id[MOATD_ID_MAX + 1],
				  char ret_sub[MOATD_ID_MAX + 1])
{
	ret_id[0] = '\0';
	ret_sub[0] = '\0';
	bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	bool put = strcmp(method, "PUT") == 0, del = strcmp(method, "DELETE") == 0;
	struct {
		const char *path;
		moatd_route get, post;
	} fixed[] = {
		{"/v1/health", MOATD_R_HEALTH, MOATD_R_NOT_FOUND},
		{"/metrics", MOATD_R_METRICS, MOATD_R_NOT_FOUND},
		{"/v1/openapi.json", MOATD_R_OPENAPI, MOATD_R_NOT_FOUND},
		{"/v1/runs", MOATD_R_NOT_FOUND, MOATD_R_RUN},
		{"/v1/judge", MOATD_R_NOT_FOUND, MOATD_R_JUDGE},
		{"/v1/sessions", MOATD_R_SESSION_LIST, MOATD_R_SESSION_CREATE},
		{"/v1/approvals", MOATD_R_APPROVAL_LIST, MOATD_R_NOT_FOUND},
	};
	for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
		if (strcmp(path, fixed[i].path) != 0)
			continue;
		if (get && fixed[i].get != MOATD_R_NOT_FOUND)
			return fixed[i].get;
		if (post && fixed[i].post != MOATD_R_NOT_FOUND)
			return fixed[i].post;
		return MOATD_R_BAD_METHOD;
	}
	static const char aprefix[] = "/v1/approvals/";
	if (strncmp(path, aprefix, sizeof(aprefix) - 1) == 0) {
		const char *a = path + sizeof(aprefix) - 1;
		if (!hex_id(a, strlen(a), 8, 'a'))
			return MOATD_R_NOT_FOUND;
		snprintf(ret_sub, MOATD_ID_MAX + 1, "%s", a);
		return post ? MOATD_R_APPROVAL_DECIDE : MOATD_R_BAD_METHOD;
	}
	static const char prefix[] = "/v1/sessions/";
	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
		return MOATD_R_NOT_FOUND;
	const char *key = path + sizeof(prefix) - 1;
	const char *slash = strchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) : strlen(key);
	if (!key_valid(key, n))
		return MOATD_R_NOT_FOUND;
	memcpy(ret_id, key, n);
	ret_id[n] = '\0';
	const char *rest = slash ? slash : "";
	moatd_route r = MOATD_R_NOT_FOUND;
	if (strcmp(rest, "") == 0)
		r = get ? MOATD_R_SESSION_GET : del ? MOATD_R_SESSION_DELETE : MOATD_R_BAD_METHOD;
	else if (strcmp(rest, "/exec") == 0)
		r = post ? MOATD_R_SESSION_EXEC : MOATD_R_BAD_METHOD;
	else if (strcmp(rest, "/audit") == 0)
		r = get ? MOATD_R_SESSION_AUDIT : MOATD_R_BAD_METHOD;
	else if (strcmp(rest, "/files") == 0)
		r = get ? MOATD_R_SESSION_FILE_GET : put ? MOATD_R_SESSION_FILE_PUT : MOATD_R_BAD_METHOD;
	else if (strncmp(rest, "/exec/", 6) == 0 && hex_id(rest + 6, strlen(rest + 6), 32, 0)) {
		r = get ? MOATD_R_SESSION_EXEC_GET : MOATD_R_BAD_METHOD;
		if (r > 0)
			snprintf(ret_sub, MOATD_ID_MAX + 1, "%s", rest + 6);
	}
	if (r < 0)
		ret_id[0] = '\0';
	return r;
}

static const char *const role_names[_MOATD_ROLE_MAX] = {
	[MOATD_ROLE_NONE] = "none",
	[MOATD_ROLE_VIEWER] = "viewer",
	[MOATD_ROLE_AGENT] = "agent",
	[MOATD_ROLE_OPERATOR] = "operator",
	[MOATD_ROLE_ADMIN] = "admin",
};

const char *moatd_role_name(moatd_role r)
{
	return r < _MOATD_ROLE_MAX ? role_names[r] : "none";
}

moatd_role moatd_role_from_name(const char *s)
{
	for (int i = MOATD_ROLE_VIEWER; i < _MOATD_ROLE_MAX; i++)
		if (strcmp(s, role_names[i]) == 0)
			return (moatd_role)i;
	return MOATD_ROLE_NONE;
}

bool moatd_role_allows(moatd_role role, moatd_route route)
{
	switch (route) {
	case MOATD_R_HEALTH:
		return true; /* liveness says nothing about anyone */
	case MOATD_R_METRICS:
	case MOATD_R_OPENAPI:
	case MOATD_R_SESSION_LIST:
	case MOATD_R_SESSION_GET:
	case MOATD_R_SESSION_AUDIT:
	case MOATD_R_APPROVAL_LIST:
		return role >= MOATD_ROLE_VIEWER;
	case MOATD_R_APPROVAL_DECIDE:
		/* A person's gate: never an agent's, whoever's sandbox holds
		 * the request (its own included). */
		return role >= MOATD_ROLE_OPERATOR;
	case MOATD_R_RUN:
	case MOATD_R_JUDGE:
	case MOATD_R_SESSION_CREATE:
	case MOATD_R_SESSION_DELETE:
	case MOATD_R_SESSION_EXEC:
	case MOATD_R_SESSION_FILE_PUT:
	case MOATD_R_SESSION_FILE_GET:
	case MOATD_R_SESSION_EXEC_GET:
		return role >= MOATD_ROLE_AGENT;
	default:
		return false;
	}
}

bool moatd_may_touch_session(moatd_role role, const char *identity, const char *owner)
{
	if (role >= MOATD_ROLE_OPERATOR)
		return true;
	/* An agent acts in the sessions it created, never in one made by
	 * someone else or outside moatd (no owner on record). */
	if (role == MOATD_ROLE_AGENT)
		return owner && identity && strcmp(owner, identity) == 0;
	return false;
}

/* --- decoding */

static int bad(moat_error *err, const char *field, const char *what)
{
	return moat_error_set(err, MOAT_EINPUT, "%s: %s", field, what);
}

/* A JSON string without NUL bytes (jansson lets \u0000 in), at most cap. */
static int get_string(json_t *v, const char *field, size_t cap, const char **ret, moat_error *err)
{
	if (!json_is_string(v))
		return bad(err, field, "expected a string");
	size_t n = json_string_length(v);
	if (n > cap)
		return moat_error_set(err, MOAT_EINPUT, "%s: too long (at most %zu bytes)", field, cap);
	if (strlen(json_string_value(v)) != n)
		return bad(err, field, "holds a NUL byte");
	*ret = json_string_value(v);
	return 0;
}

static int push_opt(moatd_request *r, const char *name, const char *value, moat_error *err)
{
	_cleanup_free_ char *s = NULL;
	if (asprintf(&s, "--%s=%s", name, value) < 0 || moat__strv_push(&r->opts, s) < 0)
		return moat_error_set(err, ENOMEM, "request");
	return 0;
}

static bool env_name_valid(const char *s)
{
	if (!*s || strlen(s) > 128 || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* An absolute path inside the sandbox that moat's HOST:PATH option syntax
 * reads one way only: no ':' or ',', no "." or ".." component, no "//". */
static bool sandbox_path_valid(const char *s)
{
	if (s[0] != '/' || strlen(s) > MOATD_MAX_PATH || strpbrk(s, ":,\\") || strstr(s, "//"))
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	const char *c = s;
	while (c && *c) {
		c++;
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = e;
	}
	return strcmp(s, "/") != 0;
}

static int decode_argv(json_t *v, moatd_request *r, moat_error *err)
{
	if (!json_is_array(v))
		return bad(err, "argv", "expected an array of strings");
	size_t n = json_array_size(v);
	if (n == 0)
		return bad(err, "argv", "empty (expected the command and its arguments)");
	if (n > MOATD_MAX_ARGV)
		return moat_error_set(err, MOAT_EINPUT, "argv: too many entries (at most %d)", MOATD_MAX_ARGV);
	for (size_t i = 0; i < n; i++) {
		char field[32];
		snprintf(field, sizeof(field), "argv[%zu]", i);
		const char *s;
		int rc = get_string(json_array_get(v, i), field, MOATD_MAX_ARG, &s, err);
		if (rc < 0)
			return rc;
		if (i == 0 && !*s)
			return bad(err, field, "empty (expected a command)");
		if (moat__strv_push(&r->argv, s) < 0)
			return moat_error_set(err, ENOMEM, "request");
	}
	return 0;
}

static int decode_env(json_t *v, moatd_request *r, moat_error *err)
{
	if (!json_is_object(v))
		return bad(err, "env", "expected an object of NAME: value strings");
	if (json_object_size(v) > MOATD_MAX_ENV)
		return moat_error_set(err, MOAT_EINPUT, "env: too many variables (at most %d)", MOATD_MAX_ENV);
	const char *k;
	json_t *e;
	json_object_foreach(v, k, e) {
		char field[160];
		snprintf(field, sizeof(field), "env.%.140s", k);
		if (!env_name_valid(k))
			return bad(err, field, "not a variable name (expected [A-Za-z_][A-Za-z0-9_]*)");
		const char *s;
		int rc = get_string(e, field, MOATD_MAX_ARG, &s, err);
		if (rc < 0)
			return rc;
		_cleanup_free_ char *kv = NULL;
		if (asprintf(&kv, "%s=%s", k, s) < 0)
			return moat_error_set(err, ENOMEM, "request");
		if ((rc = push_opt(r, "env", kv, err)) < 0)
			return rc;
	}
	return 0;
}

/* A limit: a string in moat's units ("5s", "256M") or a whole number. */
static int decode_limits(json_t *v, moat_error *err, moatd_request *r)
{
	static const struct {
		const char *key, *opt;
	} map[] = {
		{"time", "time"}, {"cpu", "cpu"}, {"memory", "mem"}, {"pids", "pids"},
		{"output", "output"}, {"tmp_size", "tmp-size"}, {"files", "files"}, {"cpus", "cpus"},
	};
	if (!json_is_object(v))
		return bad(err, "limits", "expected an object");
	const char *k;
	json_t *e;
	json_object_foreach(v, k, e) {
		size_t i = 0;
		while (i < ELEMENTSOF(map) && strcmp(map[i].key, k) != 0)
			i++;
		char field[96];
		snprintf(field, sizeof(field), "limits.%.64s", k);
		if (i == ELEMENTSOF(map))
			return bad(err, field, "unknown field (expected time, cpu, memory, pids, output, tmp_size, files, cpus)");
		char num[32];
		const char *s;
		if (json_is_integer(e) && json_integer_value(e) >= 0) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(e));
			s = num;
		} else if (json_is_string(e)) {
			int rc = get_string(e, field, 32, &s, err);
			if (rc < 0)
				return rc;
			/* Units only: a value that starts with '-' or holds '='
			 * is no limit moat reads. */
			if (!*s || strspn(s, "0123456789.KMGTkmgtsbhunlimited") != strlen(s))
				return bad(err, field, "expected a number with an optional unit (5s, 256M) or 'unlimited'");
		} else
			return bad(err, field, "expected a string or a non-negative integer");
		int rc = push_opt(r, map[i].opt, s, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int decode_bytes(json_t *obj, const char *key, const char *key_b64, const char *field, char **ret,
			size_t *ret_len, moat_error *err)
{
	json_t *t = json_object_get(obj, key), *b = json_object_get(obj, key_b64);
	if (t && b)
		return moat_error_set(err, MOAT_EINPUT, "%s%s and %s%s: both given (expected one of them)", field, key,
				      field, key_b64);
	if (t) {
		if (!json_is_string(t))
			return moat_error_set(err, MOAT_EINPUT, "%s%s: expected a string", field, key);
		size_t n = json_string_length(t);
		char *d = malloc(n + 1);
		if (!d)
			return moat_error_set(err, ENOMEM, "request");
		memcpy(d, json_string_value(t), n + 1);
		*ret = d;
		*ret_len = n;
	} else if (b) {
		if (!json_is_string(b))
			return moat_error_set(err, MOAT_EINPUT, "%s%s: expected a string", field, key_b64);
		if (moatd_base64_decode(json_string_value(b), json_string_length(b), ret, ret_len) < 0)
			return moat_error_set(err, MOAT_EINPUT, "%s%s: not valid base64", field, key_b64);
	}
	return 0;
}

static int decode_files(json_t *v, moatd_request *r, moat_error *err)
{
	if (!json_is_array(v))
		return bad(err, "files", "expected an array of {path, content | content_base64}");
	size_t n = json_array_size(v);
	if (n > MOATD_MAX_FILES)
		return moat_error_set(err, MOAT_EINPUT, "files: too many (at most %d)", MOATD_MAX_FILES);
	r->files = calloc(n ? n : 1, sizeof(*r->files));
	if (!r->files)
		return moat_error_set(err, ENOMEM, "request");
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(v, i);
		char field[32];
		snprintf(field, sizeof(field), "files[%zu].", i);
		if (!json_is_object(f))
			return moat_error_set(err, MOAT_EINPUT, "files[%zu]: expected an object", i);
		const char *k;
		json_t *e;
		json_object_foreach(f, k, e) {
			if (strcmp(k, "path") && strcmp(k, "content") && strcmp(k, "content_base64"))
				return moat_error_set(err, MOAT_EINPUT, "%s%.64s: unknown field (expected path, content, content_base64)",
						      field, k);
		}
		const char *path;
		json_t *p = json_object_get(f, "path");
		if (!p)
			return moat_error_set(err, MOAT_EINPUT, "%spath: missing", field);
		char pf[48];
		snprintf(pf, sizeof(pf), "%spath", field);
		int rc = get_string(p, pf, MOATD_MAX_PATH, &path, err);
		if (rc < 0)
			return rc;
		if (!sandbox_path_valid(path))
			return bad(err, pf, "expected an absolute path without ':', ',', '.' or '..' parts");
		for (size_t j = 0; j < r->n_files; j++)
			if (strcmp(r->files[j].path, path) == 0)
				return bad(err, pf, "given twice");
		moatd_file *mf = &r->files[r->n_files];
		if (!(mf->path = strdup(path)))
			return moat_error_set(err, ENOMEM, "request");
		r->n_files++;
		if ((rc = decode_bytes(f, "content", "content_base64", field, &mf->data, &mf->len, err)) < 0)
			return rc;
		if (!mf->data)
			return moat_error_set(err, MOAT_EINPUT, "%scontent: missing (or content_base64)", field);
	}
	return 0;
}

/* Which fields each body takes; an agent may not widen its sandbox past the
 * built-in profiles (no inline policy, no network hosts). */
static const struct {
	const char *name;
	unsigned kinds;
	bool wide;
} fields[] = {
#define K(x) (1u << MOATD_BODY_##x)
	{"profile", K(RUN) | K(SESSION) | K(JUDGE), false},
	{"policy", K(RUN) | K(SESSION) | K(JUDGE), true},
	{"argv", K(RUN) | K(EXEC), false},
	{"stdin", K(RUN) | K(EXEC), false},
	{"stdin_base64", K(RUN) | K(EXEC), false},
	{"files", K(RUN), false},
	{"env", K(RUN) | K(SESSION) | K(EXEC) | K(JUDGE), false},
	{"cwd", K(RUN) | K(SESSION) | K(EXEC), false},
	{"limits", K(RUN) | K(SESSION) | K(JUDGE), false},
	{"allow_hosts", K(RUN) | K(SESSION), true},
	{"name", K(SESSION), false},
	{"time", K(EXEC), false},
	{"wait", K(EXEC), false},
	{"source", K(JUDGE), false},
	{"language", K(JUDGE), false},
	{"cases", K(JUDGE), false},
#undef K
};

int moatd_request_decode(moatd_body_kind kind, moatd_role role, const char *body, size_t len, moatd_request *ret,
			 moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	ret->wait = true;
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return moat_error_set(err, MOAT_EINPUT, "body: not valid JSON (%s at line %d column %d)", je.text,
				      je.line, je.column);
	int rc = 0;
	if (!json_is_object(root)) {
		rc = bad(err, "body", "expected a JSON object");
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		size_t i = 0;
		while (i < ELEMENTSOF(fields) && !(strcmp(fields[i].name, k) == 0 && (fields[i].kinds & (1u << kind))))
			i++;
		if (i == ELEMENTSOF(fields)) {
			rc = moat_error_set(err, MOAT_EINPUT, "%.64s: unknown field", k);
			goto out;
		}
		if (fields[i].wide && role < MOATD_ROLE_OPERATOR) {
			rc = moat_error_set(err, EACCES, "%s: the %s role may not widen a sandbox past the built-in profiles",
					    k, moatd_role_name(role));
			goto out;
		}
	}
	const char *s;
	if ((v = json_object_get(root, "profile"))) {
		if ((rc = get_string(v, "profile", 64, &s, err)) < 0)
			goto out;
		if (!*s || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s)) {
			rc = bad(err, "profile", "expected a profile name (code, agent)");
			goto out;
		}
		if ((rc = push_opt(ret, "profile", s, err)) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "policy"))) {
		if (!json_is_object(v)) {
			rc = bad(err, "policy", "expected an object (a policy, as in a policy file)");
			goto out;
		}
		if (json_object_get(root, "profile")) {
			rc = moat_error_set(err, MOAT_EINPUT, "profile and policy: both given (expected one of them)");
			goto out;
		}
		if (!(ret->policy = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS))) {
			rc = moat_error_set(err, ENOMEM, "request");
			goto out;
		}
	}
	if ((v = json_object_get(root, "argv")) && (rc = decode_argv(v, ret, err)) < 0)
		goto out;
	if ((kind == MOATD_BODY_RUN || kind == MOATD_BODY_EXEC) && !ret->argv) {
		rc = bad(err, "argv", "missing (expected the command and its arguments)");
		goto out;
	}
	if ((rc = decode_bytes(root, "stdin", "stdin_base64", "", &ret->stdin_data, &ret->stdin_len, err)) < 0)
		goto out;
	if ((v = json_object_get(root, "files")) && (rc = decode_files(v, ret, err)) < 0)
		goto out;
	if ((v = json_object_get(root, "env")) && (rc = decode_env(v, ret, err)) < 0)
		goto out;
	if ((v = json_object_get(root, "cwd"))) {
		if ((rc = get_string(v, "cwd", MOATD_MAX_PATH, &s, err)) < 0)
			goto out;
		if (s[0] != '/') {
			rc = bad(err, "cwd", "expected an absolute path");
			goto out;
		}
		if ((rc = push_opt(ret, "cwd", s, err)) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "limits")) && (rc = decode_limits(v, err, ret)) < 0)
		goto out;
	if ((v = json_object_get(root, "allow_hosts"))) {
		if (!json_is_array(v) || json_array_size(v) > 64) {
			rc = bad(err, "allow_hosts", "expected an array of at most 64 host patterns");
			goto out;
		}
		for (size_t i = 0; i < json_array_size(v); i++) {
			char field[32];
			snprintf(field, sizeof(field), "allow_hosts[%zu]", i);
			if ((rc = get_string(json_array_get(v, i), field, 255, &s, err)) < 0)
				goto out;
			if (!*s || s[0] == '-') {
				rc = bad(err, field, "expected a host pattern");
				goto out;
			}
			if ((rc = push_opt(ret, "allow-host", s, err)) < 0)
				goto out;
		}
	}
	if ((v = json_object_get(root, "name"))) {
		if ((rc = get_string(v, "name", 64, &s, err)) < 0)
			goto out;
		if (!key_valid(s, strlen(s))) {
			rc = bad(err, "name", "expected 1 to 64 of [A-Za-z0-9._-], starting with a letter or digit");
			goto out;
		}
		if ((rc = push_opt(ret, "name", s, err)) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "time"))) {
		if (!json_is_string(v) && !json_is_integer(v)) {
			rc = bad(err, "time", "expected a duration (\"5s\") or whole seconds");
			goto out;
		}
		json_t *lim = json_pack("{s:O}", "time", v);
		moatd_request tmp = {0};
		rc = decode_limits(lim, err, &tmp);
		json_decref(lim);
		if (rc == 0 && tmp.opts)
			rc = moat__strv_push(&ret->opts, tmp.opts[0]) < 0 ? moat_error_set(err, ENOMEM, "request") : 0;
		moat__strv_free(tmp.opts);
		if (rc < 0) {
			moat_error_set(err, MOAT_EINPUT, "time: expected a duration (\"5s\") or whole seconds");
			goto out;
		}
	}
	if ((v = json_object_get(root, "wait"))) {
		if (!json_is_boolean(v)) {
			rc = bad(err, "wait", "expected true or false");
			goto out;
		}
		ret->wait = json_is_true(v);
	}
	if (kind == MOATD_BODY_JUDGE) {
		const char *lang = "python";
		if ((v = json_object_get(root, "language"))) {
			if ((rc = get_string(v, "language", 16, &lang, err)) < 0)
				goto out;
			if (strcmp(lang, "python") && strcmp(lang, "javascript")) {
				rc = bad(err, "language", "expected python or javascript");
				goto out;
			}
		}
		if (!(v = json_object_get(root, "source"))) {
			rc = bad(err, "source", "missing (expected the program's text)");
			goto out;
		}
		if ((rc = get_string(v, "source", 1 << 20, &s, err)) < 0)
			goto out;
		ret->source = strdup(s);
		ret->source_name = strdup(strcmp(lang, "python") == 0 ? "solution.py" : "solution.js");
		json_t *cases = json_object_get(root, "cases");
		if (!cases || !json_is_array(cases) || json_array_size(cases) == 0 || json_array_size(cases) > 1000) {
			rc = bad(err, "cases", "expected an array of 1 to 1000 case objects");
			goto out;
		}
		size_t cap = 0, used = 0;
		for (size_t i = 0; i < json_array_size(cases); i++) {
			json_t *c = json_array_get(cases, i);
			if (!json_is_object(c)) {
				rc = moat_error_set(err, MOAT_EINPUT, "cases[%zu]: expected an object", i);
				goto out;
			}
			_cleanup_free_ char *line = json_dumps(c, JSON_COMPACT);
			if (!line) {
				rc = moat_error_set(err, ENOMEM, "request");
				goto out;
			}
			size_t n = strlen(line);
			if (used + n + 2 > cap) {
				size_t nc = (used + n + 2) * 2;
				char *g = realloc(ret->cases, nc);
				if (!g) {
					rc = moat_error_set(err, ENOMEM, "request");
					goto out;
				}
				ret->cases = g;
				cap = nc;
			}
			memcpy(ret->cases + used, line, n);
			used += n;
			ret->cases[used++] = '\n';
			ret->cases[used] = '\0';
		}
		if (!ret->source || !ret->source_name) {
			rc = moat_error_set(err, ENOMEM, "request");
			goto out;
		}
	}
out:
	json_decref(root);
	if (rc < 0)
		moatd_request_done(ret);
	return rc;
}

void moatd_request_done(moatd_request *r)
{
	moat__strv_free(r->opts);
	moat__strv_free(r->argv);
	free(r->policy);
	free(r->stdin_data);
	for (size_t i = 0; i < r->n_files; i++) {
		free(r->files[i].path);
		free(r->files[i].data);
	}
	free(r->files);
	free(r->source);
	free(r->source_name);
	free(r->cases);
	memset(r, 0, sizeof(*r));
}

int moatd_decision_status(int keeper_rc)
{
	switch (keeper_rc) {
	case -EINVAL:
	case -E2BIG:
		return 400;
	case -EALREADY:
		return 409;
	default:
		return 500;
	}
}

int moatd_decision_decode(const char *id, const char *body, size_t len, json_t **ret, moat_error *err)
{
	*ret = NULL;
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return moat_error_set(err, MOAT_EINPUT, "body: not valid JSON (%s at line %d column %d)", je.text,
				      je.line, je.column);
	int rc = 0;
	json_t *req = NULL;
	const char *decision = NULL, *kind = NULL, *dur = NULL, *scope = NULL, *note = NULL, *reason = NULL;
	if (!json_is_object(root)) {
		rc = bad(err, "body", "expected a JSON object");
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		const char **slot = strcmp(k, "decision") == 0 ? &decision
				    : strcmp(k, "kind") == 0   ? &kind
				    : strcmp(k, "for") == 0    ? &dur
				    : strcmp(k, "scope") == 0  ? &scope
				    : strcmp(k, "note") == 0   ? &note
				    : strcmp(k, "reason") == 0 ? &reason
							       : NULL;
		if (!slot) {
			rc = moat_error_set(err, MOAT_EINPUT,
					    "%.64s: unknown field (expected decision, kind, for, scope, note, reason)", k);
			goto out;
		}
		/* The keeper caps a note at MOAT_APPROVAL_NOTE_MAX; 1000 is
		 * below it. */
		if ((rc = get_string(v, k, 1000, slot, err)) < 0)
			goto out;
	}
	if (!decision || (strcmp(decision, "approve") && strcmp(decision, "deny"))) {
		rc = bad(err, "decision", decision ? "expected approve or deny" : "missing (expected approve or deny)");
		goto out;
	}
	bool approve = strcmp(decision, "approve") == 0;
	if (!approve && (kind || dur || scope || note)) {
		rc = bad(err, kind ? "kind" : dur ? "for" : scope ? "scope" : "note",
			 "only an approval takes it (a denial takes a reason)");
		goto out;
	}
	if (approve && reason) {
		rc = bad(err, "reason", "only a denial takes it (an approval takes a note)");
		goto out;
	}
	if (kind && strcmp(kind, "once") && strcmp(kind, "for") && strcmp(kind, "session")) {
		rc = bad(err, "kind", "expected once, for or session");
		goto out;
	}
	bool is_for = kind && strcmp(kind, "for") == 0;
	if (is_for != (dur != NULL)) {
		rc = bad(err, "for", dur ? "only a kind \"for\" approval takes a duration" : "missing (a kind \"for\" approval needs a duration)");
		goto out;
	}
	if (scope && strcmp(scope, "exact") && strcmp(scope, "path") && strcmp(scope, "host")) {
		rc = bad(err, "scope", "expected exact, path or host");
		goto out;
	}
	if (scope && strcmp(scope, "exact") && (!kind || strcmp(kind, "once") == 0)) {
		rc = bad(err, "scope", "a once approval is for that one action (kind for or session to widen it)");
		goto out;
	}
	uint64_t for_ms = 0;
	if (dur) {
		moat_error e = {0};
		if (moat_parse_duration_ms(dur, &for_ms, &e) < 0 || for_ms == 0 || for_ms == MOAT_UNLIMITED) {
			rc = bad(err, "for", "expected a duration above zero (\"10m\")");
			goto out;
		}
	}
	req = json_pack("{s:s, s:s}", "op", approve ? "approve" : "deny", "id", id);
	if (!req) {
		rc = moat_error_set(err, ENOMEM, "request");
		goto out;
	}
	if (approve)
		json_object_set_new(req, "kind", json_string(kind ? kind : "once"));
	if (for_ms)
		json_object_set_new(req, "for_ms", json_integer((json_int_t)for_ms));
	if (scope)
		json_object_set_new(req, "scope", json_string(scope));
	if (note)
		json_object_set_new(req, "note", json_string(note));
	if (reason)
		json_object_set_new(req, "reason", json_string(reason));
	*ret = TAKE_PTR(req);
out:
	json_decref(req);
	json_decref(root);
	return rc;
}

int moatd_limits_within(char *const *opts, const moat_limits *ceil, moat_error *err)
{
	static const struct {
		const char *opt, *field;
		size_t off;
		enum { DUR, SIZE, COUNT, CPUS } kind;
	} map[] = {
		{"--time=", "limits.time", offsetof(moat_limits, wall_ms), DUR},
		{"--cpu=", "limits.cpu", offsetof(moat_limits, cpu_ms), DUR},
		{"--mem=", "limits.memory", offsetof(moat_limits, memory_bytes), SIZE},
		{"--pids=", "limits.pids", offsetof(moat_limits, pids), COUNT},
		{"--output=", "limits.output", offsetof(moat_limits, output_bytes), SIZE},
		{"--tmp-size=", "limits.tmp_size", offsetof(moat_limits, tmp_bytes), SIZE},
		{"--files=", "limits.files", offsetof(moat_limits, files), COUNT},
		{"--cpus=", "limits.cpus", offsetof(moat_limits, cpus_milli), CPUS},
	};
	for (size_t i = 0; opts && opts[i]; i++) {
		for (size_t k = 0; k < ELEMENTSOF(map); k++) {
			size_t n = strlen(map[k].opt);
			if (strncmp(opts[i], map[k].opt, n) != 0)
				continue;
			const char *v = opts[i] + n;
			uint64_t x, cap;
			memcpy(&cap, (const char *)ceil + map[k].off, sizeof(cap));
			moat_error e = {0};
			int rc = map[k].kind == DUR    ? moat_parse_duration_ms(v, &x, &e)
				 : map[k].kind == SIZE  ? moat_parse_size(v, &x, &e)
				 : map[k].kind == COUNT ? moat_parse_count(v, &x, &e)
							: moat_parse_cpus_milli(v, &x, &e);
			if (rc < 0)
				return moat_error_set(err, MOAT_EINPUT, "%s: %s", map[k].field, e.msg);
			/* No limit (0 for the CPU bandwidth) is the widest. */
			bool none = x == MOAT_UNLIMITED || (map[k].kind == CPUS && x == 0);
			bool cap_none = cap == MOAT_UNLIMITED || (map[k].kind == CPUS && cap == 0);
			if (!cap_none && (none || x > cap))
				return moat_error_set(err, EACCES,
						      "%s: %s is above the profile's limit (the agent role may narrow limits, "
						      "not lift them)",
						      map[k].field, v);
		}
	}
	return 0;
}

/* --- bytes */

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int moatd_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	if (len % 4)
		return -MOAT_EINPUT;
	char *out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		int pad = 0;
		for (int j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)s[i + j];
			if (c == '=' && i + 4 == len && j >= 2) {
				v[j] = 0;
				pad++;
			} else if (pad || (v[j] = b64_val(c)) < 0) {
				free(out);
				return -MOAT_EINPUT;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		out[o++] = (char)(w >> 16);
		if (pad < 2)
			out[o++] = (char)(w >> 8 & 0xff);
		if (pad < 1)
			out[o++] = (char)(w & 0xff);
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}

char *moatd_base64_encode(const void *buf, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = buf;
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);
		out[o++] = tab[w >> 18 & 63];
		out[o++] = tab[w >> 12 & 63];
		out[o++] = i + 1 < len ? tab[w >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? tab[w & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

bool moatd_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else
			return false;
		if (i + n >= len)
			return false;
		for (size_t j = 1; j <= n; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		/* Overlong forms, surrogates and past U+10FFFF are not UTF-8. */
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

int moatd_json_set_bytes(json_t *obj, const char *key, const char *key_b64, const char *buf, size_t len)
{
	if (moatd_utf8_valid(buf, len))
		return json_object_set_new(obj, key, json_stringn(buf, len)) == 0 ? 0 : -ENOMEM;
	char *b = moatd_base64_encode(buf, len);
	if (!b)
		return -ENOMEM;
	int r = json_object_set_new(obj, key_b64, json_string(b));
	free(b);
	return r == 0 ? 0 : -ENOMEM;
}
