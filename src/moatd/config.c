/* moatd's configuration (/etc/moat/moatd.yaml), its token file and the
 * mapping of callers to roles. Pure: text in, a struct out. */
#include "moatd.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>
#include <yaml.h>

#include "units.h"
#include "util.h"

#define YAML_MAX_DEPTH 16
#define YAML_MAX_NODES 4096

void moatd_config_init(moatd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_body = 8u << 20;
	c->output_cap = 1u << 20;
	c->max_connections = 64;
	c->timeout_s = 30;
}

void moatd_config_done(moatd_config *c)
{
	free(c->socket);
	free(c->listen);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->tokens);
	free(c->state_dir);
	free(c->moat);
	free(c->token);
	for (size_t i = 0; i < c->n_tlim; i++)
		free(c->tlim[i].policy);
	free(c->tlim);
	memset(c, 0, sizeof(*c));
}

/* A plain scalar reads as YAML 1.2's core schema says (true, false, null,
 * integers, decimals); a quoted one is always a string. */
static json_t *scalar_json(const char *v, size_t n, bool plain)
{
	if (plain && strlen(v) == n) {
		if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
			return json_boolean(v[0] == 't');
		if (strcmp(v, "null") == 0 || strcmp(v, "~") == 0 || n == 0)
			return json_null();
		char *end;
		errno = 0;
		long long i = strtoll(v, &end, 10);
		if (n && !*end && !errno && strspn(v, "-0123456789") == n)
			return json_integer(i);
		double d = strtod(v, &end);
		if (n && !*end && strspn(v, "-+.0123456789eE") == n && strpbrk(v, "0123456789"))
			return json_real(d);
	}
	return json_stringn(v, n);
}

int moatd_yaml_to_json(const char *text, size_t len, json_t **ret, moat_error *err)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return moat_error_set(err, ENOMEM, "yaml parser");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	json_t *stack[YAML_MAX_DEPTH + 1];
	char *keys[YAML_MAX_DEPTH + 1] = {0};
	size_t depth = 0, nodes = 0;
	json_t *root = NULL;
	int rc = 0;
	bool done = false;
	while (!done && rc == 0) {
		yaml_event_t e;
		if (!yaml_parser_parse(&p, &e)) {
			rc = moat_error_set(err, MOAT_EINPUT, "line %u: not valid YAML: %s",
					    (unsigned)p.problem_mark.line + 1, p.problem ? p.problem : "syntax error");
			break;
		}
		unsigned line = (unsigned)e.start_mark.line + 1;
		json_t *v = NULL;
		bool open = false;
		switch (e.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_ALIAS_EVENT:
			rc = moat_error_set(err, MOAT_EINPUT, "line %u: aliases are not allowed", line);
			break;
		case YAML_SCALAR_EVENT:
			if (e.data.scalar.anchor || e.data.scalar.tag) {
				rc = moat_error_set(err, MOAT_EINPUT, "line %u: anchors and tags are not allowed", line);
				break;
			}
			v = scalar_json((const char *)e.data.scalar.value, e.data.scalar.length,
					e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			v = e.type == YAML_SEQUENCE_START_EVENT ? json_array() : json_object();
			open = true;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			v = stack[depth];
			free(keys[depth]);
			keys[depth] = NULL;
			break;
		default:
			break;
		}
		yaml_event_delete(&e);
		if (rc < 0 || (!v && !done)) {
			if (!v && rc == 0 && (e.type == YAML_SCALAR_EVENT || open))
				rc = moat_error_set(err, ENOMEM, "configuration");
			continue;
		}
		if (done)
			break;
		if (++nodes > YAML_MAX_NODES) {
			rc = moat_error_set(err, MOAT_EINPUT, "line %u: too many values (at most %d)", line, YAML_MAX_NODES);
			if (open)
				json_decref(v);
			break;
		}
		if (open) {
			if (depth >= YAML_MAX_DEPTH) {
				rc = moat_error_set(err, MOAT_EINPUT, "line %u: nested too deeply", line);
				json_decref(v);
				break;
			}
			stack[depth++] = v;
			continue;
		}
		/* v is complete: attach it to its parent, or it is the root. */
		if (depth == 0) {
			if (root) {
				json_decref(v);
				rc = moat_error_set(err, MOAT_EINPUT, "line %u: a second document", line);
			} else
				root = v;
			continue;
		}
		json_t *parent = stack[depth - 1];
		if (json_is_array(parent)) {
			json_array_append_new(parent, v);
		} else if (!keys[depth - 1]) {
			if (!json_is_string(v)) {
				rc = moat_error_set(err, MOAT_EINPUT, "line %u: a key must be a plain string", line);
				json_decref(v);
			} else {
				keys[depth - 1] = strdup(json_string_value(v));
				json_decref(v);
				if (!keys[depth - 1])
					rc = moat_error_set(err, ENOMEM, "configuration");
				else if (json_object_get(parent, keys[depth - 1]))
					rc = moat_error_set(err, MOAT_EINPUT, "line %u: %s: given twice", line,
							    keys[depth - 1]);
			}
		} else {
			json_object_set_new(parent, keys[depth - 1], v);
			free(keys[depth - 1]);
			keys[depth - 1] = NULL;
		}
	}
	yaml_parser_delete(&p);
	if (rc < 0) {
		/* A container joins its parent when it closes: the open
		 * ones are each held by the stack alone. */
		for (size_t i = 0; i <= YAML_MAX_DEPTH; i++)
			free(keys[i]);
		for (size_t i = 0; i < depth; i++)
			json_decref(stack[i]);
		json_decref(root);
		return rc;
	}
	*ret = root ? root : json_object();
	return 0;
}

static int cfg_string(json_t *v, const char *field, char **ret, moat_error *err)
{
	if (!json_is_string(v) || !json_string_length(v) || strlen(json_string_value(v)) != json_string_length(v))
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a non-empty string", field);
	free(*ret);
	if (!(*ret = strdup(json_string_value(v))))
		return moat_error_set(err, ENOMEM, "configuration");
	return 0;
}

static int cfg_size(json_t *v, const char *field, bool duration, uint64_t *ret, moat_error *err)
{
	char num[32];
	const char *t = num;
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		t = json_string_value(v);
	else
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a number or a size", field);
	moat_error e = {0};
	uint64_t x;
	int rc = duration ? moat_parse_duration_ms(t, &x, &e) : moat_parse_count(t, &x, &e);
	if (rc < 0 && !duration)
		rc = moat_parse_size(t, &x, &e);
	if (rc < 0)
		return moat_error_set(err, MOAT_EINPUT, "%s: %s", field, e.msg);
	*ret = duration ? (x + 999) / 1000 : x;
	return 0;
}

static int cfg_quota(json_t *v, const char *prefix, moatd_quota *q, moat_error *err)
{
	if (!json_is_object(v))
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a mapping", prefix);
	const char *fk;
	json_t *fv;
	int rc = 0;
	json_object_foreach(v, fk, fv) {
		char field[200];
		snprintf(field, sizeof(field), "%s.%.64s", prefix, fk);
		if (strcmp(fk, "sandboxes") == 0)
			rc = cfg_size(fv, field, false, &q->sandboxes, err);
		else if (strcmp(fk, "runs_per_minute") == 0)
			rc = cfg_size(fv, field, false, &q->runs_per_minute, err);
		else if (strcmp(fk, "cpu_seconds") == 0) {
			/* A duration ("1h") or whole seconds. */
			uint64_t sec = 0;
			if (json_is_integer(fv) && json_integer_value(fv) >= 0)
				q->cpu_seconds = (uint64_t)json_integer_value(fv);
			else if ((rc = cfg_size(fv, field, true, &sec, err)) == 0)
				q->cpu_seconds = sec;
		} else
			rc = moat_error_set(err, MOAT_EINPUT, "%s: unknown field (expected sandboxes, runs_per_minute, cpu_seconds)",
					    field);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* "uid:N" or "gid:N", as the identities in audit events read. */
static bool peer_key(const char *k, bool *ret_gid, uint32_t *ret_id)
{
	if (strncmp(k, "uid:", 4) != 0 && strncmp(k, "gid:", 4) != 0)
		return false;
	const char *d = k + 4;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(d, &end, 10);
	/* (uid_t)-1 means "no change" to the kernel: never an id. */
	if (!*d || *end || errno || strspn(d, "0123456789") != strlen(d) || v >= UINT32_MAX)
		return false;
	*ret_gid = k[0] == 'g';
	*ret_id = (uint32_t)v;
	return true;
}

/* token_limits: {NAME: {policy: FILE, quotas: {...}}}, and peer_limits:
 * {uid:N | gid:N: {policy: FILE, quotas: {...}}}: one shape, one parser. */
static int cfg_limits(json_t *v, const char *section, moatd_config *c, moat_error *err)
{
	bool peer = strcmp(section, "peer_limits") == 0;
	if (!json_is_object(v) || json_object_size(v) > MOATD_MAX_TOKENS)
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a mapping of %s", section,
				      peer ? "uid:N or gid:N keys" : "token names");
	const char *name;
	json_t *tv;
	json_object_foreach(v, name, tv) {
		bool by_gid = false;
		uint32_t id = 0;
		if (!*name || strlen(name) >= sizeof(c->tlim[0].name))
			return moat_error_set(err, MOAT_EINPUT, "%s.%.64s: not a %s", section, name,
					      peer ? "uid:N or gid:N" : "token name");
		if (peer && !peer_key(name, &by_gid, &id))
			return moat_error_set(err, MOAT_EINPUT, "%s.%.64s: expected uid:N or gid:N", section, name);
		if (!json_is_object(tv))
			return moat_error_set(err, MOAT_EINPUT, "%s.%s: expected {policy, quotas}", section, name);
		if (c->n_tlim >= 2 * MOATD_MAX_TOKENS)
			return moat_error_set(err, MOAT_EINPUT, "%s: too many entries", section);
		moatd_token_limit *t = realloc(c->tlim, (c->n_tlim + 1) * sizeof(*t));
		if (!t)
			return moat_error_set(err, ENOMEM, "configuration");
		c->tlim = t;
		t = &c->tlim[c->n_tlim++];
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", name);
		t->section = peer ? "peer_limits" : "token_limits";
		t->peer = peer;
		t->by_gid = by_gid;
		t->id = id;
		const char *fk;
		json_t *fv;
		json_object_foreach(tv, fk, fv) {
			char field[160];
			snprintf(field, sizeof(field), "%s.%s.%.64s", section, name, fk);
			int rc;
			if (strcmp(fk, "policy") == 0)
				rc = cfg_string(fv, field, &t->policy, err);
			else if (strcmp(fk, "quotas") == 0) {
				t->has_quota = true;
				rc = cfg_quota(fv, field, &t->quota, err);
			} else
				rc = moat_error_set(err, MOAT_EINPUT, "%s: unknown field (expected policy, quotas)", field);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

const moatd_token_limit *moatd_token_limit_of(const moatd_config *c, const char *name)
{
	for (size_t i = 0; name && i < c->n_tlim; i++)
		if (!c->tlim[i].peer && strcmp(c->tlim[i].name, name) == 0)
			return &c->tlim[i];
	return NULL;
}

int moatd_peer_limit_of(const moatd_config *c, uid_t uid, const gid_t *gids, size_t n_gids,
			const moatd_token_limit **ret, moat_error *err)
{
	*ret = NULL;
	for (size_t i = 0; i < c->n_tlim; i++)
		if (c->tlim[i].peer && !c->tlim[i].by_gid && c->tlim[i].id == uid) {
			*ret = &c->tlim[i];
			return 0;
		}
	/* Every group of the peer's counts, not its primary gid alone: a
	 * member switches that to any other of its groups (sg, newgrp) and
	 * would take that group's entry, or none, instead. Two entries that
	 * both match have no order to choose by: refused. */
	for (size_t i = 0; i < c->n_tlim; i++) {
		const moatd_token_limit *t = &c->tlim[i];
		if (!t->peer || !t->by_gid)
			continue;
		bool member = false;
		for (size_t k = 0; k < n_gids && !member; k++)
			member = gids[k] == t->id;
		if (!member)
			continue;
		if (*ret) {
			uint32_t first = (*ret)->id;
			*ret = NULL;
			return moat_error_set(err, EACCES,
					      "uid:%u is in groups gid:%u and gid:%u, which both have a peer_limits entry; "
					      "give uid:%u an entry of its own",
					      (unsigned)uid, (unsigned)first, (unsigned)t->id, (unsigned)uid);
		}
		*ret = t;
	}
	return 0;
}

static int cfg_ids(json_t *v, const char *field, moatd_ids *ids, moat_error *err)
{
	if (!json_is_array(v) || json_array_size(v) > MOATD_MAX_IDS)
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a list of at most %d numbers", field, MOATD_MAX_IDS);
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);
		/* (uid_t)-1 means "no change" to the kernel: never an id. */
		if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= UINT32_MAX)
			return moat_error_set(err, MOAT_EINPUT, "%s[%zu]: expected a numeric id", field, i);
		ids->v[ids->n++] = (uint32_t)json_integer_value(e);
	}
	return 0;
}

int moatd_config_parse(const char *text, size_t len, moatd_config *c, moat_error *err)
{
	json_t *root = NULL;
	int rc = moatd_yaml_to_json(text, len, &root, err);
	if (rc < 0)
		return rc;
	if (!json_is_object(root)) {
		json_decref(root);
		return moat_error_set(err, MOAT_EINPUT, "expected a mapping at the top");
	}
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		if (strcmp(k, "socket") == 0)
			rc = cfg_string(v, k, &c->socket, err);
		else if (strcmp(k, "listen") == 0)
			rc = cfg_string(v, k, &c->listen, err);
		else if (strcmp(k, "tokens") == 0)
			rc = cfg_string(v, k, &c->tokens, err);
		else if (strcmp(k, "state_dir") == 0)
			rc = cfg_string(v, k, &c->state_dir, err);
		else if (strcmp(k, "moat") == 0)
			rc = cfg_string(v, k, &c->moat, err);
		else if (strcmp(k, "max_body") == 0)
			rc = cfg_size(v, k, false, &c->max_body, err);
		else if (strcmp(k, "output_cap") == 0)
			rc = cfg_size(v, k, false, &c->output_cap, err);
		else if (strcmp(k, "max_connections") == 0)
			rc = cfg_size(v, k, false, &c->max_connections, err);
		else if (strcmp(k, "timeout") == 0)
			rc = cfg_size(v, k, true, &c->timeout_s, err);
		else if (strcmp(k, "pool") == 0)
			rc = moatd_pool_conf_parse(v, &c->pool, err);
		else if (strcmp(k, "tls") == 0) {
			const char *tk;
			json_t *tv;
			if (!json_is_object(v))
				rc = moat_error_set(err, MOAT_EINPUT, "tls: expected {cert: FILE, key: FILE}");
			json_object_foreach(v, tk, tv) {
				if (rc < 0)
					break;
				if (strcmp(tk, "cert") == 0)
					rc = cfg_string(tv, "tls.cert", &c->tls_cert, err);
				else if (strcmp(tk, "key") == 0)
					rc = cfg_string(tv, "tls.key", &c->tls_key, err);
				else
					rc = moat_error_set(err, MOAT_EINPUT, "tls.%.64s: unknown field (expected cert, key)", tk);
			}
		} else if (strcmp(k, "roles") == 0 || strcmp(k, "quotas") == 0) {
			bool roles = k[0] == 'r';
			const char *rk;
			json_t *rv;
			if (!json_is_object(v))
				rc = moat_error_set(err, MOAT_EINPUT, "%s: expected a mapping of role names", k);
			json_object_foreach(v, rk, rv) {
				if (rc < 0)
					break;
				moatd_role role = moatd_role_from_name(rk);
				if (role == MOATD_ROLE_NONE) {
					rc = moat_error_set(err, MOAT_EINPUT,
							    "%s.%.64s: unknown role (expected admin, operator, agent, viewer)", k, rk);
					break;
				}
				if (!json_is_object(rv)) {
					rc = moat_error_set(err, MOAT_EINPUT, "%s.%s: expected a mapping", k, rk);
					break;
				}
				if (!roles) {
					char prefix[96];
					snprintf(prefix, sizeof(prefix), "quotas.%s", rk);
					if ((rc = cfg_quota(rv, prefix, &c->quota[role], err)) < 0)
						break;
					continue;
				}
				const char *fk;
				json_t *fv;
				json_object_foreach(rv, fk, fv) {
					char field[160];
					snprintf(field, sizeof(field), "%s.%s.%.64s", k, rk, fk);
					if (roles && strcmp(fk, "uids") == 0)
						rc = cfg_ids(fv, field, &c->uids[role], err);
					else if (roles && strcmp(fk, "gids") == 0)
						rc = cfg_ids(fv, field, &c->gids[role], err);
					else if (!roles && strcmp(fk, "sandboxes") == 0)
						rc = cfg_size(fv, field, false, &c->quota[role].sandboxes, err);
					else if (!roles && strcmp(fk, "runs_per_minute") == 0)
						rc = cfg_size(fv, field, false, &c->quota[role].runs_per_minute, err);
					else
						rc = moat_error_set(err, MOAT_EINPUT, "%s: unknown field (expected %s)", field,
								    roles ? "uids, gids" : "sandboxes, runs_per_minute");
					if (rc < 0)
						break;
				}
			}
		} else if (strcmp(k, "token_limits") == 0 || strcmp(k, "peer_limits") == 0)
			rc = cfg_limits(v, k, c, err);
		else
			rc = moat_error_set(err, MOAT_EINPUT,
					    "%.64s: unknown field (expected socket, listen, tls, tokens, state_dir, moat, "
					    "max_body, output_cap, max_connections, timeout, roles, quotas, token_limits, peer_limits, "
					    "pool)",
					    k);
		if (rc < 0)
			break;
	}
	json_decref(root);
	if (rc == 0 && (!c->tls_cert) != (!c->tls_key))
		rc = moat_error_set(err, MOAT_EINPUT, "tls: cert and key go together");
	if (rc == 0 && (c->max_connections == 0 || c->max_body == 0 || c->timeout_s == 0))
		rc = moat_error_set(err, MOAT_EINPUT, "max_connections, max_body and timeout: must be above 0");
	return rc;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int moatd_tokens_parse(const char *text, size_t len, moatd_config *c, moat_error *err)
{
	size_t lineno = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		lineno++;
		char line[256];
		if (n >= sizeof(line))
			return moat_error_set(err, MOAT_EINPUT, "line %zu: too long", lineno);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl ? 1 : 0);
		if (strlen(line) != n)
			return moat_error_set(err, MOAT_EINPUT, "line %zu: holds a NUL byte", lineno);
		char *save = NULL, *role = strtok_r(line, " \t", &save);
		if (!role || role[0] == '#')
			continue;
		char *hex = strtok_r(NULL, " \t", &save), *name = strtok_r(NULL, " \t", &save);
		if (!hex || !name || strtok_r(NULL, " \t", &save))
			return moat_error_set(err, MOAT_EINPUT, "line %zu: expected ROLE SHA256-HEX NAME", lineno);
		moatd_role r = moatd_role_from_name(role);
		if (r == MOATD_ROLE_NONE)
			return moat_error_set(err, MOAT_EINPUT, "line %zu: %.32s: unknown role", lineno, role);
		if (strlen(hex) != 64)
			return moat_error_set(err, MOAT_EINPUT, "line %zu: expected 64 hex digits (the token's SHA-256)", lineno);
		if (strlen(name) >= sizeof(c->token[0].name) || !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", name[0]))
			return moat_error_set(err, MOAT_EINPUT, "line %zu: bad token name", lineno);
		if (c->n_tokens >= MOATD_MAX_TOKENS)
			return moat_error_set(err, MOAT_EINPUT, "too many tokens (at most %d)", MOATD_MAX_TOKENS);
		moatd_token *t = realloc(c->token, (c->n_tokens + 1) * sizeof(*t));
		if (!t)
			return moat_error_set(err, ENOMEM, "tokens");
		c->token = t;
		t = &c->token[c->n_tokens];
		for (int i = 0; i < 32; i++) {
			int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
			if (hi < 0 || lo < 0)
				return moat_error_set(err, MOAT_EINPUT, "line %zu: expected lower-case hex", lineno);
			t->sha256[i] = (unsigned char)(hi << 4 | lo);
		}
		t->role = r;
		snprintf(t->name, sizeof(t->name), "%s", name);
		c->n_tokens++;
	}
	return 0;
}

static bool ids_has(const moatd_ids *ids, uint32_t v)
{
	for (size_t i = 0; i < ids->n; i++)
		if (ids->v[i] == v)
			return true;
	return false;
}

moatd_role moatd_role_for_peer(const moatd_config *c, uid_t self_uid, uid_t uid, gid_t gid)
{
	if (uid == self_uid)
		return MOATD_ROLE_ADMIN;
	for (int r = _MOATD_ROLE_MAX - 1; r > MOATD_ROLE_NONE; r--)
		if (ids_has(&c->uids[r], uid) || ids_has(&c->gids[r], gid))
			return (moatd_role)r;
	return MOATD_ROLE_NONE;
}

moatd_role moatd_role_for_bearer(const moatd_config *c, const char *header, const char **ret_name)
{
	static const char scheme[] = "Bearer ";
	if (!header || strncmp(header, scheme, sizeof(scheme) - 1) != 0)
		return MOATD_ROLE_NONE;
	const char *tok = header + sizeof(scheme) - 1;
	size_t n = strlen(tok);
	if (n == 0 || n > 4096)
		return MOATD_ROLE_NONE;
	unsigned char d[32];
	SHA256((const unsigned char *)tok, n, d);
	/* Every entry is compared, whatever matched, and each comparison
	 * takes the same time: the answer's timing tells nothing of which
	 * digest was near. */
	moatd_role role = MOATD_ROLE_NONE;
	for (size_t i = 0; i < c->n_tokens; i++) {
		if (CRYPTO_memcmp(d, c->token[i].sha256, 32) == 0 && role == MOATD_ROLE_NONE) {
			role = c->token[i].role;
			if (ret_name)
				*ret_name = c->token[i].name;
		}
	}
	return role;
}
