/* The policy file parser. libyaml's event stream is turned into a small
 * tree first, refusing every YAML feature that lets one document be read two
 * ways (aliases, anchors, tags, merge keys, several documents); the tree is
 * then walked against the schema, one table of keys per section, so that an
 * unknown key is an error that names the keys that exist. */
#include "policy-internal.h"

#include "hostglob.h"
#include "units.h"
#include "hostpath.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

/* ---- the tree ---------------------------------------------------------- */

typedef enum node_kind {
	NODE_SCALAR,
	NODE_MAP,
	NODE_SEQ,
} node_kind;

typedef struct node {
	node_kind kind;
	unsigned line, col; /* 1-based */
	char *value;        /* scalar text */
	bool plain;         /* scalar written without quotes */
	struct node **items; /* seq: items; map: key, value, key, value... */
	size_t n;
} node;

static void node_free(node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		node_free(n->items[i]);
	free(n->items);
	free(n->value);
	free(n);
}

static void node_freep(node **n) { node_free(*n); }

typedef struct ctx {
	const char *source;
	const char *dir;
	const char *home;
	moat_policy *p;
	moat_error *err;
	bool no_stat; /* host paths are not checked (a parent's, seen from inside) */
	/* Messages without "SOURCE:LINE:COL: ": the text is moat's own
	 * rendering of the command-line flags (moat__policy_check). */
	bool no_position;
} ctx;

static int _printf_(4, 5) fail_at(const ctx *x, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[MOAT_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (x->no_position)
		return moat_error_set(x->err, MOAT_EINPUT, "%s", msg);
	return moat_error_set(x->err, MOAT_EINPUT, "%s:%u:%u: %s", x->source, line, col, msg);
}

#define fail(x, n, ...) fail_at((x), (n)->line, (n)->col, __VA_ARGS__)

/* Re-raises an error from a value parser (units.h, hostglob.h) at a node. */
static int fail_wrap(const ctx *x, const node *n, const char *key, moat_error *inner)
{
	return fail(x, n, "%s: %s", key, inner->msg);
}

static const char *event_what(const yaml_event_t *e)
{
	switch (e->type) {
	case YAML_SCALAR_EVENT: return "value";
	case YAML_SEQUENCE_START_EVENT: return "list";
	case YAML_MAPPING_START_EVENT: return "mapping";
	default: return "node";
	}
}

/* Refuses anchors and explicit tags on a node: an anchor only exists to be
 * aliased, and a tag changes how a value is read. */
static int check_node_event(const ctx *x, const yaml_event_t *e)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;
	switch (e->type) {
	case YAML_SCALAR_EVENT:
		anchor = e->data.scalar.anchor;
		tag = e->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = e->data.sequence_start.anchor;
		tag = e->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = e->data.mapping_start.anchor;
		tag = e->data.mapping_start.tag;
		break;
	default:
		return 0;
	}
	unsigned line = (unsigned)e->start_mark.line + 1, col = (unsigned)e->start_mark.column + 1;
	if (anchor)
		return fail_at(x, line, col, "anchor '&%s' on a %s is not allowed (expected plain YAML: anchors and aliases "
				   "let one value be read in two places)", (const char *)anchor, event_what(e));
	if (tag)
		return fail_at(x, line, col, "tag '%s' is not allowed (expected an untagged value: tags change how a value "
				   "is read)", (const char *)tag);
	return 0;
}

static int node_append(const ctx *x, node *parent, node *child)
{
	if (parent->n >= 2 * MOAT_POLICY_MAX_LIST)
		return fail(x, child, "too many entries (at most %d)", MOAT_POLICY_MAX_LIST);
	node **ni = realloc(parent->items, (parent->n + 1) * sizeof(*ni));
	if (!ni)
		return moat_error_set(x->err, ENOMEM, "policy");
	parent->items = ni;
	parent->items[parent->n++] = child;
	return 0;
}

static int parse_tree(const ctx *x, const char *buf, size_t len, node **ret)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return moat_error_set(x->err, ENOMEM, "yaml parser");
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);

	node *stack[MOAT_POLICY_MAX_DEPTH + 1];
	size_t depth = 0, count = 0, docs = 0;
	_cleanup_(node_freep) node *root = NULL;
	int r = 0;
	bool done = false;

	while (!done && r == 0) {
		yaml_event_t e;
		if (!yaml_parser_parse(&parser, &e)) {
			unsigned line = (unsigned)parser.problem_mark.line + 1, col = (unsigned)parser.problem_mark.column + 1;
			r = fail_at(x, line, col, "not valid YAML: %s%s%s", parser.problem ? parser.problem : "syntax error",
				    parser.context ? " " : "", parser.context ? parser.context : "");
			break;
		}
		unsigned line = (unsigned)e.start_mark.line + 1, col = (unsigned)e.start_mark.column + 1;
		r = check_node_event(x, &e);
		if (r < 0) {
			yaml_event_delete(&e);
			break;
		}
		switch (e.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1)
				r = fail_at(x, line, col, "a second YAML document (expected exactly one document per policy)");
			else if (e.data.document_start.tag_directives.start != e.data.document_start.tag_directives.end)
				r = fail_at(x, line, col, "%%TAG directive is not allowed (expected plain YAML)");
			break;
		case YAML_ALIAS_EVENT:
			r = fail_at(x, line, col, "alias '*%s' is not allowed (expected the value written out: aliases let "
					      "one value be read in two places)", (const char *)e.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT: {
			if (++count > MOAT_POLICY_MAX_NODES) {
				r = fail_at(x, line, col, "policy too large (at most %d values)", MOAT_POLICY_MAX_NODES);
				break;
			}
			node *n = calloc(1, sizeof(*n));
			if (!n) {
				r = moat_error_set(x->err, ENOMEM, "policy");
				break;
			}
			n->line = line;
			n->col = col;
			if (e.type == YAML_SCALAR_EVENT) {
				n->kind = NODE_SCALAR;
				if (e.data.scalar.length > MOAT_POLICY_MAX_STRING ||
				    strlen((const char *)e.data.scalar.value) != e.data.scalar.length) {
					r = fail_at(x, line, col, "value too long or holding a NUL byte (at most %d bytes)",
						    MOAT_POLICY_MAX_STRING);
					free(n);
					break;
				}
				n->value = strdup((const char *)e.data.scalar.value);
				n->plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
				if (!n->value) {
					free(n);
					r = moat_error_set(x->err, ENOMEM, "policy");
					break;
				}
			} else {
				n->kind = e.type == YAML_MAPPING_START_EVENT ? NODE_MAP : NODE_SEQ;
			}
			if (depth == 0) {
				root = n;
			} else {
				r = node_append(x, stack[depth - 1], n);
				if (r < 0) {
					node_free(n);
					break;
				}
			}
			if (n->kind != NODE_SCALAR) {
				if (depth >= MOAT_POLICY_MAX_DEPTH) {
					r = fail_at(x, line, col, "nested too deeply (at most %d levels)",
						    MOAT_POLICY_MAX_DEPTH);
					break;
				}
				stack[depth++] = n;
			}
			break;
		}
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth > 0)
				depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&e);
	}
	yaml_parser_delete(&parser);
	if (r < 0)
		return r;
	if (!root)
		return fail_at(x, 1, 1, "empty policy (expected a mapping starting with version: 1)");
	*ret = TAKE_PTR(root);
	return 0;
}

/* ---- value readers ----------------------------------------------------- */

static bool is_null(const node *n)
{
	return n->kind == NODE_SCALAR && n->plain &&
	       (!n->value[0] || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
		strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0);
}

static const char *kind_name(const node *n)
{
	if (is_null(n))
		return "nothing";
	switch (n->kind) {
	case NODE_MAP: return "a mapping";
	case NODE_SEQ: return "a list";
	default: return "a single value";
	}
}

static int expect_kind(const ctx *x, const node *n, const char *key, node_kind k, const char *expected)
{
	if (n->kind != k || is_null(n))
		return fail(x, n, "%s: got %s (expected %s)", key, kind_name(n), expected);
	return 0;
}

static int get_string(const ctx *x, const node *n, const char *key, const char **ret)
{
	int r = expect_kind(x, n, key, NODE_SCALAR, "a string");
	if (r < 0)
		return r;
	if (!n->value[0])
		return fail(x, n, "%s: empty string (expected a value)", key);
	for (const char *s = n->value; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\t')
			return fail(x, n, "%s: control character in value (expected printable text)", key);
	*ret = n->value;
	return 0;
}

static int set_string(const ctx *x, const node *n, const char *key, char **field)
{
	const char *s;
	int r = get_string(x, n, key, &s);
	if (r < 0)
		return r;
	char *d = strdup(s);
	if (!d)
		return moat_error_set(x->err, ENOMEM, "policy");
	free(*field);
	*field = d;
	return 0;
}

static int get_bool(const ctx *x, const node *n, const char *key, bool *ret)
{
	/* Only the two YAML 1.2 spellings: "yes", "on" and "y" were booleans in
	 * YAML 1.1, and a value one reader takes as true and another as a
	 * string is exactly the ambiguity a policy must not have. */
	if (n->kind == NODE_SCALAR && n->plain && strcmp(n->value, "true") == 0)
		*ret = true;
	else if (n->kind == NODE_SCALAR && n->plain && strcmp(n->value, "false") == 0)
		*ret = false;
	else if (n->kind == NODE_SCALAR && !is_null(n))
		return fail(x, n, "%s: '%s' is not a boolean (expected true or false, unquoted)", key, n->value);
	else
		return fail(x, n, "%s: got %s (expected true or false)", key, kind_name(n));
	return 0;
}

static int get_uint(const ctx *x, const node *n, const char *key, uint64_t max, uint64_t *ret)
{
	int r = expect_kind(x, n, key, NODE_SCALAR, "a whole number");
	if (r < 0)
		return r;
	const char *s = n->value;
	uint64_t v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return fail(x, n, "%s: '%s' is not a whole number (expected digits without a leading 0)", key, s);
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return fail(x, n, "%s: '%s' is not a whole number (expected digits)", key, n->value);
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return fail(x, n, "%s: %s is too large (expected at most %llu)", key, n->value,
				    (unsigned long long)max);
	}
	*ret = v;
	return 0;
}

static bool is_env_name(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!(ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (i > 0 && ch >= '0' && ch <= '9')))
			return false;
	}
	return true;
}

/* A host path: resolved against the policy's folder and checked to exist. */
static int get_host_path(const ctx *x, const node *n, const char *key, const char *text, bool must_exist,
			 char **ret)
{
	moat_error inner = {0};
	_cleanup_free_ char *abs = NULL;
	if (moat_path_resolve(text, x->dir, x->home, &abs, &inner) < 0)
		return fail_wrap(x, n, key, &inner);
	if (must_exist && !x->no_stat) {
		struct stat st;
		if (stat(abs, &st) < 0)
			return fail(x, n, "%s: path '%s' does not exist (expected an existing host path%s)", key, abs,
				    strcmp(abs, text) ? ", relative paths start at the policy's folder" : "");
	}
	*ret = TAKE_PTR(abs);
	return 0;
}

/* A path inside the sandbox. */
static int get_inside_path(const ctx *x, const node *n, const char *key, char **ret)
{
	const char *s;
	int r = get_string(x, n, key, &s);
	if (r < 0)
		return r;
	if (!moat_path_is_clean_absolute(s))
		return fail(x, n, "%s: '%s' is not a clean absolute path (expected /PATH without '.', '..' or '//')", key, s);
	char *d = strdup(s);
	if (!d)
		return moat_error_set(x->err, ENOMEM, "policy");
	size_t l = strlen(d);
	while (l > 1 && d[l - 1] == '/')
		d[--l] = '\0';
	*ret = d;
	return 0;
}

/* ---- mappings ---------------------------------------------------------- */

typedef int (*key_fn)(const ctx *x, const node *key, const node *val, const char *path);

typedef struct key_handler {
	const char *key;
	key_fn fn;
} key_handler;

static int k_not_built(const ctx *x, const node *k, const node *v, const char *path);

/* The keys a mapping takes, for an error; a key that is only there to be
 * refused as not built is no suggestion. */
static void list_keys(const key_handler *t, size_t n, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++)
		if (t[i].fn != k_not_built)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", t[i].key);
}

/* Checks the generic rules of every mapping: scalar keys, no merge keys, no
 * duplicates. */
static int check_map(const ctx *x, const node *m, const char *path)
{
	const char *sep = path[0] ? ": " : "";
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const node *k = m->items[i];
		if (k->kind != NODE_SCALAR || is_null(k))
			return fail(x, k, "%s%skey is %s (expected a name)", path, sep, kind_name(k));
		if (k->plain && strcmp(k->value, "<<") == 0)
			return fail(x, k, "%s%smerge key '<<' is not allowed (expected every key written out)", path, sep);
		for (size_t j = 0; j < i; j += 2)
			if (strcmp(m->items[j]->value, k->value) == 0)
				return fail(x, k, "%s%sduplicate key '%s' (first at line %u; expected each key once)", path,
					    sep, k->value, m->items[j]->line);
	}
	return 0;
}

static int walk_map(const ctx *x, const node *m, const char *path, const key_handler *t, size_t nt)
{
	int r = expect_kind(x, m, path, NODE_MAP, "a mapping");
	if (r < 0)
		return r;
	r = check_map(x, m, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const node *k = m->items[i], *v = m->items[i + 1];
		const key_handler *h = NULL;
		for (size_t j = 0; j < nt; j++)
			if (strcmp(t[j].key, k->value) == 0)
				h = &t[j];
		char full[256];
		snprintf(full, sizeof(full), "%s%s%s", path[0] ? path : "", path[0] ? "." : "", k->value);
		if (!h) {
			char keys[512];
			list_keys(t, nt, keys, sizeof(keys));
			return fail(x, k, "unknown key '%s'%s%s (expected one of: %s)", full, path[0] ? " in " : "",
				    path, keys);
		}
		r = h->fn(x, k, v, full);
		if (r < 0)
			return r;
	}
	return 0;
}

static const node *map_get(const node *m, const char *key)
{
	for (size_t i = 0; i + 1 < m->n; i += 2)
		if (strcmp(m->items[i]->value, key) == 0)
			return m->items[i + 1];
	return NULL;
}

static int expect_list(const ctx *x, const node *n, const char *path)
{
	int r = expect_kind(x, n, path, NODE_SEQ, "a list");
	if (r == 0 && n->n > MOAT_POLICY_MAX_LIST)
		return fail(x, n, "%s: too many entries (at most %d)", path, MOAT_POLICY_MAX_LIST);
	return r;
}

/* ---- filesystem -------------------------------------------------------- */

static int add_bind(const ctx *x, const node *n, const char *path, char *src, char *dst, unsigned flags)
{
	moat_policy *p = x->p;
	_cleanup_free_ char *s = src, *d = dst;
	if (moat_path_is_reserved_target(d))
		return fail(x, n, "%s: moat builds %s itself (expected a path outside /, /proc, /dev and /sys)", path, d);
	for (size_t i = 0; i < p->n_binds; i++)
		if (strcmp(p->binds[i].dst, d) == 0)
			return fail(x, n, "%s: %s is bound twice (expected each sandbox path once)", path, d);
	if (p->n_binds >= MOAT_MAX_BINDS)
		return fail(x, n, "%s: too many binds (at most %d)", path, MOAT_MAX_BINDS);
	moat_bind *nb = realloc(p->binds, (p->n_binds + 1) * sizeof(*nb));
	if (!nb)
		return moat_error_set(x->err, ENOMEM, "policy");
	p->binds = nb;
	p->binds[p->n_binds++] = (moat_bind){.src = TAKE_PTR(s), .dst = TAKE_PTR(d), .flags = flags};
	return 0;
}

static int bind_entry_map(const ctx *x, const node *n, const char *path, unsigned flags)
{
	int r = check_map(x, n, path);
	if (r < 0)
		return r;
	const node *host = NULL, *to = NULL, *opt = NULL;
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const char *k = n->items[i]->value;
		if (strcmp(k, "host") == 0)
			host = n->items[i + 1];
		else if (strcmp(k, "path") == 0)
			to = n->items[i + 1];
		else if (strcmp(k, "optional") == 0)
			opt = n->items[i + 1];
		else
			return fail(x, n->items[i], "unknown key '%s' in %s (expected one of: host, path, optional)", k,
				    path);
	}
	if (!host)
		return fail(x, n, "%s: missing 'host' (expected {host: HOST_PATH, path: SANDBOX_PATH, optional: BOOL})",
			    path);
	bool optional = false;
	if (opt && (r = get_bool(x, opt, "optional", &optional)) < 0)
		return r;
	const char *text;
	if ((r = get_string(x, host, "host", &text)) < 0)
		return r;
	_cleanup_free_ char *src = NULL, *dst = NULL;
	if ((r = get_host_path(x, host, path, text, !optional, &src)) < 0)
		return r;
	if (to) {
		if ((r = get_inside_path(x, to, "path", &dst)) < 0)
			return r;
	} else if (!(dst = strdup(src))) {
		return moat_error_set(x->err, ENOMEM, "policy");
	}
	return add_bind(x, n, path, TAKE_PTR(src), TAKE_PTR(dst), flags | (optional ? MOAT_BIND_OPTIONAL : 0));
}

static int bind_list(const ctx *x, const node *v, const char *path, unsigned flags)
{
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v->n; i++) {
		const node *e = v->items[i];
		if (e->kind == NODE_MAP) {
			if ((r = bind_entry_map(x, e, path, flags)) < 0)
				return r;
			continue;
		}
		const char *spec;
		if ((r = get_string(x, e, path, &spec)) < 0)
			return r;
		/* HOST[:PATH], as on the command line; a second colon would leave
		 * two readings, so it is refused. */
		const char *colon = strchr(spec, ':');
		if (colon && strchr(colon + 1, ':'))
			return fail(x, e, "%s: '%s' has more than one ':' (expected HOST or HOST:PATH)", path, spec);
		_cleanup_free_ char *host = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
		if (!host)
			return moat_error_set(x->err, ENOMEM, "policy");
		_cleanup_free_ char *src = NULL, *dst = NULL;
		if ((r = get_host_path(x, e, path, host, true, &src)) < 0)
			return r;
		if (colon) {
			if (!moat_path_is_clean_absolute(colon + 1))
				return fail(x, e, "%s: '%s' is not a clean absolute sandbox path (expected HOST:/PATH)", path,
					    colon + 1);
			dst = strdup(colon + 1);
			size_t l = dst ? strlen(dst) : 0;
			while (l > 1 && dst[l - 1] == '/')
				dst[--l] = '\0';
		} else {
			dst = strdup(src);
		}
		if (!dst)
			return moat_error_set(x->err, ENOMEM, "policy");
		if ((r = add_bind(x, e, path, TAKE_PTR(src), TAKE_PTR(dst), flags)) < 0)
			return r;
	}
	return 0;
}

static int k_read_only(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return bind_list(x, v, path, 0);
}

static int k_read_write(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return bind_list(x, v, path, MOAT_BIND_RW);
}

typedef enum path_kind {
	PATH_ANY,    /* need not exist (a file moat creates) */
	PATH_FOLDER, /* an existing folder */
	PATH_FILE,   /* an existing file that is not a folder */
} path_kind;

/* A host path field: resolved, checked for what it must be, and stored in
 * *field (replacing what was there). */
static int host_path_field(const ctx *x, const node *v, const char *path, path_kind kind, char **field)
{
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	_cleanup_free_ char *abs = NULL;
	if ((r = get_host_path(x, v, path, s, kind != PATH_ANY, &abs)) < 0)
		return r;
	struct stat st;
	if (kind == PATH_FOLDER && !x->no_stat && (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)))
		return fail(x, v, "%s: '%s' is not a folder (expected an existing folder)", path, abs);
	if (kind == PATH_FILE && !x->no_stat && (stat(abs, &st) < 0 || S_ISDIR(st.st_mode)))
		return fail(x, v, "%s: '%s' is a folder (expected a file)", path, abs);
	free(*field);
	*field = TAKE_PTR(abs);
	return 0;
}

static int k_out(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return host_path_field(x, v, path, PATH_FOLDER, &x->p->out_dir);
}

static int k_cwd(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	_cleanup_free_ char *d = NULL;
	int r = get_inside_path(x, v, path, &d);
	if (r < 0)
		return r;
	free(x->p->cwd);
	x->p->cwd = TAKE_PTR(d);
	return 0;
}

static const char *const workspace_names[_MOAT_WORKSPACE_MAX] = {
	[MOAT_WORKSPACE_EPHEMERAL] = "ephemeral",
	[MOAT_WORKSPACE_PERSISTENT] = "persistent",
};

const char *moat_workspace_to_string(moat_workspace w)
{
	return w >= 0 && w < _MOAT_WORKSPACE_MAX ? workspace_names[w] : NULL;
}

static int k_workspace(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	for (int i = 0; i < _MOAT_WORKSPACE_MAX; i++)
		if (strcmp(s, workspace_names[i]) == 0) {
			x->p->workspace = (moat_workspace)i;
			return 0;
		}
	return fail(x, v, "%s: '%s' (expected ephemeral or persistent)", path, s);
}

static const key_handler filesystem_keys[] = {
	{"read_only", k_read_only}, {"read_write", k_read_write}, {"out", k_out},
	{"workspace", k_workspace}, {"cwd", k_cwd}, {"approve_write", k_not_built},
};

static int k_filesystem(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return walk_map(x, v, path, filesystem_keys, ELEMENTSOF(filesystem_keys));
}

/* ---- exec -------------------------------------------------------------- */

static int k_exec_allow(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	char **list = calloc(1, sizeof(char *));
	if (!list)
		return moat_error_set(x->err, ENOMEM, "policy");
	moat__strv_free(x->p->exec_allow);
	x->p->exec_allow = list;
	for (size_t i = 0; i < v->n; i++) {
		_cleanup_free_ char *d = NULL;
		if ((r = get_inside_path(x, v->items[i], path, &d)) < 0)
			return r;
		if (moat__strv_push(&x->p->exec_allow, d) < 0)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

static int k_exec_workspace(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return get_bool(x, v, path, &x->p->exec_workspace);
}

static int k_exec_delegate(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return get_bool(x, v, path, &x->p->exec_delegate);
}

/* filesystem.approve_write names a gate that is not built: a policy that
 * asks for it is refused, saying so, rather than run with the write let
 * through unasked. */
static int k_not_built(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)v;
	(void)k;
	return fail(x, k, "%s: holding a write for a person's approval is not built yet (docs/approvals.md); remove it, "
			  "or gate the program that writes with exec.approve",
		    path);
}

/* exec.approve: [{path: /usr/bin/git, args: ["push", "*"]}, ...]: each
 * execve of path whose arguments match is held for a person (execgate.h). */
static int exec_rule(const ctx *x, const node *n, const char *path, moat_exec_rule *ret)
{
	int r = expect_kind(x, n, path, NODE_MAP, "a mapping {path: /PROGRAM, args: [PATTERN, ...]}");
	if (r < 0 || (r = check_map(x, n, path)) < 0)
		return r;
	const node *prog = NULL, *args = NULL;
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const node *k = n->items[i], *v = n->items[i + 1];
		if (strcmp(k->value, "path") == 0)
			prog = v;
		else if (strcmp(k->value, "args") == 0)
			args = v;
		else
			return fail(x, k, "%s: unknown key '%s' (expected path, args)", path, k->value);
	}
	if (!prog)
		return fail(x, n, "%s: no 'path' (expected the program's absolute path inside the sandbox)", path);
	char key[300];
	snprintf(key, sizeof(key), "%s.path", path);
	if ((r = get_inside_path(x, prog, key, &ret->path)) < 0)
		return r;
	if (!args)
		return 0;
	snprintf(key, sizeof(key), "%s.args", path);
	if ((r = expect_list(x, args, key)) < 0)
		return r;
	if (args->n > MOAT_EXEC_APPROVE_ARGS_MAX)
		return fail(x, args, "%s: too many patterns (at most %d)", key, MOAT_EXEC_APPROVE_ARGS_MAX);
	ret->args = calloc(1, sizeof(char *));
	if (!ret->args)
		return moat_error_set(x->err, ENOMEM, "policy");
	for (size_t i = 0; i < args->n; i++) {
		const char *s;
		if ((r = get_string(x, args->items[i], key, &s)) < 0)
			return r;
		if (moat__strv_push(&ret->args, s) < 0)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

static int k_exec_approve(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	if (v->n > MOAT_EXEC_APPROVE_MAX)
		return fail(x, v, "%s: too many rules (at most %d)", path, MOAT_EXEC_APPROVE_MAX);
	moat_policy *p = x->p;
	moat__exec_rules_free(p->exec_approve, p->n_exec_approve);
	p->exec_approve = NULL;
	p->n_exec_approve = 0;
	if (!v->n)
		return 0;
	p->exec_approve = calloc(v->n, sizeof(*p->exec_approve));
	if (!p->exec_approve)
		return moat_error_set(x->err, ENOMEM, "policy");
	p->n_exec_approve = v->n;
	for (size_t i = 0; i < v->n; i++) {
		char item[280];
		snprintf(item, sizeof(item), "%s[%zu]", path, i);
		if ((r = exec_rule(x, v->items[i], item, &p->exec_approve[i])) < 0)
			return r;
	}
	return 0;
}

static const key_handler exec_keys[] = {{"allow", k_exec_allow},
					{"workspace", k_exec_workspace},
					{"delegate", k_exec_delegate},
					{"approve", k_exec_approve}};

static int k_exec(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return walk_map(x, v, path, exec_keys, ELEMENTSOF(exec_keys));
}

/* ---- network ----------------------------------------------------------- */

static const char *const http_methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT"};

static int host_pattern(const ctx *x, const node *n, const char *path, char **ret)
{
	const char *s;
	int r = get_string(x, n, path, &s);
	if (r < 0)
		return r;
	moat_error inner = {0};
	if (moat_host_glob_check(s, &inner) < 0)
		return fail_wrap(x, n, path, &inner);
	char *d = strdup(s);
	if (!d)
		return moat_error_set(x->err, ENOMEM, "policy");
	*ret = d;
	return 0;
}

static int rule_ports(const ctx *x, const node *v, const char *path, moat_net_rule *rule)
{
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	rule->ports = calloc(v->n ? v->n : 1, sizeof(uint16_t));
	if (!rule->ports)
		return moat_error_set(x->err, ENOMEM, "policy");
	for (size_t i = 0; i < v->n; i++) {
		uint64_t port;
		if ((r = get_uint(x, v->items[i], path, 65535, &port)) < 0)
			return r;
		if (port == 0)
			return fail(x, v->items[i], "%s: port 0 (expected 1 to 65535)", path);
		rule->ports[rule->n_ports++] = (uint16_t)port;
	}
	if (v->n == 0)
		return fail(x, v, "%s: empty list (expected at least one port, or no 'ports' key: 80 and 443 for an allow, every port for a deny or approve)", path);
	return 0;
}

static int rule_methods(const ctx *x, const node *v, const char *path, moat_net_rule *rule)
{
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	if (v->n == 0)
		return fail(x, v, "%s: empty list (expected at least one method, or no 'methods' key for any)", path);
	for (size_t i = 0; i < v->n; i++) {
		const char *s;
		if ((r = get_string(x, v->items[i], path, &s)) < 0)
			return r;
		bool known = false;
		for (size_t j = 0; j < ELEMENTSOF(http_methods); j++)
			known |= strcmp(s, http_methods[j]) == 0;
		if (!known)
			return fail(x, v->items[i],
				    "%s: '%s' is not an HTTP method (expected upper case: GET, HEAD, POST, PUT, PATCH, "
				    "DELETE, OPTIONS, CONNECT)", path, s);
		if (moat__strv_push(&rule->methods, s) < 0)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

static int rule_paths(const ctx *x, const node *v, const char *path, moat_net_rule *rule)
{
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	if (v->n == 0)
		return fail(x, v, "%s: empty list (expected at least one path, or no 'paths' key for any)", path);
	for (size_t i = 0; i < v->n; i++) {
		const char *s;
		if ((r = get_string(x, v->items[i], path, &s)) < 0)
			return r;
		if (s[0] != '/')
			return fail(x, v->items[i], "%s: '%s' (expected a URL path starting with '/')", path, s);
		for (const char *c = s; *c; c++) {
			if (*c == '*' && (c[1] != '\0' || c[-1] != '/'))
				return fail(x, v->items[i], "%s: '%s': '*' only at the end, after '/' (expected /exact or "
						    "/prefix/*)", path, s);
			if ((unsigned char)*c <= 0x20 || *c == '?' || *c == '#' || (unsigned char)*c >= 0x7f)
				return fail(x, v->items[i], "%s: '%s' holds a space, '?', '#' or a non-ASCII byte "
						    "(expected a plain URL path)", path, s);
		}
		if (moat__strv_push(&rule->paths, s) < 0)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

void moat__net_rule_clear(moat_net_rule *r)
{
	free(r->host);
	free(r->ports);
	moat__strv_free(r->methods);
	moat__strv_free(r->paths);
	*r = (moat_net_rule){0};
}

static int parse_rule(const ctx *x, const node *e, const char *path, moat_net_rule *rule)
{
	if (e->kind == NODE_SCALAR)
		return host_pattern(x, e, path, &rule->host);
	int r = expect_kind(x, e, path, NODE_MAP, "a host pattern or {host, ports, methods, paths}");
	if (r < 0 || (r = check_map(x, e, path)) < 0)
		return r;
	for (size_t i = 0; i + 1 < e->n; i += 2) {
		const char *k = e->items[i]->value;
		const node *v = e->items[i + 1];
		char full[256];
		snprintf(full, sizeof(full), "%s.%s", path, k);
		if (strcmp(k, "host") == 0)
			r = host_pattern(x, v, full, &rule->host);
		else if (strcmp(k, "ports") == 0)
			r = rule_ports(x, v, full, rule);
		else if (strcmp(k, "methods") == 0)
			r = rule_methods(x, v, full, rule);
		else if (strcmp(k, "paths") == 0)
			r = rule_paths(x, v, full, rule);
		else
			r = fail(x, e->items[i], "unknown key '%s' in %s (expected one of: host, ports, methods, paths)", k,
				 path);
		if (r < 0)
			return r;
	}
	if (!rule->host)
		return fail(x, e, "%s: missing 'host' (expected {host: PATTERN, ...})", path);
	return 0;
}

static int rule_list(const ctx *x, const node *v, const char *path, moat_net_rules *rules)
{
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v->n; i++) {
		if (rules->n >= MOAT_POLICY_MAX_RULES)
			return fail(x, v->items[i], "%s: too many rules (at most %d)", path, MOAT_POLICY_MAX_RULES);
		moat_net_rule *nv = realloc(rules->v, (rules->n + 1) * sizeof(*nv));
		if (!nv)
			return moat_error_set(x->err, ENOMEM, "policy");
		rules->v = nv;
		rules->v[rules->n] = (moat_net_rule){0};
		char full[256];
		snprintf(full, sizeof(full), "%s[%zu]", path, i);
		r = parse_rule(x, v->items[i], full, &rules->v[rules->n]);
		rules->n++; /* counted even on failure, so the free path sees it */
		if (r < 0)
			return r;
	}
	return 0;
}

static int k_net_allow(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return rule_list(x, v, path, &x->p->allow);
}

static int k_net_deny(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return rule_list(x, v, path, &x->p->deny);
}

static int k_net_approve(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return rule_list(x, v, path, &x->p->approve);
}

static int k_net_default(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	/* Allow-by-default egress cannot be reviewed: every host on the
	 * internet would be in scope. */
	if (strcmp(s, "deny") != 0)
		return fail(x, v, "%s: '%s' (expected deny: list what is allowed under network.allow)", path, s);
	return 0;
}

static int k_net_mode(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	if (strcmp(s, "none") == 0)
		x->p->net = MOAT_NET_NONE;
	else if (strcmp(s, "proxy") == 0)
		x->p->net = MOAT_NET_PROXY;
	else if (strcmp(s, "transparent") == 0)
		x->p->net = MOAT_NET_TRANSPARENT;
	else if (strcmp(s, "pod") == 0)
		x->p->net = MOAT_NET_POD;
	else
		return fail(x, v, "%s: '%s' (expected none, proxy, transparent or pod)", path, s);
	return 0;
}

/* Parses "ADDR/LEN" strictly: the address must be written with its host
 * bits clear, so that 10.0.0.1/8 cannot be read as either 10.0.0.0/8 or a
 * typo for 10.0.0.1/32. */
int moat__cidr_parse(const char *s, int *ret_family, unsigned char ret_addr[16], unsigned *ret_len)
{
	const char *slash = strchr(s, '/');
	if (!slash || slash == s || (size_t)(slash - s) >= 64)
		return -EINVAL;
	char a[64];
	memcpy(a, s, (size_t)(slash - s));
	a[slash - s] = '\0';
	unsigned char addr[16] = {0};
	int family = strchr(a, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(family, a, addr) != 1)
		return -EINVAL;
	unsigned max = family == AF_INET ? 32 : 128, len = 0;
	const char *d = slash + 1;
	if (!*d || (d[0] == '0' && d[1]))
		return -EINVAL;
	for (; *d; d++) {
		if (*d < '0' || *d > '9')
			return -EINVAL;
		len = len * 10 + (unsigned)(*d - '0');
		if (len > max)
			return -EINVAL;
	}
	for (unsigned bit = len; bit < max; bit++)
		if (addr[bit / 8] & (0x80u >> (bit % 8)))
			return -EDOM;
	*ret_family = family;
	memcpy(ret_addr, addr, 16);
	*ret_len = len;
	return 0;
}

static int k_net_allow_private(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v->n; i++) {
		const char *s;
		if ((r = get_string(x, v->items[i], path, &s)) < 0)
			return r;
		int fam;
		unsigned char addr[16];
		unsigned len;
		r = moat__cidr_parse(s, &fam, addr, &len);
		if (r == -EDOM)
			return fail(x, v->items[i], "%s: '%s' has bits set after the prefix (expected the network "
					    "address, e.g. 10.0.0.0/8)", path, s);
		if (r < 0)
			return fail(x, v->items[i], "%s: '%s' is not a CIDR range (expected e.g. 10.1.0.0/16 or "
					    "fd00::/8)", path, s);
		if (len == 0)
			return fail(x, v->items[i], "%s: '%s' would allow every address (expected a narrower range)",
				    path, s);
		if (moat__strv_push(&x->p->allow_private, s) < 0)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

static bool is_ip_literal(const char *s)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* network.resolver: what the gateway's resolver takes (IP, IPv4:PORT,
 * [IPv6]:PORT), so a test name server on a high port can be named. */
static bool is_resolver(const char *s)
{
	if (is_ip_literal(s))
		return true;
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || !colon[1] || strlen(colon + 1) > 5)
		return false;
	for (const char *c = colon + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	unsigned long port = strtoul(colon + 1, NULL, 10);
	if (port == 0 || port > 65535 || colon[1] == '0')
		return false;
	char addr[INET6_ADDRSTRLEN + 2];
	size_t n = (size_t)(colon - s);
	if (n >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	unsigned char buf[16];
	if (addr[0] == '[') {
		if (n < 3 || addr[n - 1] != ']')
			return false;
		addr[n - 1] = '\0';
		return inet_pton(AF_INET6, addr + 1, buf) == 1;
	}
	return inet_pton(AF_INET, addr, buf) == 1;
}

static int k_net_hosts(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_MAP, "a mapping of host name to address");
	if (r < 0 || (r = check_map(x, v, path)) < 0)
		return r;
	for (size_t i = 0; i + 1 < v->n; i += 2) {
		const node *kn = v->items[i], *vn = v->items[i + 1];
		moat_error inner = {0};
		if (moat_host_name_check(kn->value, &inner) < 0)
			return fail_wrap(x, kn, path, &inner);
		const char *addr;
		if ((r = get_string(x, vn, path, &addr)) < 0)
			return r;
		if (!is_ip_literal(addr))
			return fail(x, vn, "%s.%s: '%s' is not an IP address (expected e.g. 203.0.113.7 or 2001:db8::1)",
				    path, kn->value, addr);
		moat_host_entry *nh = realloc(x->p->hosts, (x->p->n_hosts + 1) * sizeof(*nh));
		if (!nh)
			return moat_error_set(x->err, ENOMEM, "policy");
		x->p->hosts = nh;
		nh[x->p->n_hosts] = (moat_host_entry){strdup(kn->value), strdup(addr)};
		x->p->n_hosts++;
		if (!nh[x->p->n_hosts - 1].name || !nh[x->p->n_hosts - 1].address)
			return moat_error_set(x->err, ENOMEM, "policy");
	}
	return 0;
}

static int k_net_resolver(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	if (!is_resolver(s))
		return fail(x, v, "%s: '%s' is not an IP address (expected the DNS server's address: IP, IP:PORT or [IPv6]:PORT)",
			    path, s);
	return set_string(x, v, path, &x->p->resolver);
}

static int k_net_budget(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_MAP, "a mapping of bytes_up, bytes_down, requests_per_minute, connections");
	if (r < 0 || (r = check_map(x, v, path)) < 0)
		return r;
	moat_net_budget *b = &x->p->budget;
	for (size_t i = 0; i + 1 < v->n; i += 2) {
		const node *kn = v->items[i], *vn = v->items[i + 1];
		char full[128];
		snprintf(full, sizeof(full), "%s.%s", path, kn->value);
		uint64_t val = 0;
		if (strcmp(kn->value, "bytes_up") == 0 || strcmp(kn->value, "bytes_down") == 0) {
			moat_error inner = {0};
			if ((r = expect_kind(x, vn, full, NODE_SCALAR, "a size such as 10M")) < 0)
				return r;
			if (moat_parse_size(vn->value, &val, &inner) < 0)
				return fail_wrap(x, vn, full, &inner);
			if (val == 0)
				return fail(x, vn, "%s: 0 would forbid all egress (expected a size; leave the key out for no limit)",
					    full);
			*(strcmp(kn->value, "bytes_up") == 0 ? &b->bytes_up : &b->bytes_down) = val;
		} else if (strcmp(kn->value, "requests_per_minute") == 0) {
			if ((r = get_uint(x, vn, full, MOAT_NET_BUDGET_MAX_RATE, &val)) < 0)
				return r;
			if (val == 0)
				return fail(x, vn, "%s: 0 would forbid all egress (expected at least 1)", full);
			b->requests_per_minute = val;
		} else if (strcmp(kn->value, "connections") == 0) {
			if ((r = get_uint(x, vn, full, MOAT_NET_BUDGET_MAX_CONNECTIONS, &val)) < 0)
				return r;
			if (val == 0)
				return fail(x, vn, "%s: 0 would forbid all egress (expected at least 1)", full);
			b->connections = val;
		} else {
			return fail(x, kn,
				    "unknown key '%s' in %s (expected one of: bytes_up, bytes_down, requests_per_minute, connections)",
				    kn->value, path);
		}
	}
	return 0;
}

static const key_handler network_keys[] = {
	{"default", k_net_default}, {"mode", k_net_mode},       {"allow", k_net_allow},
	{"deny", k_net_deny},       {"approve", k_net_approve}, {"allow_private", k_net_allow_private},
	{"hosts", k_net_hosts},     {"resolver", k_net_resolver}, {"budget", k_net_budget},
};

static int k_network(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = walk_map(x, v, path, network_keys, ELEMENTSOF(network_keys));
	if (r < 0)
		return r;
	bool wants_egress = x->p->allow.n || x->p->approve.n;
	const node *mode = map_get(v, "mode");
	if (!mode)
		x->p->net = wants_egress ? MOAT_NET_PROXY : MOAT_NET_NONE;
	else if (x->p->net == MOAT_NET_NONE && wants_egress)
		return fail(x, mode, "%s.mode: none, but network.allow or network.approve lists hosts (expected proxy "
				     "or transparent, or no rules)", path);
	/* In a pod's network namespace nothing of moat's sees the traffic:
	 * a rule there would read as enforced and hold nothing. */
	else if (x->p->net == MOAT_NET_POD &&
		 (wants_egress || x->p->deny.n || x->p->n_hosts || x->p->resolver || x->p->allow_private ||
		  map_get(v, "budget")))
		return fail(x, mode, "%s.mode: pod, but the policy has egress rules (allow, deny, approve, hosts, "
				     "resolver, allow_private, budget): a pod's traffic does not pass moat's gateway, so none "
				     "of them would hold; drop them, or use proxy or transparent",
			    path);
	return 0;
}

/* ---- secrets, env ------------------------------------------------------ */

static int secret_from(const ctx *x, const node *v, const char *path, moat_secret *s)
{
	const char *text;
	int r = get_string(x, v, path, &text);
	if (r < 0)
		return r;
	if (moat__startswith(text, "env:")) {
		if (!is_env_name(text + 4, strlen(text + 4)))
			return fail(x, v, "%s: '%s' (expected env:VARIABLE_NAME)", path, text);
		return (s->from = strdup(text)) ? 0 : moat_error_set(x->err, ENOMEM, "policy");
	}
	if (moat__startswith(text, "file:")) {
		_cleanup_free_ char *abs = NULL;
		if ((r = get_host_path(x, v, path, text + 5, true, &abs)) < 0)
			return r;
		struct stat st;
		if (!x->no_stat && (stat(abs, &st) < 0 || !S_ISREG(st.st_mode)))
			return fail(x, v, "%s: '%s' is not a regular file (expected file:PATH of a file)", path, abs);
		return asprintf(&s->from, "file:%s", abs) < 0 ? moat_error_set(x->err, ENOMEM, "policy") : 0;
	}
	/* The value itself never belongs in a policy: policies are committed,
	 * shared, and copied into the sandbox at /etc/moat/policy.yaml. */
	return fail(x, v, "%s: '%s' (expected env:VARIABLE or file:PATH; the value itself is never written in a policy)",
		    path, moat__startswith(text, "env:") || moat__startswith(text, "file:") ? text : "...");
}

bool moat__secret_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MOAT_SECRET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Header names the gateway writes itself, or that decide how the request
 * is framed or routed: a secret must not set them. */
static bool header_reserved(const char *h)
{
	static const char *const reserved[] = {"host", "content-length", "transfer-encoding", "connection", "upgrade",
					       "te", "trailer", "proxy-authorization", "proxy-connection", "keep-alive"};
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (strcasecmp(h, reserved[i]) == 0)
			return true;
	return false;
}

static bool header_name_ok(const char *h)
{
	if (!h[0] || strlen(h) > 64)
		return false;
	for (const char *c = h; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return false;
	return true;
}

static int secret_inject(const ctx *x, const node *e, const char *path, moat_secret *s, const node **ret_host)
{
	int r = expect_kind(x, e, path, NODE_MAP, "{host, header, format, methods, paths}");
	if (r < 0 || (r = check_map(x, e, path)) < 0)
		return r;
	const node *format = NULL;
	for (size_t i = 0; i + 1 < e->n; i += 2) {
		const node *kn = e->items[i], *v = e->items[i + 1];
		const char *k = kn->value;
		char full[300];
		snprintf(full, sizeof(full), "%s.%s", path, k);
		moat_net_rule tmp = {0};
		if (strcmp(k, "host") == 0) {
			_cleanup_free_ char *h = NULL;
			if ((r = host_pattern(x, v, full, &h)) < 0)
				return r;
			if (moat__strv_push(&s->hosts, h) < 0)
				return moat_error_set(x->err, ENOMEM, "policy");
			*ret_host = v;
		} else if (strcmp(k, "header") == 0) {
			if ((r = set_string(x, v, full, &s->header)) < 0)
				return r;
			if (!header_name_ok(s->header))
				return fail(x, v, "%s: '%s' is not a header name (expected letters, digits, '-' and '_')", full,
					    s->header);
			if (header_reserved(s->header))
				return fail(x, v, "%s: '%s' frames or routes the request and is set by the gateway itself "
						  "(expected a header such as Authorization)", full, s->header);
		} else if (strcmp(k, "format") == 0) {
			if ((r = set_string(x, v, full, &s->format)) < 0)
				return r;
			const char *at = strstr(s->format, "{value}");
			if (!at || strstr(at + 1, "{value}"))
				return fail(x, v, "%s: '%s' (expected {value} exactly once, as in \"Bearer {value}\")", full,
					    s->format);
			if (strlen(s->format) > MOAT_SECRET_FORMAT_MAX)
				return fail(x, v, "%s: longer than %d bytes", full, MOAT_SECRET_FORMAT_MAX);
			format = v;
		} else if (strcmp(k, "methods") == 0) {
			r = rule_methods(x, v, full, &tmp);
			s->methods = TAKE_PTR(tmp.methods);
		} else if (strcmp(k, "paths") == 0) {
			r = rule_paths(x, v, full, &tmp);
			s->paths = TAKE_PTR(tmp.paths);
		} else {
			r = fail(x, kn, "unknown key '%s' in %s (expected one of: host, header, format, methods, paths)", k,
				 path);
		}
		moat__net_rule_clear(&tmp);
		if (r < 0)
			return r;
	}
	if (!*ret_host)
		return fail(x, e, "%s: missing 'host' (expected the host that receives the secret)", path);
	if (format && !s->header)
		return fail(x, format, "%s.format: without 'header' (expected header: NAME with it; without a header "
				       "the placeholder is replaced where it appears)", path);
	return 0;
}

/* One entry of the list form:
 *   - {name, from: env:VAR | file:PATH, env: VAR, inject: {...}, expires, max_uses}
 *   - {name, env: VAR, honeytoken: true} */
static int secret_entry(const ctx *x, const node *e, const char *path, moat_secret *s)
{
	int r = expect_kind(x, e, path, NODE_MAP, "{name, from, env, inject: {host, ...}}");
	if (r < 0 || (r = check_map(x, e, path)) < 0)
		return r;
	const node *name = NULL, *from = NULL, *inject = NULL, *host = NULL, *hosts = NULL, *honey = NULL, *env = NULL;
	const node *expires = NULL, *uses = NULL;
	for (size_t i = 0; i + 1 < e->n; i += 2) {
		const node *kn = e->items[i], *v = e->items[i + 1];
		const char *k = kn->value;
		char full[300];
		snprintf(full, sizeof(full), "%s.%s", path, k);
		if (strcmp(k, "name") == 0) {
			if ((r = set_string(x, v, full, &s->name)) < 0)
				return r;
			if (!moat__secret_name_ok(s->name))
				return fail(x, v, "%s: '%s' (expected 1 to %d letters, digits, '_' or '-')", full, s->name,
					    MOAT_SECRET_NAME_MAX);
			name = v;
		} else if (strcmp(k, "from") == 0) {
			if ((r = secret_from(x, v, full, s)) < 0)
				return r;
			from = v;
		} else if (strcmp(k, "env") == 0) {
			if ((r = set_string(x, v, full, &s->env)) < 0)
				return r;
			if (!is_env_name(s->env, strlen(s->env)))
				return fail(x, v, "%s: '%s' is not a variable name (expected letters, digits and '_')", full,
					    s->env);
			env = v;
		} else if (strcmp(k, "inject") == 0) {
			if ((r = secret_inject(x, v, full, s, &host)) < 0)
				return r;
			inject = v;
		} else if (strcmp(k, "hosts") == 0) {
			if ((r = expect_list(x, v, full)) < 0)
				return r;
			if (v->n == 0)
				return fail(x, v, "%s: empty list (expected the hosts that may receive the secret)", full);
			for (size_t j = 0; j < v->n; j++) {
				_cleanup_free_ char *h = NULL;
				if ((r = host_pattern(x, v->items[j], full, &h)) < 0)
					return r;
				if (moat__strv_push(&s->hosts, h) < 0)
					return moat_error_set(x->err, ENOMEM, "policy");
			}
			hosts = v;
		} else if (strcmp(k, "expires") == 0) {
			moat_error inner = {0};
			if ((r = expect_kind(x, v, full, NODE_SCALAR, "a duration such as 2h")) < 0)
				return r;
			if (moat_parse_duration_ms(v->value, &s->expires_ms, &inner) < 0)
				return fail_wrap(x, v, full, &inner);
			if (s->expires_ms == 0)
				return fail(x, v, "%s: 0 would expire the secret before any use (expected a positive duration, "
						  "or no 'expires' key)", full);
			expires = v;
		} else if (strcmp(k, "max_uses") == 0) {
			if ((r = get_uint(x, v, full, UINT32_MAX, &s->max_uses)) < 0)
				return r;
			if (s->max_uses == 0)
				return fail(x, v, "%s: 0 would forbid every use (expected a positive number, or no "
						  "'max_uses' key)", full);
			uses = v;
		} else if (strcmp(k, "honeytoken") == 0) {
			if ((r = get_bool(x, v, full, &s->honeytoken)) < 0)
				return r;
			honey = v;
		} else {
			return fail(x, kn, "unknown key '%s' in %s (expected one of: name, from, env, inject, hosts, "
					   "expires, max_uses, honeytoken)", k, path);
		}
	}
	if (!name)
		return fail(x, e, "%s: missing 'name' (expected name: NAME)", path);
	if (s->honeytoken) {
		/* A decoy has no real value and goes nowhere: its only use is
		 * to be noticed when it is used. */
		const node *extra = from ? from : inject ? inject : hosts ? hosts : expires ? expires : uses;
		if (extra)
			return fail(x, extra, "%s: a honeytoken has no value and is sent nowhere (expected only name, env "
					      "and honeytoken)", path);
		if (!env)
			return fail(x, honey, "%s: a honeytoken without 'env' is never seen (expected env: VARIABLE)", path);
		return 0;
	}
	if (!from)
		return fail(x, e, "%s: missing 'from' (expected from: env:VARIABLE or file:PATH)", path);
	if (inject && hosts)
		return fail(x, hosts, "%s: both 'hosts' and 'inject.host' (expected one of them)", path);
	if (!inject && !hosts)
		return fail(x, e, "%s: missing 'inject' (expected inject: {host: HOST, ...})", path);
	/* Without a variable the sandbox never sees the placeholder, so only
	 * a header the gateway sets itself can carry the value. */
	if (!env && !s->header)
		return fail(x, e, "%s: neither 'env' nor 'inject.header' (expected env: VARIABLE to hold the placeholder, "
				  "or inject.header for the gateway to set)", path);
	(void)host;
	return 0;
}

/* Every name and every variable once: events and placeholders name the
 * secret, and one variable cannot hold two placeholders. */
static int secret_unique(const ctx *x, const node *at, const char *path)
{
	const moat_policy *p = x->p;
	const moat_secret *s = &p->secrets[p->n_secrets - 1];
	for (size_t i = 0; i + 1 < p->n_secrets; i++) {
		if (strcmp(p->secrets[i].name, s->name) == 0)
			return fail(x, at, "%s: the secret %s is listed twice (expected each name once)", path, s->name);
		if (s->env && p->secrets[i].env && strcmp(p->secrets[i].env, s->env) == 0)
			return fail(x, at, "%s: the variable %s holds the secret %s already (expected each variable once)",
				    path, s->env, p->secrets[i].name);
	}
	return 0;
}

static moat_secret *secret_push(const ctx *x)
{
	moat_policy *p = x->p;
	moat_secret *ns = realloc(p->secrets, (p->n_secrets + 1) * sizeof(*ns));
	if (!ns)
		return NULL;
	p->secrets = ns;
	moat_secret *s = &p->secrets[p->n_secrets++];
	*s = (moat_secret){0};
	return s;
}

/* The short form, NAME: {from, hosts}, is the list form with the name as
 * the variable: kept because policies written before the list form use it. */
static int secrets_map(const ctx *x, const node *v, const char *path)
{
	int r = check_map(x, v, path);
	if (r < 0)
		return r;
	moat_policy *p = x->p;
	for (size_t i = 0; i + 1 < v->n; i += 2) {
		const node *kn = v->items[i], *e = v->items[i + 1];
		char full[256];
		snprintf(full, sizeof(full), "%s.%s", path, kn->value);
		if (!is_env_name(kn->value, strlen(kn->value)) || !moat__secret_name_ok(kn->value))
			return fail(x, kn, "%s: '%s' is not a variable name (expected letters, digits and '_')", path,
				    kn->value);
		if (p->n_secrets >= MOAT_POLICY_MAX_SECRETS)
			return fail(x, kn, "%s: too many secrets (at most %d)", path, MOAT_POLICY_MAX_SECRETS);
		moat_secret *s = secret_push(x);
		if (!s || !(s->name = strdup(kn->value)) || !(s->env = strdup(kn->value)))
			return moat_error_set(x->err, ENOMEM, "policy");
		if ((r = expect_kind(x, e, full, NODE_MAP, "{from: env:VAR | file:PATH, hosts: [...]}")) < 0 ||
		    (r = check_map(x, e, full)) < 0)
			return r;
		const node *from = NULL, *hosts = NULL;
		for (size_t j = 0; j + 1 < e->n; j += 2) {
			const char *key = e->items[j]->value;
			if (strcmp(key, "from") == 0)
				from = e->items[j + 1];
			else if (strcmp(key, "hosts") == 0)
				hosts = e->items[j + 1];
			else
				return fail(x, e->items[j], "unknown key '%s' in %s (expected one of: from, hosts)", key,
					    full);
		}
		if (!from || !hosts)
			return fail(x, e, "%s: missing '%s' (expected {from: env:VAR | file:PATH, hosts: [...]})", full,
				    from ? "hosts" : "from");
		char sub[300];
		snprintf(sub, sizeof(sub), "%s.from", full);
		if ((r = secret_from(x, from, sub, s)) < 0)
			return r;
		snprintf(sub, sizeof(sub), "%s.hosts", full);
		if ((r = expect_list(x, hosts, sub)) < 0)
			return r;
		/* A secret bound to no host could never be used, and an empty
		 * list is more likely a mistake than an intent. */
		if (hosts->n == 0)
			return fail(x, hosts, "%s: empty list (expected the hosts that may receive the secret)", sub);
		for (size_t j = 0; j < hosts->n; j++) {
			_cleanup_free_ char *h = NULL;
			if ((r = host_pattern(x, hosts->items[j], sub, &h)) < 0)
				return r;
			if (moat__strv_push(&s->hosts, h) < 0)
				return moat_error_set(x->err, ENOMEM, "policy");
		}
		if ((r = secret_unique(x, kn, path)) < 0)
			return r;
	}
	return 0;
}

static int k_secrets(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	if (v->kind == NODE_MAP && !is_null(v))
		return secrets_map(x, v, path);
	int r = expect_kind(x, v, path, NODE_SEQ, "a list of {name, from, env, inject}");
	if (r < 0 || (r = expect_list(x, v, path)) < 0)
		return r;
	for (size_t i = 0; i < v->n; i++) {
		char full[256];
		snprintf(full, sizeof(full), "%s[%zu]", path, i);
		if (x->p->n_secrets >= MOAT_POLICY_MAX_SECRETS)
			return fail(x, v->items[i], "%s: too many secrets (at most %d)", path, MOAT_POLICY_MAX_SECRETS);
		moat_secret *s = secret_push(x);
		if (!s)
			return moat_error_set(x->err, ENOMEM, "policy");
		if ((r = secret_entry(x, v->items[i], full, s)) < 0 || (r = secret_unique(x, v->items[i], full)) < 0)
			return r;
	}
	return 0;
}

static int env_add(const ctx *x, const node *n, const char *path, const char *name, size_t nlen, const char *value)
{
	if (!is_env_name(name, nlen))
		return fail(x, n, "%s: '%.*s' is not a variable name (expected letters, digits and '_')", path, (int)nlen,
			    name);
	for (char **e = x->p->env; e && *e; e++) {
		size_t el = strcspn(*e, "=");
		if (el == nlen && strncmp(*e, name, nlen) == 0)
			return fail(x, n, "%s: %.*s is set twice (expected each variable once)", path, (int)nlen, name);
	}
	if (moat__strv_length(x->p->env) >= MOAT_MAX_ENV)
		return fail(x, n, "%s: too many variables (at most %d)", path, MOAT_MAX_ENV);
	_cleanup_free_ char *kv = NULL;
	if (value ? asprintf(&kv, "%.*s=%s", (int)nlen, name, value) < 0 : !(kv = strndup(name, nlen)))
		return moat_error_set(x->err, ENOMEM, "policy");
	return moat__strv_push(&x->p->env, kv) < 0 ? moat_error_set(x->err, ENOMEM, "policy") : 0;
}

static int k_env(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r;
	if (v->kind == NODE_MAP) {
		if ((r = check_map(x, v, path)) < 0)
			return r;
		for (size_t i = 0; i + 1 < v->n; i += 2) {
			const node *kn = v->items[i], *vn = v->items[i + 1];
			/* An empty value must be written "" so that a forgotten
			 * value is not read as the empty string. */
			if (vn->kind != NODE_SCALAR || is_null(vn))
				return fail(x, vn, "%s.%s: got %s (expected a string; write \"\" for an empty value, or "
						   "use the list form to pass the caller's value)", path, kn->value,
					    kind_name(vn));
			if ((r = env_add(x, kn, path, kn->value, strlen(kn->value), vn->value)) < 0)
				return r;
		}
		return 0;
	}
	if ((r = expect_list(x, v, path)) < 0) {
		return fail(x, v, "%s: got %s (expected a mapping NAME: VALUE or a list of NAME[=VALUE])", path,
			    kind_name(v));
	}
	for (size_t i = 0; i < v->n; i++) {
		const char *s;
		if ((r = get_string(x, v->items[i], path, &s)) < 0)
			return r;
		const char *eq = strchr(s, '=');
		if ((r = env_add(x, v->items[i], path, s, eq ? (size_t)(eq - s) : strlen(s), eq ? eq + 1 : NULL)) < 0)
			return r;
	}
	return 0;
}

/* ---- limits ------------------------------------------------------------ */

#define LIMIT(k, kind, field, bit) {k, kind, offsetof(moat_limits, field), bit}
const moat__limit_desc moat__limit_table[] = {
	LIMIT("wall", MOAT_UNIT_DURATION, wall_ms, MOAT_LIMIT_WALL),
	LIMIT("cpu_time", MOAT_UNIT_DURATION, cpu_ms, MOAT_LIMIT_CPU_TIME),
	LIMIT("cpu", MOAT_UNIT_CPUS, cpus_milli, MOAT_LIMIT_CPU),
	LIMIT("memory", MOAT_UNIT_SIZE, memory_bytes, MOAT_LIMIT_MEMORY),
	LIMIT("pids", MOAT_UNIT_COUNT, pids, MOAT_LIMIT_PIDS),
	LIMIT("output", MOAT_UNIT_SIZE, output_bytes, MOAT_LIMIT_OUTPUT),
	LIMIT("tmp", MOAT_UNIT_SIZE, tmp_bytes, MOAT_LIMIT_TMP),
	LIMIT("disk", MOAT_UNIT_SIZE, disk_bytes, MOAT_LIMIT_DISK),
	LIMIT("inodes", MOAT_UNIT_COUNT, disk_inodes, MOAT_LIMIT_INODES),
	LIMIT("files", MOAT_UNIT_COUNT, files, MOAT_LIMIT_FILES),
	LIMIT("fsize", MOAT_UNIT_SIZE, fsize, MOAT_LIMIT_FSIZE),
};
const size_t moat__limit_table_len = ELEMENTSOF(moat__limit_table);

static int k_limits(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_MAP, "a mapping");
	if (r < 0 || (r = check_map(x, v, path)) < 0)
		return r;
	for (size_t i = 0; i + 1 < v->n; i += 2) {
		const node *kn = v->items[i], *vn = v->items[i + 1];
		const moat__limit_desc *d = NULL;
		for (size_t j = 0; j < ELEMENTSOF(moat__limit_table); j++)
			if (strcmp(moat__limit_table[j].key, kn->value) == 0)
				d = &moat__limit_table[j];
		if (!d)
			return fail(x, kn, "unknown key 'limits.%s' in limits (expected one of: wall, cpu_time, cpu, memory, "
					   "pids, output, tmp, disk, inodes, files, fsize)", kn->value);
		char full[128];
		snprintf(full, sizeof(full), "%s.%s", path, d->key);
		if ((r = expect_kind(x, vn, full, NODE_SCALAR, "a value")) < 0)
			return r;
		uint64_t val = 0;
		moat_error inner = {0};
		r = 0;
		switch (d->kind) {
		case MOAT_UNIT_DURATION: r = moat_parse_duration_ms(vn->value, &val, &inner); break;
		case MOAT_UNIT_SIZE: r = moat_parse_size(vn->value, &val, &inner); break;
		case MOAT_UNIT_COUNT: r = moat_parse_count(vn->value, &val, &inner); break;
		default:
			if (strcmp(vn->value, "unlimited") == 0)
				val = MOAT_UNLIMITED;
			else
				r = moat_parse_cpus_milli(vn->value, &val, &inner);
			break;
		}
		if (r < 0)
			return fail_wrap(x, vn, full, &inner);
		if (val == 0 && (d->bit & (MOAT_LIMIT_WALL | MOAT_LIMIT_PIDS | MOAT_LIMIT_MEMORY | MOAT_LIMIT_CPU_TIME)))
			return fail(x, vn, "%s: 0 would stop anything from running (expected a positive value or "
					   "unlimited)", full);
		/* The same range as the flag's (config.c), with its message. */
		if (moat_limit_check(d->offset, val, &inner) < 0)
			return fail(x, vn, "%s", inner.msg);
		*moat__limit_field(&x->p->limits, d) = val;
		x->p->limits_set |= d->bit;
	}
	return 0;
}

/* ---- audit, require, top level ----------------------------------------- */

static int k_audit_log(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return host_path_field(x, v, path, PATH_ANY, &x->p->audit_log);
}

static int k_audit_files(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return get_bool(x, v, path, &x->p->audit_files);
}

static int k_audit_record(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	/* true, false, or the file to record to (which implies true). */
	if (v->kind == NODE_SCALAR && v->plain && (strcmp(v->value, "true") == 0 || strcmp(v->value, "false") == 0))
		return get_bool(x, v, path, &x->p->record);
	x->p->record = true;
	return host_path_field(x, v, path, PATH_ANY, &x->p->record_path);
}

static int k_audit_max_size(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_SCALAR, "a size");
	if (r < 0)
		return r;
	uint64_t val = 0;
	moat_error inner = {0};
	if (moat_parse_size(v->value, &val, &inner) < 0)
		return fail_wrap(x, v, path, &inner);
	if (val < MOAT_AUDIT_MIN_MAX_SIZE || val > MOAT_AUDIT_MAX_MAX_SIZE)
		return fail(x, v, "%s: '%s' is out of range (expected 64K to 1T)", path, v->value);
	x->p->audit_max_size = val;
	return 0;
}

static const key_handler audit_keys[] = {
	{"log", k_audit_log}, {"files", k_audit_files}, {"record", k_audit_record}, {"max_size", k_audit_max_size}};

static int k_audit(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return walk_map(x, v, path, audit_keys, ELEMENTSOF(audit_keys));
}

/* approvals.timeout: a duration above zero, at most a day (a held
 * request keeps a connection open that long). */
static int k_approvals_timeout(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_SCALAR, "a duration");
	if (r < 0)
		return r;
	uint64_t val = 0;
	moat_error inner = {0};
	if (moat_parse_duration_ms(v->value, &val, &inner) < 0)
		return fail_wrap(x, v, path, &inner);
	if (val == 0 || val > 24ull * 3600 * 1000)
		return fail(x, v, "%s: '%s' is out of range (expected a duration above zero, at most 24h)", path, v->value);
	x->p->approvals_timeout_ms = val;
	return 0;
}

static int k_approvals_notify(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_kind(x, v, path, NODE_SCALAR, "a command");
	if (r < 0)
		return r;
	if (!v->value[0] || strlen(v->value) > 4096)
		return fail(x, v, "%s: expected a command of 1 to 4096 bytes", path);
	if (moat__has_controls(v->value, strlen(v->value)))
		return fail(x, v, "%s: the command holds a control character", path);
	free(x->p->approvals_notify);
	x->p->approvals_notify = strdup(v->value);
	return x->p->approvals_notify ? 0 : fail(x, v, "%s: out of memory", path);
}

static const key_handler approvals_keys[] = {{"timeout", k_approvals_timeout}, {"notify", k_approvals_notify}};

static int k_approvals(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return walk_map(x, v, path, approvals_keys, ELEMENTSOF(approvals_keys));
}

static const char *const layer_names[] = {"userns", "seccomp", "landlock", "cgroup", "netns"};

const char *moat_layer_to_string(moat_layer l)
{
	for (size_t i = 0; i < ELEMENTSOF(layer_names); i++)
		if (l == (1u << i))
			return layer_names[i];
	return NULL;
}

static int k_require(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	int r = expect_list(x, v, path);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v->n; i++) {
		const char *s;
		if ((r = get_string(x, v->items[i], path, &s)) < 0)
			return r;
		size_t j = 0;
		while (j < ELEMENTSOF(layer_names) && strcmp(layer_names[j], s) != 0)
			j++;
		if (j == ELEMENTSOF(layer_names))
			return fail(x, v->items[i], "%s: '%s' is not a layer (expected userns, seccomp, landlock, cgroup "
					    "or netns)", path, s);
		x->p->require |= 1u << j;
	}
	return 0;
}

static int k_version(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	uint64_t ver;
	int r = get_uint(x, v, path, 1000, &ver);
	if (r < 0)
		return r;
	if (ver != 1)
		return fail(x, v, "version %llu is not supported (expected 1)", (unsigned long long)ver);
	return 0;
}

static int k_name(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return set_string(x, v, path, &x->p->name);
}

static int k_tty(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return get_bool(x, v, path, &x->p->tty);
}

static int k_stdin(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	return host_path_field(x, v, path, PATH_FILE, &x->p->stdin_path);
}

static int k_result(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	if (v->kind == NODE_SCALAR && strcmp(v->value, "-") == 0)
		return set_string(x, v, path, &x->p->result_path);
	return host_path_field(x, v, path, PATH_ANY, &x->p->result_path);
}

static int k_hostname(const ctx *x, const node *k, const node *v, const char *path)
{
	(void)k;
	const char *s;
	int r = get_string(x, v, path, &s);
	if (r < 0)
		return r;
	moat_error inner = {0};
	if (strlen(s) > 64 || strchr(s, '.') || moat_host_name_check(s, &inner) < 0)
		return fail(x, v, "%s: '%s' (expected one label of letters, digits and '-', at most 64 characters)", path,
			    s);
	return set_string(x, v, path, &x->p->hostname);
}

static const key_handler top_keys[] = {
	{"version", k_version}, {"name", k_name},       {"filesystem", k_filesystem}, {"exec", k_exec},
	{"network", k_network}, {"secrets", k_secrets}, {"env", k_env},               {"limits", k_limits},
	{"audit", k_audit},     {"require", k_require}, {"tty", k_tty},               {"stdin", k_stdin},
	{"result", k_result},   {"hostname", k_hostname}, {"approvals", k_approvals},
};

/* ---- life cycle -------------------------------------------------------- */

moat_policy *moat_policy_new(void)
{
	moat_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	moat_limits_default_code(&p->limits);
	p->net = MOAT_NET_NONE;
	p->workspace = MOAT_WORKSPACE_EPHEMERAL;
	return p;
}

static void rules_free(moat_net_rules *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		moat__net_rule_clear(&rs->v[i]);
	free(rs->v);
	*rs = (moat_net_rules){0};
}

void moat_policy_free(moat_policy *p)
{
	if (!p)
		return;
	free(p->source);
	free(p->profile);
	free(p->path);
	free(p->dir);
	free(p->name);
	for (size_t i = 0; i < p->n_binds; i++) {
		free(p->binds[i].src);
		free(p->binds[i].dst);
	}
	free(p->binds);
	free(p->out_dir);
	free(p->cwd);
	moat__strv_free(p->exec_allow);
	moat__exec_rules_free(p->exec_approve, p->n_exec_approve);
	rules_free(&p->allow);
	rules_free(&p->deny);
	rules_free(&p->approve);
	moat__strv_free(p->allow_private);
	for (size_t i = 0; i < p->n_hosts; i++) {
		free(p->hosts[i].name);
		free(p->hosts[i].address);
	}
	free(p->hosts);
	free(p->resolver);
	for (size_t i = 0; i < p->n_secrets; i++) {
		moat__secret_clear(&p->secrets[i]);
	}
	free(p->secrets);
	moat__strv_free(p->env);
	free(p->audit_log);
	free(p->approvals_notify);
	free(p->record_path);
	free(p->result_path);
	free(p->stdin_path);
	free(p->hostname);
	free(p);
}

static bool dup_str(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

static bool dup_strv(char ***dst, char *const *src)
{
	*dst = src ? moat__strv_copy(src) : NULL;
	return !src || *dst;
}

bool moat__net_rule_copy(moat_net_rule *d, const moat_net_rule *s)
{
	*d = (moat_net_rule){.n_ports = s->n_ports};
	bool ok = dup_str(&d->host, s->host) && dup_strv(&d->methods, s->methods) && dup_strv(&d->paths, s->paths);
	if (ok && s->n_ports) {
		d->ports = malloc(s->n_ports * sizeof(uint16_t));
		ok = d->ports != NULL;
		if (ok)
			memcpy(d->ports, s->ports, s->n_ports * sizeof(uint16_t));
	}
	if (!ok)
		moat__net_rule_clear(d);
	return ok;
}

bool moat__net_rules_append(moat_net_rules *d, const moat_net_rule *r)
{
	moat_net_rule *nv = realloc(d->v, (d->n + 1) * sizeof(*nv));
	if (!nv)
		return false;
	d->v = nv;
	if (!moat__net_rule_copy(&d->v[d->n], r))
		return false;
	d->n++;
	return true;
}

static bool rules_copy(moat_net_rules *d, const moat_net_rules *s)
{
	*d = (moat_net_rules){0};
	for (size_t i = 0; i < s->n; i++)
		if (!moat__net_rules_append(d, &s->v[i]))
			return false;
	return true;
}

void moat__secret_clear(moat_secret *s)
{
	free(s->name);
	free(s->from);
	free(s->env);
	moat__strv_free(s->hosts);
	free(s->header);
	free(s->format);
	moat__strv_free(s->methods);
	moat__strv_free(s->paths);
	*s = (moat_secret){0};
}

bool moat__secret_copy(moat_secret *d, const moat_secret *s)
{
	*d = (moat_secret){.expires_ms = s->expires_ms, .max_uses = s->max_uses, .honeytoken = s->honeytoken};
	return dup_str(&d->name, s->name) && dup_str(&d->from, s->from) && dup_str(&d->env, s->env) &&
	       dup_strv(&d->hosts, s->hosts) && dup_str(&d->header, s->header) && dup_str(&d->format, s->format) &&
	       dup_strv(&d->methods, s->methods) && dup_strv(&d->paths, s->paths);
}

moat_policy *moat_policy_copy(const moat_policy *s)
{
	_cleanup_policy_ moat_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->workspace = s->workspace;
	p->net = s->net;
	p->limits = s->limits;
	p->limits_set = s->limits_set;
	p->budget = s->budget;
	p->audit_files = s->audit_files;
	p->audit_max_size = s->audit_max_size;
	p->approvals_timeout_ms = s->approvals_timeout_ms;
	p->record = s->record;
	p->require = s->require;
	p->tty = s->tty;
	p->exec_workspace = s->exec_workspace;
	p->exec_delegate = s->exec_delegate;
	if (!dup_str(&p->source, s->source) || !dup_str(&p->profile, s->profile) || !dup_str(&p->path, s->path) ||
	    !dup_str(&p->dir, s->dir) || !dup_str(&p->name, s->name) ||
	    !dup_str(&p->out_dir, s->out_dir) || !dup_str(&p->cwd, s->cwd) || !dup_strv(&p->exec_allow, s->exec_allow) ||
	    !dup_strv(&p->allow_private, s->allow_private) || !dup_str(&p->resolver, s->resolver) ||
	    !dup_strv(&p->env, s->env) || !dup_str(&p->audit_log, s->audit_log) ||
	    !dup_str(&p->record_path, s->record_path) || !dup_str(&p->result_path, s->result_path) ||
	    !dup_str(&p->stdin_path, s->stdin_path) || !dup_str(&p->hostname, s->hostname) ||
	    !dup_str(&p->approvals_notify, s->approvals_notify))
		return NULL;
	if (s->n_binds) {
		p->binds = calloc(s->n_binds, sizeof(*p->binds));
		if (!p->binds)
			return NULL;
		for (; p->n_binds < s->n_binds; p->n_binds++) {
			moat_bind *b = &p->binds[p->n_binds];
			b->flags = s->binds[p->n_binds].flags;
			if (!dup_str(&b->src, s->binds[p->n_binds].src) || !dup_str(&b->dst, s->binds[p->n_binds].dst)) {
				p->n_binds++;
				return NULL;
			}
		}
	}
	if (!rules_copy(&p->allow, &s->allow) || !rules_copy(&p->deny, &s->deny) ||
	    !rules_copy(&p->approve, &s->approve))
		return NULL;
	if (moat__exec_rules_copy(s->exec_approve, s->n_exec_approve, &p->exec_approve) < 0)
		return NULL;
	p->n_exec_approve = s->n_exec_approve;
	if (s->n_hosts) {
		p->hosts = calloc(s->n_hosts, sizeof(*p->hosts));
		if (!p->hosts)
			return NULL;
		for (; p->n_hosts < s->n_hosts; p->n_hosts++) {
			moat_host_entry *h = &p->hosts[p->n_hosts];
			if (!dup_str(&h->name, s->hosts[p->n_hosts].name) ||
			    !dup_str(&h->address, s->hosts[p->n_hosts].address)) {
				p->n_hosts++;
				return NULL;
			}
		}
	}
	if (s->n_secrets) {
		p->secrets = calloc(s->n_secrets, sizeof(*p->secrets));
		if (!p->secrets)
			return NULL;
		for (; p->n_secrets < s->n_secrets; p->n_secrets++) {
			moat_secret *d = &p->secrets[p->n_secrets];
			const moat_secret *ss = &s->secrets[p->n_secrets];
			if (!moat__secret_copy(d, ss)) {
				p->n_secrets++;
				return NULL;
			}
		}
	}
	return TAKE_PTR(p);
}

/* ---- entry points ------------------------------------------------------ */

static int parse_policy(const char *buf, size_t len, const char *source, const char *dir, const char *home,
			bool check_paths, bool no_position, moat_policy **ret, moat_error *err)
{
	if (!source)
		source = "policy";
	if (len > MOAT_POLICY_MAX_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "%s: larger than %u bytes", source, MOAT_POLICY_MAX_BYTES);
	_cleanup_policy_ moat_policy *p = moat_policy_new();
	if (!p || !dup_str(&p->source, source) || !dup_str(&p->dir, dir))
		return moat_error_set(err, ENOMEM, "policy");
	ctx x = {.source = source,
		 .dir = dir,
		 .home = home,
		 .p = p,
		 .err = err,
		 .no_stat = !check_paths,
		 .no_position = no_position};
	_cleanup_(node_freep) node *root = NULL;
	int r = parse_tree(&x, buf, len, &root);
	if (r < 0)
		return r;
	if (root->kind != NODE_MAP)
		return fail(&x, root, "the policy is %s (expected a mapping starting with version: 1)", kind_name(root));
	if ((r = check_map(&x, root, "")) < 0)
		return r;
	if (!map_get(root, "version"))
		return fail(&x, root, "missing key 'version' (expected version: 1 first, so that later formats are "
				      "never misread)");
	r = walk_map(&x, root, "", top_keys, ELEMENTSOF(top_keys));
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int moat__policy_parse_ex(const char *buf, size_t len, const char *source, const char *dir, const char *home,
			  bool check_paths, moat_policy **ret, moat_error *err)
{
	return parse_policy(buf, len, source, dir, home, check_paths, false, ret, err);
}

int moat__policy_check(const moat_policy *p, moat_error *err)
{
	/* The effective policy written out and read back by the same parser
	 * as a policy file: a value that came from a flag meets exactly the
	 * checks, and the message, of the same field in a file. Host paths
	 * are checked where they are opened. */
	_cleanup_free_ char *yaml = moat_policy_to_yaml(p);
	if (!yaml)
		return moat_error_set(err, ENOMEM, "policy");
	_cleanup_policy_ moat_policy *q = NULL;
	return parse_policy(yaml, strlen(yaml), "flags", "/", NULL, false, true, &q, err);
}

int moat_policy_parse(const char *buf, size_t len, const char *source, const char *dir, const char *home,
		      moat_policy **ret, moat_error *err)
{
	return moat__policy_parse_ex(buf, len, source, dir, home, true, ret, err);
}

int moat__policy_load_file_ex(const char *path, bool check_paths, moat_policy **ret, moat_error *err)
{
	_cleanup_close_ int fd = moat__hostpath_open("policy", path, O_RDONLY, 0, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "policy %s", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT, "policy %s: not a regular file", path);
	if (st.st_size > MOAT_POLICY_MAX_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "policy %s: larger than %u bytes", path, MOAT_POLICY_MAX_BYTES);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "policy %s", path);
	ssize_t n = moat__read_all(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return moat_error_set(err, (int)n, "policy %s", path);
	buf[n] = '\0';

	/* Relative paths in the policy start at the policy's own folder,
	 * wherever moat is run from. */
	_cleanup_free_ char *cwd = getcwd(NULL, 0), *abs = NULL;
	moat_error inner = {0};
	if (moat_path_resolve(path, cwd, NULL, &abs, &inner) < 0)
		return moat_error_set(err, MOAT_EINPUT, "policy %s: %s", path, inner.msg);
	char *slash = strrchr(abs, '/');
	if (slash == abs)
		slash[1] = '\0';
	else
		*slash = '\0';
	return moat__policy_parse_ex(buf, (size_t)n, path, abs, getenv("HOME"), check_paths, ret, err);
}

int moat_policy_load_file(const char *path, moat_policy **ret, moat_error *err)
{
	return moat__policy_load_file_ex(path, true, ret, err);
}
