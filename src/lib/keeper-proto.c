/* The front <-> keeper protocol's messages (keeper-proto.h). Pure: no I/O. */
#include "keeper-proto.h"

#include <jansson.h>
#include <signal.h>
#include <string.h>

static const char *const type_names[_MOAT_KEEPER_MSG_MAX] = {
	[MOAT_KEEPER_HELLO] = "hello",     [MOAT_KEEPER_SPAWN] = "spawn",   [MOAT_KEEPER_WAIT] = "wait",
	[MOAT_KEEPER_SIGNAL] = "signal",   [MOAT_KEEPER_STOP] = "stop",     [MOAT_KEEPER_STATUS] = "status",
	[MOAT_KEEPER_SPAWNED] = "spawned", [MOAT_KEEPER_EXIT] = "exit",     [MOAT_KEEPER_OK] = "ok",
	[MOAT_KEEPER_ERROR] = "error",     [MOAT_KEEPER_APPROVALS] = "approvals",
	[MOAT_KEEPER_LIFETIME] = "lifetime", [MOAT_KEEPER_COPIED] = "copied",
};

const char *moat_keeper_msg_type_to_string(moat_keeper_msg_type t)
{
	return t >= 0 && t < _MOAT_KEEPER_MSG_MAX ? type_names[t] : NULL;
}

moat_keeper_msg_type moat_keeper_msg_type_from_string(const char *s)
{
	for (int i = 0; s && i < _MOAT_KEEPER_MSG_MAX; i++)
		if (strcmp(s, type_names[i]) == 0)
			return (moat_keeper_msg_type)i;
	return _MOAT_KEEPER_MSG_INVALID;
}

void moat_keeper_msg_init(moat_keeper_msg *m, moat_keeper_msg_type type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->exit.exit_code = -1;
}

void moat_keeper_msg_done(moat_keeper_msg *m)
{
	if (!m)
		return;
	moat_keeper_msg_type t = m->type;
	moat__strv_free(m->argv);
	moat__strv_free(m->env);
	free(m->cwd);
	free(m->message);
	json_decref(m->body);
	json_decref(m->sandbox_report);

	free(m->host);
	free(m->path);
	free(m->record);
	moat_keeper_msg_init(m, t);
}

bool moat__keeper_id_valid(const char *s)
{
	if (!s || strlen(s) != MOAT_KEEPER_ID_LEN - 1)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

unsigned moat__keeper_pick_version(const unsigned *theirs, size_t n)
{
	unsigned best = 0;
	for (size_t i = 0; i < n; i++)
		if (theirs[i] >= MOAT_KEEPER_PROTO_MIN && theirs[i] <= MOAT_KEEPER_PROTO_MAX && theirs[i] > best)
			best = theirs[i];
	return best;
}

/* The fields each type may carry ("type" and "tag" aside). */
static const char *const fields[_MOAT_KEEPER_MSG_MAX][12] = {
	[MOAT_KEEPER_HELLO] = {"versions", "version", "sandbox", "pid"},
	[MOAT_KEEPER_SPAWN] = {"argv", "env", "cwd", "tty", "rows", "cols", "stdio", "attached", "record", "wait"},
	[MOAT_KEEPER_WAIT] = {"id"},
	[MOAT_KEEPER_SIGNAL] = {"id", "signal"},
	[MOAT_KEEPER_STOP] = {NULL},
	[MOAT_KEEPER_STATUS] = {"sandbox", "pid", "state", "commands", "net", "approvals"},
	[MOAT_KEEPER_SPAWNED] = {"id", "pid"},
	[MOAT_KEEPER_EXIT] = {"id", "status", "exit_code", "signal", "exit_status", "wall_ms", "cpu_user_ms",
			      "cpu_sys_ms", "max_rss_bytes", "error", "limit", "sandbox"},
	[MOAT_KEEPER_OK] = {NULL},
	[MOAT_KEEPER_ERROR] = {"errno", "message"},
	[MOAT_KEEPER_APPROVALS] = {"body"},
	[MOAT_KEEPER_LIFETIME] = {"ttl_ms", "idle_ms"},
	[MOAT_KEEPER_COPIED] = {"into", "host", "path", "files", "dirs", "bytes", "error"},
};

static bool field_known(moat_keeper_msg_type t, const char *key)
{
	if (strcmp(key, "type") == 0 || strcmp(key, "tag") == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(fields[t]) && fields[t][i]; i++)
		if (strcmp(fields[t][i], key) == 0)
			return true;
	return false;
}

static const char *const exit_statuses[] = {"exited", "signaled", "setup_error"};

/* A limit's name as a run's result gives it: lower-case letters and '_'. */
static bool limit_name_valid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || *s == '_'))
			return false;
	return true;
}

static bool exit_status_known(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(exit_statuses); i++)
		if (strcmp(s, exit_statuses[i]) == 0)
			return true;
	return false;
}

/* ---- encoding ---- */

static json_t *strv_to_json(char *const *v, size_t max)
{
	json_t *a = json_array();
	size_t n = 0;
	for (; a && v && *v; v++, n++)
		if (n >= max || json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Checks what the decoder checks, so that an encoder's mistake is caught
 * on the sending side with the same words. */
static int check_strv(const char *what, char *const *v, bool required, moat_error *err)
{
	size_t n = moat__strv_length(v);
	if (required && n == 0)
		return moat_error_set(err, EINVAL, "%s: must hold at least one string", what);
	if (n > MOAT_KEEPER_MAX_ARGS)
		return moat_error_set(err, E2BIG, "%s: more than %d entries", what, MOAT_KEEPER_MAX_ARGS);
	for (size_t i = 0; i < n; i++)
		if (strlen(v[i]) > MOAT_KEEPER_MAX_STRING)
			return moat_error_set(err, E2BIG, "%s[%zu]: longer than %d bytes", what, i, MOAT_KEEPER_MAX_STRING);
	return 0;
}

int moat__keeper_encode(const moat_keeper_msg *m, char **ret, moat_error *err)
{
	const char *tn = moat_keeper_msg_type_to_string(m->type);
	if (!tn)
		return moat_error_set(err, EINVAL, "type: unknown message type %d", (int)m->type);
	json_t *o = json_object();
	if (!o)
		return moat_error_set(err, ENOMEM, "out of memory");
	bool oom = json_object_set_new(o, "type", json_string(tn)) < 0;
	if (m->type != MOAT_KEEPER_HELLO)
		oom |= json_object_set_new(o, "tag", json_integer((json_int_t)m->tag)) < 0;
	int r = 0;
	switch (m->type) {
	case MOAT_KEEPER_HELLO:
		if (m->n_versions) {
			json_t *a = json_array();
			for (size_t i = 0; a && i < m->n_versions && i < MOAT_KEEPER_MAX_VERSIONS; i++)
				oom |= json_array_append_new(a, json_integer(m->versions[i])) < 0;
			oom |= json_object_set_new(o, "versions", a) < 0;
		} else {
			if (!moat__keeper_id_valid(m->sandbox)) {
				r = moat_error_set(err, EINVAL, "hello.sandbox: not a sandbox id");
				break;
			}
			oom |= json_object_set_new(o, "version", json_integer(m->version)) < 0;
			oom |= json_object_set_new(o, "sandbox", json_string(m->sandbox)) < 0;
			oom |= json_object_set_new(o, "pid", json_integer(m->pid)) < 0;
		}
		break;
	case MOAT_KEEPER_SPAWN:
		if ((r = check_strv("spawn.argv", m->argv, true, err)) < 0 ||
		    (r = check_strv("spawn.env", m->env, false, err)) < 0)
			break;
		if (m->cwd && (m->cwd[0] != '/' || strlen(m->cwd) > MOAT_KEEPER_MAX_STRING)) {
			r = moat_error_set(err, EINVAL, "spawn.cwd: not an absolute path");
			break;
		}
		if (m->tty && (m->stdio[0] || m->stdio[1] || m->stdio[2])) {
			r = moat_error_set(err, EINVAL, "spawn.stdio: must be empty with spawn.tty");
			break;
		}
		oom |= json_object_set_new(o, "argv", strv_to_json(m->argv, MOAT_KEEPER_MAX_ARGS)) < 0;
		if (m->env)
			oom |= json_object_set_new(o, "env", strv_to_json(m->env, MOAT_KEEPER_MAX_ARGS)) < 0;
		if (m->cwd)
			oom |= json_object_set_new(o, "cwd", json_string(m->cwd)) < 0;
		if ((m->rows || m->cols) && !m->tty) {
			r = moat_error_set(err, EINVAL, "spawn.rows: a window size without spawn.tty");
			break;
		}
		oom |= json_object_set_new(o, "tty", json_boolean(m->tty)) < 0;
		if (m->rows || m->cols) {
			oom |= json_object_set_new(o, "rows", json_integer(m->rows)) < 0;
			oom |= json_object_set_new(o, "cols", json_integer(m->cols)) < 0;
		}
		oom |= json_object_set_new(o, "stdio", json_pack("[bbb]", m->stdio[0], m->stdio[1], m->stdio[2])) < 0;
		if (m->attached)
			oom |= json_object_set_new(o, "attached", json_true()) < 0;
		if (m->and_wait)
			oom |= json_object_set_new(o, "wait", json_true()) < 0;
		if (m->record) {
			if (m->record[0] != '/' || strlen(m->record) > MOAT_KEEPER_MAX_STRING) {
				r = moat_error_set(err, EINVAL, "spawn.record: not an absolute path");
				break;
			}
			oom |= json_object_set_new(o, "record", json_string(m->record)) < 0;
		}
		break;
	case MOAT_KEEPER_WAIT:
		oom |= json_object_set_new(o, "id", json_integer(m->id)) < 0;
		break;
	case MOAT_KEEPER_SIGNAL:
		if (m->signal <= 0 || m->signal >= NSIG) {
			r = moat_error_set(err, EINVAL, "signal.signal: %d is not a signal", m->signal);
			break;
		}
		oom |= json_object_set_new(o, "id", json_integer(m->id)) < 0;
		oom |= json_object_set_new(o, "signal", json_integer(m->signal)) < 0;
		break;
	case MOAT_KEEPER_STOP:
	case MOAT_KEEPER_OK:
		break;
	case MOAT_KEEPER_STATUS:
		/* A request has only its tag; an answer has the rest. */
		if (m->state[0]) {
			json_t *a = json_array();
			for (size_t i = 0; a && i < m->n_commands && i < MOAT_KEEPER_MAX_COMMANDS; i++)
				oom |= json_array_append_new(a, json_integer(m->commands[i])) < 0;
			oom |= json_object_set_new(o, "sandbox", json_string(m->sandbox)) < 0;
			oom |= json_object_set_new(o, "pid", json_integer(m->pid)) < 0;
			oom |= json_object_set_new(o, "state", json_string(m->state)) < 0;
			oom |= json_object_set_new(o, "commands", a) < 0;
			if (m->net_known)
				oom |= json_object_set_new(o, "net",
							   json_pack("{s:I, s:I, s:I, s:I}", "allowed",
								     (json_int_t)m->net_allowed, "denied",
								     (json_int_t)m->net_denied, "bytes_up",
								     (json_int_t)m->net_bytes_up, "bytes_down",
								     (json_int_t)m->net_bytes_down)) < 0;
			oom |= json_object_set_new(o, "approvals",
						   json_pack("{s:I, s:I}", "pending", (json_int_t)m->approvals_pending,
							     "leases", (json_int_t)m->approvals_leases)) < 0;
		}
		break;
	case MOAT_KEEPER_SPAWNED:
		oom |= json_object_set_new(o, "id", json_integer(m->id)) < 0;
		oom |= json_object_set_new(o, "pid", json_integer(m->pid)) < 0;
		break;
	case MOAT_KEEPER_EXIT:
		if (!exit_status_known(m->exit.status)) {
			r = moat_error_set(err, EINVAL, "exit.status: unknown status");
			break;
		}
		oom |= json_object_set_new(o, "id", json_integer(m->exit.id)) < 0;
		oom |= json_object_set_new(o, "status", json_string(m->exit.status)) < 0;
		oom |= json_object_set_new(o, "exit_code", json_integer(m->exit.exit_code)) < 0;
		oom |= json_object_set_new(o, "signal", json_integer(m->exit.signal)) < 0;
		oom |= json_object_set_new(o, "exit_status", json_integer(m->exit.exit_status)) < 0;
		oom |= json_object_set_new(o, "wall_ms", json_integer((json_int_t)m->exit.wall_ms)) < 0;
		oom |= json_object_set_new(o, "cpu_user_ms", json_integer((json_int_t)m->exit.cpu_user_ms)) < 0;
		oom |= json_object_set_new(o, "cpu_sys_ms", json_integer((json_int_t)m->exit.cpu_sys_ms)) < 0;
		oom |= json_object_set_new(o, "max_rss_bytes", json_integer((json_int_t)m->exit.max_rss_bytes)) < 0;
		oom |= json_object_set_new(o, "error", json_string(m->exit.error)) < 0;
		if (m->exit.limit[0] && !limit_name_valid(m->exit.limit)) {
			r = moat_error_set(err, EINVAL, "exit.limit: not a limit's name");
			break;
		}
		if (m->exit.limit[0])
			oom |= json_object_set_new(o, "limit", json_string(m->exit.limit)) < 0;
		if (m->sandbox_report && !json_is_object(m->sandbox_report)) {
			r = moat_error_set(err, EINVAL, "exit.sandbox: not an object");
			break;
		}
		if (m->sandbox_report)
			oom |= json_object_set(o, "sandbox", m->sandbox_report) < 0;
		break;
	case MOAT_KEEPER_APPROVALS:
		if (!json_is_object(m->body)) {
			r = moat_error_set(err, EINVAL, "approvals.body: not an object");
			break;
		}
		oom |= json_object_set(o, "body", m->body) < 0;
		break;
	case MOAT_KEEPER_LIFETIME:
		if (m->ttl_ms > MOAT_KEEPER_MAX_LIFETIME_MS || m->idle_ms > MOAT_KEEPER_MAX_LIFETIME_MS) {
			r = moat_error_set(err, EINVAL, "lifetime: longer than %llu ms",
					   (unsigned long long)MOAT_KEEPER_MAX_LIFETIME_MS);
			break;
		}
		oom |= json_object_set_new(o, "ttl_ms", json_integer((json_int_t)m->ttl_ms)) < 0;
		oom |= json_object_set_new(o, "idle_ms", json_integer((json_int_t)m->idle_ms)) < 0;
		break;
	case MOAT_KEEPER_COPIED:
		if (!m->host || !m->path || strlen(m->host) > MOAT_KEEPER_MAX_STRING ||
		    strlen(m->path) > MOAT_KEEPER_MAX_STRING || (m->message && strlen(m->message) > MOAT_KEEPER_MAX_STRING)) {
			r = moat_error_set(err, EINVAL, "copied: host and path are needed, each at most %d bytes",
					   MOAT_KEEPER_MAX_STRING);
			break;
		}
		oom |= json_object_set_new(o, "into", json_boolean(m->into)) < 0;
		oom |= json_object_set_new(o, "host", json_string(m->host)) < 0;
		oom |= json_object_set_new(o, "path", json_string(m->path)) < 0;
		oom |= json_object_set_new(o, "files", json_integer((json_int_t)m->files)) < 0;
		oom |= json_object_set_new(o, "dirs", json_integer((json_int_t)m->dirs)) < 0;
		oom |= json_object_set_new(o, "bytes", json_integer((json_int_t)m->bytes)) < 0;
		if (m->message)
			oom |= json_object_set_new(o, "error", json_string(m->message)) < 0;
		break;
	case MOAT_KEEPER_ERROR:
		oom |= json_object_set_new(o, "errno", json_integer(m->error_errno)) < 0;
		oom |= json_object_set_new(o, "message", json_string(m->message ? m->message : "")) < 0;
		break;
	default:
		break;
	}
	if (r < 0) {
		json_decref(o);
		return r;
	}
	char *s = oom ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return moat_error_set(err, ENOMEM, "%s: cannot encode (out of memory, or a string not UTF-8)", tn);
	if (strlen(s) > MOAT_KEEPER_MAX_MSG) {
		free(s);
		return moat_error_set(err, E2BIG, "%s: the message is larger than %d bytes", tn, MOAT_KEEPER_MAX_MSG);
	}
	*ret = s;
	return 0;
}

/* ---- decoding ---- */

/* Each getter fails naming TYPE.FIELD. A missing field is an error when
 * required, else leaves *ret alone. */
static int get_uint(json_t *o, const char *tn, const char *key, uint64_t max, bool required, uint64_t *ret,
		    moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return required ? moat_error_set(err, EINVAL, "%s.%s: missing", tn, key) : 0;
	if (!json_is_integer(v))
		return moat_error_set(err, EINVAL, "%s.%s: not an integer", tn, key);
	json_int_t i = json_integer_value(v);
	if (i < 0 || (uint64_t)i > max)
		return moat_error_set(err, EINVAL, "%s.%s: %lld is out of range (0..%llu)", tn, key, (long long)i,
				      (unsigned long long)max);
	*ret = (uint64_t)i;
	return 0;
}

static int get_int(json_t *o, const char *tn, const char *key, int min, int max, int *ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return moat_error_set(err, EINVAL, "%s.%s: missing", tn, key);
	if (!json_is_integer(v))
		return moat_error_set(err, EINVAL, "%s.%s: not an integer", tn, key);
	json_int_t i = json_integer_value(v);
	if (i < min || i > max)
		return moat_error_set(err, EINVAL, "%s.%s: %lld is out of range (%d..%d)", tn, key, (long long)i, min,
				      max);
	*ret = (int)i;
	return 0;
}

/* A string into a fixed buffer (cap - 1 bytes at most), or allocated when
 * dup is set (*ret_dup). */
static int get_str(json_t *o, const char *tn, const char *key, bool required, char *buf, size_t cap, char **ret_dup,
		   moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return required ? moat_error_set(err, EINVAL, "%s.%s: missing", tn, key) : 0;
	if (!json_is_string(v))
		return moat_error_set(err, EINVAL, "%s.%s: not a string", tn, key);
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	if (memchr(s, '\0', len))
		return moat_error_set(err, EINVAL, "%s.%s: holds a NUL byte", tn, key);
	if (buf) {
		if (len >= cap)
			return moat_error_set(err, E2BIG, "%s.%s: longer than %zu bytes", tn, key, cap - 1);
		memcpy(buf, s, len + 1);
		return 0;
	}
	if (len > MOAT_KEEPER_MAX_STRING)
		return moat_error_set(err, E2BIG, "%s.%s: longer than %d bytes", tn, key, MOAT_KEEPER_MAX_STRING);
	*ret_dup = strdup(s);
	return *ret_dup ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

static int get_strv(json_t *o, const char *tn, const char *key, bool required, bool env, char ***ret,
		    moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return required ? moat_error_set(err, EINVAL, "%s.%s: missing", tn, key) : 0;
	if (!json_is_array(v))
		return moat_error_set(err, EINVAL, "%s.%s: not an array", tn, key);
	size_t n = json_array_size(v);
	if (required && n == 0)
		return moat_error_set(err, EINVAL, "%s.%s: must hold at least one string", tn, key);
	if (n > MOAT_KEEPER_MAX_ARGS)
		return moat_error_set(err, E2BIG, "%s.%s: more than %d entries", tn, key, MOAT_KEEPER_MAX_ARGS);
	char **out = calloc(n + 1, sizeof(char *));
	if (!out)
		return moat_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		int r = 0;
		if (!json_is_string(e))
			r = moat_error_set(err, EINVAL, "%s.%s[%zu]: not a string", tn, key, i);
		else if (json_string_length(e) > MOAT_KEEPER_MAX_STRING)
			r = moat_error_set(err, E2BIG, "%s.%s[%zu]: longer than %d bytes", tn, key, i,
					   MOAT_KEEPER_MAX_STRING);
		else if (memchr(json_string_value(e), '\0', json_string_length(e)))
			r = moat_error_set(err, EINVAL, "%s.%s[%zu]: holds a NUL byte", tn, key, i);
		else if (env && (json_string_value(e)[0] == '=' || !strchr(json_string_value(e), '=')))
			r = moat_error_set(err, EINVAL, "%s.%s[%zu]: not NAME=VALUE", tn, key, i);
		else if (!(out[i] = strdup(json_string_value(e))))
			r = moat_error_set(err, ENOMEM, "out of memory");
		if (r < 0) {
			moat__strv_free(out);
			return r;
		}
	}
	*ret = out;
	return 0;
}

static int get_bool(json_t *o, const char *tn, const char *key, bool *ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return moat_error_set(err, EINVAL, "%s.%s: not true or false", tn, key);
	*ret = json_is_true(v);
	return 0;
}

static int get_uint_array(json_t *o, const char *tn, const char *key, uint64_t max, size_t cap, uint32_t *out32,
			  unsigned *outu, size_t *ret_n, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return moat_error_set(err, EINVAL, "%s.%s: missing", tn, key);
	if (!json_is_array(v))
		return moat_error_set(err, EINVAL, "%s.%s: not an array", tn, key);
	if (json_array_size(v) > cap)
		return moat_error_set(err, E2BIG, "%s.%s: more than %zu entries", tn, key, cap);
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);
		if (!json_is_integer(e) || json_integer_value(e) < 0 || (uint64_t)json_integer_value(e) > max)
			return moat_error_set(err, EINVAL, "%s.%s[%zu]: not an integer in 0..%llu", tn, key, i,
					      (unsigned long long)max);
		if (out32)
			out32[i] = (uint32_t)json_integer_value(e);
		else
			outu[i] = (unsigned)json_integer_value(e);
	}
	*ret_n = json_array_size(v);
	return 0;
}

static int decode_object(json_t *o, moat_keeper_msg *m, moat_error *err)
{
	json_t *t = json_object_get(o, "type");
	if (!t)
		return moat_error_set(err, EINVAL, "type: missing");
	if (!json_is_string(t))
		return moat_error_set(err, EINVAL, "type: not a string");
	moat_keeper_msg_type type = moat_keeper_msg_type_from_string(json_string_value(t));
	if (type < 0) {
		_cleanup_free_ char *shown = moat__escape_controls_dup(json_string_value(t));
		return moat_error_set(err, EINVAL, "type: unknown message type '%.64s'", shown ? shown : "?");
	}
	m->type = type;
	const char *tn = type_names[type];
	const char *key;
	json_t *val;
	json_object_foreach(o, key, val) {
		if (!field_known(type, key)) {
			_cleanup_free_ char *shown = moat__escape_controls_dup(key);
			return moat_error_set(err, EINVAL, "%s.%.64s: unknown field", tn, shown ? shown : "?");
		}
	}
	int r;
	uint64_t u = 0;
	if (type != MOAT_KEEPER_HELLO) {
		/* Tags are chosen by the front and echoed; 2^53 keeps them exact
		 * in any JSON reader. */
		if ((r = get_uint(o, tn, "tag", (1ULL << 53), true, &m->tag, err)) < 0)
			return r;
	} else if (json_object_get(o, "tag"))
		return moat_error_set(err, EINVAL, "hello.tag: unknown field");

	switch (type) {
	case MOAT_KEEPER_HELLO:
		if (json_object_get(o, "versions")) {
			if (json_object_get(o, "version") || json_object_get(o, "sandbox") || json_object_get(o, "pid"))
				return moat_error_set(err, EINVAL,
						      "hello: versions (a front's) with version, sandbox or pid (a keeper's)");
			if ((r = get_uint_array(o, tn, "versions", UINT32_MAX, MOAT_KEEPER_MAX_VERSIONS, NULL, m->versions,
						&m->n_versions, err)) < 0)
				return r;
			if (m->n_versions == 0)
				return moat_error_set(err, EINVAL, "hello.versions: must hold at least one version");
			return 0;
		}
		if ((r = get_uint(o, tn, "version", UINT32_MAX, true, &u, err)) < 0)
			return r;
		m->version = (unsigned)u;
		if ((r = get_str(o, tn, "sandbox", true, m->sandbox, sizeof(m->sandbox), NULL, err)) < 0)
			return r;
		if (!moat__keeper_id_valid(m->sandbox))
			return moat_error_set(err, EINVAL, "hello.sandbox: not a sandbox id");
		if ((r = get_uint(o, tn, "pid", INT32_MAX, true, &u, err)) < 0)
			return r;
		m->pid = (pid_t)u;
		return 0;
	case MOAT_KEEPER_SPAWN:
		if ((r = get_strv(o, tn, "argv", true, false, &m->argv, err)) < 0 ||
		    (r = get_strv(o, tn, "env", false, true, &m->env, err)) < 0 ||
		    (r = get_str(o, tn, "cwd", false, NULL, 0, &m->cwd, err)) < 0 ||
		    (r = get_bool(o, tn, "tty", &m->tty, err)) < 0 ||
		    (r = get_bool(o, tn, "attached", &m->attached, err)) < 0 ||
		    (r = get_bool(o, tn, "wait", &m->and_wait, err)) < 0 ||
		    (r = get_str(o, tn, "record", false, NULL, 0, &m->record, err)) < 0)
			return r;
		if (m->cwd && m->cwd[0] != '/')
			return moat_error_set(err, EINVAL, "spawn.cwd: not an absolute path");
		if (m->record && m->record[0] != '/')
			return moat_error_set(err, EINVAL, "spawn.record: not an absolute path");
		json_t *s = json_object_get(o, "stdio");
		if (s) {
			if (!json_is_array(s) || json_array_size(s) != 3)
				return moat_error_set(err, EINVAL, "spawn.stdio: not an array of three booleans");
			for (size_t i = 0; i < 3; i++) {
				if (!json_is_boolean(json_array_get(s, i)))
					return moat_error_set(err, EINVAL, "spawn.stdio[%zu]: not true or false", i);
				m->stdio[i] = json_is_true(json_array_get(s, i));
			}
		}
		if (m->tty && (m->stdio[0] || m->stdio[1] || m->stdio[2]))
			return moat_error_set(err, EINVAL, "spawn.stdio: must be empty with spawn.tty");
		uint64_t rows = 0, cols = 0;
		if ((r = get_uint(o, tn, "rows", UINT16_MAX, false, &rows, err)) < 0 ||
		    (r = get_uint(o, tn, "cols", UINT16_MAX, false, &cols, err)) < 0)
			return r;
		if ((rows || cols) && !m->tty)
			return moat_error_set(err, EINVAL, "spawn.rows: a window size without spawn.tty");
		m->rows = (uint16_t)rows;
		m->cols = (uint16_t)cols;
		return 0;
	case MOAT_KEEPER_WAIT:
	case MOAT_KEEPER_SPAWNED:
		if ((r = get_uint(o, tn, "id", UINT32_MAX, true, &u, err)) < 0)
			return r;
		m->id = (uint32_t)u;
		if (type == MOAT_KEEPER_SPAWNED) {
			if ((r = get_uint(o, tn, "pid", INT32_MAX, true, &u, err)) < 0)
				return r;
			m->pid = (pid_t)u;
		}
		return 0;
	case MOAT_KEEPER_SIGNAL:
		if ((r = get_uint(o, tn, "id", UINT32_MAX, true, &u, err)) < 0)
			return r;
		m->id = (uint32_t)u;
		return get_int(o, tn, "signal", 1, NSIG - 1, &m->signal, err);
	case MOAT_KEEPER_STATUS:
		if (json_object_size(o) == 2)
			return 0; /* a request: type and tag */
		if ((r = get_str(o, tn, "sandbox", true, m->sandbox, sizeof(m->sandbox), NULL, err)) < 0)
			return r;
		if (!moat__keeper_id_valid(m->sandbox))
			return moat_error_set(err, EINVAL, "status.sandbox: not a sandbox id");
		if ((r = get_uint(o, tn, "pid", INT32_MAX, true, &u, err)) < 0)
			return r;
		m->pid = (pid_t)u;
		if ((r = get_str(o, tn, "state", true, m->state, sizeof(m->state), NULL, err)) < 0)
			return r;
		if (strcmp(m->state, "running") != 0 && strcmp(m->state, "ended") != 0)
			return moat_error_set(err, EINVAL, "status.state: not running or ended");
		if ((r = get_uint_array(o, tn, "commands", UINT32_MAX, MOAT_KEEPER_MAX_COMMANDS, m->commands, NULL,
					&m->n_commands, err)) < 0)
			return r;
		json_t *net = json_object_get(o, "net");
		if (net) {
			if (!json_is_object(net))
				return moat_error_set(err, EINVAL, "status.net: not an object");
			if ((r = get_uint(net, "status.net", "allowed", INT64_MAX, true, &m->net_allowed, err)) < 0 ||
			    (r = get_uint(net, "status.net", "denied", INT64_MAX, true, &m->net_denied, err)) < 0 ||
			    (r = get_uint(net, "status.net", "bytes_up", INT64_MAX, true, &m->net_bytes_up, err)) < 0 ||
			    (r = get_uint(net, "status.net", "bytes_down", INT64_MAX, true, &m->net_bytes_down, err)) < 0)
				return r;
			m->net_known = true;
		}
		json_t *ap = json_object_get(o, "approvals");
		if (ap) {
			if (!json_is_object(ap))
				return moat_error_set(err, EINVAL, "status.approvals: not an object");
			if ((r = get_uint(ap, "status.approvals", "pending", INT64_MAX, true, &m->approvals_pending, err)) < 0 ||
			    (r = get_uint(ap, "status.approvals", "leases", INT64_MAX, true, &m->approvals_leases, err)) < 0)
				return r;
		}
		return 0;
	case MOAT_KEEPER_EXIT: {
		moat_keeper_exit *e = &m->exit;
		if ((r = get_uint(o, tn, "id", UINT32_MAX, true, &u, err)) < 0)
			return r;
		e->id = (uint32_t)u;
		if ((r = get_str(o, tn, "status", true, e->status, sizeof(e->status), NULL, err)) < 0)
			return r;
		if (!exit_status_known(e->status))
			return moat_error_set(err, EINVAL, "exit.status: not exited, signaled or setup_error");
		if ((r = get_int(o, tn, "exit_code", -1, 255, &e->exit_code, err)) < 0 ||
		    (r = get_int(o, tn, "signal", 0, NSIG - 1, &e->signal, err)) < 0 ||
		    (r = get_int(o, tn, "exit_status", 0, 255, &e->exit_status, err)) < 0 ||
		    (r = get_uint(o, tn, "wall_ms", INT64_MAX, true, &e->wall_ms, err)) < 0 ||
		    (r = get_uint(o, tn, "cpu_user_ms", INT64_MAX, true, &e->cpu_user_ms, err)) < 0 ||
		    (r = get_uint(o, tn, "cpu_sys_ms", INT64_MAX, true, &e->cpu_sys_ms, err)) < 0 ||
		    (r = get_uint(o, tn, "max_rss_bytes", INT64_MAX, true, &e->max_rss_bytes, err)) < 0 ||
		    (r = get_str(o, tn, "error", false, e->error, sizeof(e->error), NULL, err)) < 0 ||
		    (r = get_str(o, tn, "limit", false, e->limit, sizeof(e->limit), NULL, err)) < 0)
			return r;
		if (e->limit[0] && !limit_name_valid(e->limit))
			return moat_error_set(err, EINVAL, "exit.limit: not a limit's name");
		json_t *sb = json_object_get(o, "sandbox");
		if (sb && !json_is_object(sb))
			return moat_error_set(err, EINVAL, "exit.sandbox: not an object");
		m->sandbox_report = json_incref(sb);
		return 0;
	}
	case MOAT_KEEPER_LIFETIME:
		if ((r = get_uint(o, tn, "ttl_ms", MOAT_KEEPER_MAX_LIFETIME_MS, true, &m->ttl_ms, err)) < 0)
			return r;
		return get_uint(o, tn, "idle_ms", MOAT_KEEPER_MAX_LIFETIME_MS, true, &m->idle_ms, err);
	case MOAT_KEEPER_COPIED:
		if ((r = get_bool(o, tn, "into", &m->into, err)) < 0 ||
		    (r = get_str(o, tn, "host", true, NULL, 0, &m->host, err)) < 0 ||
		    (r = get_str(o, tn, "path", true, NULL, 0, &m->path, err)) < 0 ||
		    (r = get_uint(o, tn, "files", INT64_MAX, true, &m->files, err)) < 0 ||
		    (r = get_uint(o, tn, "dirs", INT64_MAX, true, &m->dirs, err)) < 0 ||
		    (r = get_uint(o, tn, "bytes", INT64_MAX, true, &m->bytes, err)) < 0)
			return r;
		return get_str(o, tn, "error", false, NULL, 0, &m->message, err);
	case MOAT_KEEPER_ERROR:
		if ((r = get_int(o, tn, "errno", 0, 4095, &m->error_errno, err)) < 0)
			return r;
		return get_str(o, tn, "message", true, NULL, 0, &m->message, err);
	case MOAT_KEEPER_APPROVALS: {
		json_t *b = json_object_get(o, "body");
		if (!b)
			return moat_error_set(err, EINVAL, "approvals.body: missing");
		if (!json_is_object(b))
			return moat_error_set(err, EINVAL, "approvals.body: not an object");
		m->body = json_incref(b);
		return 0;
	}
	case MOAT_KEEPER_STOP:
	case MOAT_KEEPER_OK:
	default:
		return 0;
	}
}

int moat__keeper_decode(const char *buf, size_t len, moat_keeper_msg *ret, moat_error *err)
{
	if (len > MOAT_KEEPER_MAX_MSG)
		return moat_error_set(err, E2BIG, "message: larger than %d bytes", MOAT_KEEPER_MAX_MSG);
	json_error_t je;
	/* Duplicate keys are refused: a message that can be read two ways is
	 * not read at all. */
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return moat_error_set(err, EINVAL, "message: not JSON (%s at byte %d)", je.text, je.position);
	int r;
	if (!json_is_object(o))
		r = moat_error_set(err, EINVAL, "message: not a JSON object");
	else
		r = decode_object(o, ret, err);
	json_decref(o);
	return r;
}
