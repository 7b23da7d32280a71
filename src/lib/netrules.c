/* The egress allowlist and its decisions. See netrules.h. */
#include "netrules.h"

#include "hostglob.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

typedef enum host_kind {
	HOST_EXACT,  /* one name or one address */
	HOST_SUFFIX, /* "*.example.com": any name below example.com */
	HOST_ANY,    /* "*": every host, addresses included */
} host_kind;

typedef struct rule {
	host_kind kind;
	moat_host host; /* the name, or the whole pattern "*.suffix" */
	uint16_t ports[MOAT_NETRULE_MAX_PORTS];
	size_t n_ports;
	bool any_port; /* a deny or approve rule that names no ports */
	char **methods; /* upper case */
	size_t n_methods;
	char **paths;   /* normalised; a trailing '/' makes a prefix */
	size_t n_paths;
	moat_net_action action;
} rule;

struct moat_netrules_builder {
	rule *rules;
	size_t n_rules;
	moat_cidr *allow;
	size_t n_allow;
	moat_net_action def;
};

struct moat_netrules {
	atomic_uint refs;
	rule *rules;
	size_t n_rules;
	moat_cidr *allow;
	size_t n_allow;
	moat_net_action def;
};

static const char *const action_names[_MOAT_NET_ACTION_MAX] = {
	[MOAT_NET_DENY] = "deny",
	[MOAT_NET_ALLOW] = "allow",
	[MOAT_NET_APPROVE] = "approve",
};

const char *moat_net_action_to_string(moat_net_action a)
{
	if (a < 0 || a >= _MOAT_NET_ACTION_MAX)
		return "invalid";
	return action_names[a];
}

bool moat_netrule_portless_is_any(moat_net_action a)
{
	/* A deny or an approval is a promise about a host: "secret.example is
	 * never reached", "a person sees every request to pay.example". Either
	 * promise broken by a change of port is no promise, so without ports
	 * they hold on every port. An allow is the opposite, a grant, and a
	 * grant without ports stays as narrow as the web: 80 and 443. */
	return a != MOAT_NET_ALLOW;
}

moat_net_action moat_net_action_from_string(const char *s)
{
	for (int i = 0; s && i < _MOAT_NET_ACTION_MAX; i++)
		if (strcmp(s, action_names[i]) == 0)
			return (moat_net_action)i;
	return _MOAT_NET_ACTION_INVALID;
}

static void rule_clear(rule *r)
{
	for (size_t i = 0; i < r->n_methods; i++)
		free(r->methods[i]);
	free(r->methods);
	for (size_t i = 0; i < r->n_paths; i++)
		free(r->paths[i]);
	free(r->paths);
	memset(r, 0, sizeof(*r));
}

static void rules_free(rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rule_clear(&rules[i]);
	free(rules);
}

moat_netrules_builder *moat_netrules_builder_new(void)
{
	moat_netrules_builder *b = calloc(1, sizeof(*b));
	if (b)
		b->def = MOAT_NET_DENY;
	return b;
}

void moat_netrules_builder_free(moat_netrules_builder *b)
{
	if (!b)
		return;
	rules_free(b->rules, b->n_rules);
	free(b->allow);
	free(b);
}

void moat_netrules_builder_set_default(moat_netrules_builder *b, moat_net_action a)
{
	if (a >= 0 && a < _MOAT_NET_ACTION_MAX)
		b->def = a;
}

int moat_netrules_builder_allow_private(moat_netrules_builder *b, const char *cidr, moat_error *err)
{
	moat_cidr c;
	int r;

	if (b->n_allow >= MOAT_NETRULES_MAX_ALLOW_PRIVATE)
		return moat_error_set(err, MOAT_EINPUT, "network.allow_private has more than %d ranges",
				      MOAT_NETRULES_MAX_ALLOW_PRIVATE);
	r = moat_cidr_parse(cidr, &c, err);
	if (r < 0)
		return moat_error_wrap(err, "network.allow_private");
	moat_cidr *n = realloc(b->allow, (b->n_allow + 1) * sizeof(*n));
	if (!n)
		return moat_error_set(err, ENOMEM, "network.allow_private");
	b->allow = n;
	b->allow[b->n_allow++] = c;
	return 0;
}

static bool method_token_ok(const char *m)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";
	if (!*m || strlen(m) > 32)
		return false;
	for (const char *p = m; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      strchr(tchar, *p)))
			return false;
	return true;
}

/* Patterns go through the same normalisation as the hosts they are matched
 * against (case, trailing dot, IDNA), then through hostglob's rules for what
 * a pattern may cover. */
static int parse_host_pattern(const char *pat, rule *r, moat_error *err)
{
	size_t len = strlen(pat);
	/* "*" is for the command line (--allow-host '*', with the SSRF guard
	 * still in force); hostglob refuses it in policy files, which say
	 * "default: allow" instead. */
	if (strcmp(pat, "*") == 0) {
		r->kind = HOST_ANY;
		return 0;
	}
	if (len >= 2 && pat[0] == '*' && pat[1] == '.') {
		moat_host suffix;
		if (len == 2 || moat_host_normalize(pat + 2, len - 2, &suffix, err) < 0)
			return moat_error_set(err, MOAT_EINPUT, "host pattern \"%s\" is not \"*.\" and a host name", pat);
		if (suffix.is_literal)
			return moat_error_set(err, MOAT_EINPUT,
					      "host pattern \"%s\": a wildcard cannot cover an IP address", pat);
		memset(&r->host, 0, sizeof(r->host));
		if (snprintf(r->host.name, sizeof(r->host.name), "*.%s", suffix.name) >= (int)sizeof(r->host.name))
			return moat_error_set(err, MOAT_EINPUT, "host pattern \"%s\" is too long", pat);
		if (moat_host_glob_check(r->host.name, err) < 0)
			return moat_error_wrap(err, "host pattern \"%s\"", pat);
		r->kind = HOST_SUFFIX;
		return 0;
	}
	if (memchr(pat, '*', len)) {
		if (moat_host_glob_check(pat, err) < 0)
			return moat_error_wrap(err, "host pattern \"%s\"", pat);
		return moat_error_set(err, MOAT_EINPUT, "host pattern \"%s\" is not valid", pat);
	}
	if (moat_host_normalize(pat, len, &r->host, err) < 0)
		return moat_error_wrap(err, "host pattern \"%s\"", pat);
	r->kind = HOST_EXACT;
	return 0;
}

int moat_netrules_builder_add(moat_netrules_builder *b, const moat_netrule_spec *spec, moat_error *err)
{
	rule r = { 0 };
	int ret;

	if (b->n_rules >= MOAT_NETRULES_MAX)
		return moat_error_set(err, MOAT_EINPUT, "more than %d network rules", MOAT_NETRULES_MAX);
	if (!spec->host || !*spec->host)
		return moat_error_set(err, MOAT_EINPUT, "network rule without a host");
	if (spec->action < 0 || spec->action >= _MOAT_NET_ACTION_MAX)
		return moat_error_set(err, MOAT_EINPUT, "network rule for %s has an invalid action", spec->host);
	if (spec->n_ports > MOAT_NETRULE_MAX_PORTS || spec->n_methods > MOAT_NETRULE_MAX_METHODS ||
	    spec->n_paths > MOAT_NETRULE_MAX_PATHS)
		return moat_error_set(err, MOAT_EINPUT, "network rule for %s has too many ports, methods or paths",
				      spec->host);
	ret = parse_host_pattern(spec->host, &r, err);
	if (ret < 0)
		return ret;
	r.action = spec->action;

	if (spec->n_ports == 0) {
		if (moat_netrule_portless_is_any(r.action)) {
			r.any_port = true;
		} else {
			r.ports[0] = 80;
			r.ports[1] = 443;
			r.n_ports = 2;
		}
	}
	for (size_t i = 0; i < spec->n_ports; i++) {
		if (spec->ports[i] == 0)
			return moat_error_set(err, MOAT_EINPUT, "network rule for %s: port 0", spec->host);
		r.ports[r.n_ports++] = spec->ports[i];
	}

	if (spec->n_methods) {
		r.methods = calloc(spec->n_methods, sizeof(char *));
		if (!r.methods)
			goto oom;
	}
	for (size_t i = 0; i < spec->n_methods; i++) {
		const char *m = spec->methods[i];
		if (!m || !method_token_ok(m)) {
			ret = moat_error_set(err, MOAT_EINPUT, "network rule for %s: invalid method \"%s\"",
					     spec->host, m ? m : "");
			goto fail;
		}
		r.methods[i] = strdup(m);
		if (!r.methods[i])
			goto oom;
		r.n_methods++;
		for (char *p = r.methods[i]; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
	}

	if (spec->n_paths) {
		r.paths = calloc(spec->n_paths, sizeof(char *));
		if (!r.paths)
			goto oom;
	}
	for (size_t i = 0; i < spec->n_paths; i++) {
		const char *p = spec->paths[i];
		char norm[MOAT_NET_PATH_MAX], raw[MOAT_NET_PATH_MAX];
		size_t pl = p ? strlen(p) : 0;
		bool prefix = pl >= 2 && p[pl - 1] == '*' && p[pl - 2] == '/';
		if (!p || p[0] != '/' || strpbrk(p, "?#") || pl >= sizeof(raw) ||
		    memchr(p, '*', prefix ? pl - 1 : pl)) {
			ret = moat_error_set(err, MOAT_EINPUT,
					     "network rule for %s: path \"%s\" must be \"/exact\" or \"/prefix/*\", without a query",
					     spec->host, p ? p : "");
			goto fail;
		}
		memcpy(raw, p, pl + 1);
		if (prefix)
			raw[pl - 1] = '\0';
		ret = moat_net_path_normalize(raw, norm, sizeof(norm), err);
		if (ret < 0) {
			moat_error_wrap(err, "network rule for %s: path \"%s\"", spec->host, p);
			goto fail;
		}
		/* A prefix keeps its trailing slash and an exact path loses
		 * one, so that the match below needs no flag. */
		size_t nl = strlen(norm);
		if (!prefix && nl > 1 && norm[nl - 1] == '/')
			norm[nl - 1] = '\0';
		r.paths[i] = strdup(norm);
		if (!r.paths[i])
			goto oom;
		r.n_paths++;
	}

	rule *n = realloc(b->rules, (b->n_rules + 1) * sizeof(*n));
	if (!n)
		goto oom;
	b->rules = n;
	b->rules[b->n_rules++] = r;
	return 0;
oom:
	ret = moat_error_set(err, ENOMEM, "network rule for %s", spec->host);
fail:
	rule_clear(&r);
	return ret;
}

int moat_netrules_builder_finish(moat_netrules_builder *b, moat_netrules **ret, moat_error *err)
{
	moat_netrules *r = calloc(1, sizeof(*r));
	if (!r)
		return moat_error_set(err, ENOMEM, "network rules");
	atomic_init(&r->refs, 1);
	r->def = b->def;
	/* The builder's storage moves into the set: the set is immutable from
	 * here on, and the builder starts empty for reuse. */
	r->rules = TAKE_PTR(b->rules);
	r->n_rules = b->n_rules;
	r->allow = TAKE_PTR(b->allow);
	r->n_allow = b->n_allow;
	b->n_rules = b->n_allow = 0;
	b->def = MOAT_NET_DENY;
	*ret = r;
	return 0;
}

moat_netrules *moat_netrules_ref(moat_netrules *r)
{
	if (r)
		atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	return r;
}

void moat_netrules_unref(moat_netrules *r)
{
	if (!r)
		return;
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	rules_free(r->rules, r->n_rules);
	free(r->allow);
	free(r);
}

size_t moat_netrules_count(const moat_netrules *r) { return r->n_rules; }
moat_net_action moat_netrules_default(const moat_netrules *r) { return r->def; }

const moat_cidr *moat_netrules_allow_private(const moat_netrules *r, size_t *ret_n)
{
	*ret_n = r->n_allow;
	return r->allow;
}

bool moat_netrules_addr_allowed(const moat_netrules *r, const struct sockaddr *sa, const char **ret_reason)
{
	return moat_addr_allowed(sa, r->allow, r->n_allow, ret_reason);
}

/* ---- paths ---------------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

/* True when s (len bytes) is "." or "..", once a ";parameters" tail is cut
 * off as Tomcat and Spring do. */
static bool is_dot(const char *s, size_t len, bool *ret_params)
{
	const char *semi = memchr(s, ';', len);
	*ret_params = semi != NULL;
	if (semi)
		len = (size_t)(semi - s);
	return (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.');
}

/* Whether a segment holding encoded slashes or backslashes would carry a
 * dot segment for a server that decodes them (nginx with merge_slashes off,
 * some Java containers, IIS). */
static bool hides_dot(const char *seg, size_t len)
{
	size_t start = 0;
	bool params;
	for (size_t i = 0; i <= len; i++) {
		bool sep = i + 3 <= len && seg[i] == '%' && seg[i + 1] == '2' &&
			   (seg[i + 2] == 'F' || seg[i + 2] == 'f');
		sep = sep || (i + 3 <= len && seg[i] == '%' && seg[i + 1] == '5' &&
			      (seg[i + 2] == 'C' || seg[i + 2] == 'c'));
		if (i < len && !sep)
			continue;
		if (is_dot(seg + start, i - start, &params))
			return true;
		if (sep) {
			i += 2;
			start = i + 1;
		}
	}
	return false;
}

int moat_net_path_normalize(const char *in, char *ret, size_t ret_size, moat_error *err)
{
	char seg[MOAT_NET_PATH_MAX];
	size_t o = 0, in_len;

	if (!in || in[0] != '/')
		return moat_error_set(err, MOAT_EINPUT, "path does not start with '/'");
	in_len = strcspn(in, "?#");
	if (in_len >= MOAT_NET_PATH_MAX || ret_size < 2)
		return moat_error_set(err, MOAT_EINPUT, "path is longer than %d bytes", MOAT_NET_PATH_MAX - 1);

	ret[o++] = '/';
	size_t i = 1;
	bool empty_seen = false; /* an empty segment ("//") came before */
	while (i <= in_len) {
		size_t s = 0;
		bool encoded_sep = false;
		for (; i < in_len && in[i] != '/'; i++) {
			unsigned char c = (unsigned char)in[i];
			if (c == '\\')
				return moat_error_set(err, MOAT_EINPUT,
						      "path holds a backslash, which some servers read as '/'");
			if (c <= 0x20 || c >= 0x7f)
				return moat_error_set(err, MOAT_EINPUT, "path holds a control, space or non-ASCII byte");
			if (c == '%') {
				int hi = i + 2 < in_len + 1 ? moat__hexval((unsigned char)in[i + 1]) : -1;
				int lo = hi >= 0 && i + 2 < in_len ? moat__hexval((unsigned char)in[i + 2]) : -1;
				if (hi < 0 || lo < 0)
					return moat_error_set(err, MOAT_EINPUT, "path has a malformed percent-escape");
				unsigned char d = (unsigned char)(hi << 4 | lo);
				i += 2;
				if (d == 0)
					return moat_error_set(err, MOAT_EINPUT, "path holds an encoded NUL byte");
				if (unreserved(d)) {
					seg[s++] = (char)d;
					continue;
				}
				if (d == '/' || d == '\\')
					encoded_sep = true;
				snprintf(seg + s, 4, "%%%02X", d);
				s += 3;
				continue;
			}
			seg[s++] = (char)c;
		}
		/* i now sits on a '/' or at the end. */
		bool params;
		if (s == 0) {
			/* An empty segment: "//" folds into one slash. A trailing
			 * slash is no empty segment of its own. */
			if (i < in_len)
				empty_seen = true;
		} else if (is_dot(seg, s, &params)) {
			if (params)
				return moat_error_set(err, MOAT_EINPUT,
						      "path has parameters on a dot segment (\"..;\"), which servers read in different ways");
			/* "/admin//../public" is "/public" where "//" is folded
			 * first (nginx), but "/admin/public" where the empty
			 * segment is a segment ".." removes (most routers, RFC
			 * 3986): the rules cannot know which the upstream does. */
			if (s == 2 && empty_seen)
				return moat_error_set(err, MOAT_EINPUT,
						      "path has \"..\" after \"//\", which servers resolve in different ways");
			if (s == 2) {
				/* Drop the last segment written. */
				if (o == 1)
					return moat_error_set(err, MOAT_EINPUT, "path climbs above the root with \"..\"");
				o--; /* the slash after the previous segment */
				while (o > 0 && ret[o - 1] != '/')
					o--;
			}
		} else {
			if (encoded_sep && hides_dot(seg, s))
				return moat_error_set(err, MOAT_EINPUT,
						      "path hides a dot segment behind an encoded slash or backslash");
			if (o + s + 1 >= ret_size)
				return moat_error_set(err, MOAT_EINPUT, "normalised path is too long");
			memcpy(ret + o, seg, s);
			o += s;
			if (i < in_len)
				ret[o++] = '/';
		}
		i++;
	}
	ret[o] = '\0';
	return 0;
}

/* ---- decisions ------------------------------------------------------------ */

static bool host_matches(const rule *r, const moat_host *h)
{
	if (r->kind == HOST_ANY)
		return true;
	if (r->kind == HOST_SUFFIX)
		return !h->is_literal && moat_host_glob_match(r->host.name, h->name);
	if (r->host.is_literal != h->is_literal)
		return false;
	if (h->is_literal)
		return moat_addr_equal(&r->host.addr, &h->addr);
	return strcmp(r->host.name, h->name) == 0;
}

static bool port_matches(const rule *r, uint16_t port)
{
	if (r->any_port)
		return true;
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

bool moat_netrules_host_reachable(const moat_netrules *r, const moat_host *host, uint16_t port)
{
	if (!r || !host || !host->name[0])
		return false;
	for (size_t i = 0; i < r->n_rules; i++) {
		const rule *ru = &r->rules[i];
		if (!host_matches(ru, host) || !port_matches(ru, port))
			continue;
		if (ru->action == MOAT_NET_ALLOW)
			return true;
		/* A deny for every method and path ends it; one for some
		 * leaves the others to the rules after it. Approvals need a
		 * queue this gateway does not have, so they allow nothing. */
		if (ru->action == MOAT_NET_DENY && !ru->n_methods && !ru->n_paths)
			return false;
	}
	return r->def == MOAT_NET_ALLOW;
}

static bool method_matches(const rule *r, const char *method)
{
	for (size_t i = 0; i < r->n_methods; i++)
		if (strcasecmp(r->methods[i], method) == 0)
			return true;
	return false;
}

static bool path_matches(const rule *r, const char *norm)
{
	for (size_t i = 0; i < r->n_paths; i++) {
		const char *p = r->paths[i];
		size_t pl = strlen(p), nl = strlen(norm);
		if (p[pl - 1] == '/') {
			/* "/public/" and a star: anything below /public/ (whole segments
			 * only, so never "/publicity"). */
			if (strncmp(norm, p, pl) == 0)
				return true;
		} else if (strcmp(norm, p) == 0 || (nl == pl + 1 && norm[pl] == '/' && strncmp(norm, p, pl) == 0)) {
			/* "/exact" also matches "/exact/". */
			return true;
		}
	}
	return false;
}

static void say(moat_net_decision *d, moat_net_action a, int rule_idx, const char *fmt, ...) _printf_(4, 5);
static void say(moat_net_decision *d, moat_net_action a, int rule_idx, const char *fmt, ...)
{
	va_list ap;
	d->action = a;
	d->rule = rule_idx;
	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
	va_end(ap);
}

static void list_ports(const rule *r, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < r->n_ports && o + 8 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? ", " : "", r->ports[i]);
}

static void decide_one(const moat_netrules *r, const moat_net_request *req, moat_net_decision *ret);

/* Whether path holds an encoded slash or backslash ("%2F", "%5C"). */
static bool has_encoded_sep(const char *path)
{
	for (const char *p = strchr(path, '%'); p; p = strchr(p + 1, '%'))
		if ((p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) || (p[1] == '5' && (p[2] == 'C' || p[2] == 'c')))
			return true;
	return false;
}

void moat_netrules_decide(const moat_netrules *r, const moat_net_request *req, moat_net_decision *ret)
{
	decide_one(r, req, ret);
	if (!req || !req->path || !has_encoded_sep(req->path))
		return;
	/* "/admin%2Fsecret" is one segment to a server that keeps encoded
	 * slashes and "/admin/secret" to one that decodes them (Tomcat with
	 * ALLOW_ENCODED_SLASH, many frameworks, IIS for "%5C"). The request is
	 * judged both ways; when the readings lead to different decisions, the
	 * rules cannot tell what the upstream will serve, and it is refused. */
	char alt[MOAT_NET_PATH_MAX];
	size_t o = 0;
	for (const char *p = req->path; *p && o + 1 < sizeof(alt); p++) {
		if (p[0] == '%' && ((p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) ||
				    (p[1] == '5' && (p[2] == 'C' || p[2] == 'c')))) {
			alt[o++] = '/';
			p += 2;
		} else {
			alt[o++] = *p;
		}
	}
	alt[o] = '\0';
	moat_net_request q = *req;
	q.path = alt;
	moat_net_decision d2;
	decide_one(r, &q, &d2);
	if (d2.action == ret->action && d2.rule == ret->rule)
		return;
	say(ret, MOAT_NET_DENY, d2.action == MOAT_NET_ALLOW ? ret->rule : d2.rule,
	    "request path on %s is denied: it holds an encoded slash (%%2F or %%5C), and the rules decide differently when a server reads it as '/'",
	    req->host->name);
}

static void decide_one(const moat_netrules *r, const moat_net_request *req, moat_net_decision *ret)
{
	char norm[MOAT_NET_PATH_MAX];
	moat_error perr = { 0 };
	int path_state = 0; /* 0 not yet normalised, 1 ok, -1 ambiguous */
	const rule *port_miss = NULL, *method_miss = NULL, *path_miss = NULL, *hidden_miss = NULL;
	int port_miss_i = -1, method_miss_i = -1, path_miss_i = -1, hidden_miss_i = -1;
	const char *host;

	memset(ret, 0, sizeof(*ret));
	if (!r || !req || !req->host || !req->host->name[0]) {
		say(ret, MOAT_NET_DENY, -1, "request without a host is denied");
		return;
	}
	host = req->host->name;

	for (size_t i = 0; i < r->n_rules; i++) {
		const rule *ru = &r->rules[i];
		int idx = (int)i;
		if (!host_matches(ru, req->host))
			continue;
		/* The misses kept for the reason are of rules that would
		 * have let the request through: naming a deny rule the
		 * request also missed would point the wrong way. */
		bool could_allow = ru->action != MOAT_NET_DENY;
		if (!port_matches(ru, req->port)) {
			if (!port_miss && could_allow) {
				port_miss = ru;
				port_miss_i = idx;
			}
			continue;
		}
		if (ru->n_methods) {
			if (!req->method) {
				if (ru->action == MOAT_NET_ALLOW) {
					if (!hidden_miss) {
						hidden_miss = ru;
						hidden_miss_i = idx;
					}
					continue;
				}
			} else if (!method_matches(ru, req->method)) {
				if (!method_miss && could_allow) {
					method_miss = ru;
					method_miss_i = idx;
				}
				continue;
			}
		}
		if (ru->n_paths) {
			if (!req->path) {
				if (ru->action == MOAT_NET_ALLOW) {
					if (!hidden_miss) {
						hidden_miss = ru;
						hidden_miss_i = idx;
					}
					continue;
				}
			} else {
				if (path_state == 0)
					path_state = moat_net_path_normalize(req->path, norm, sizeof(norm), &perr) < 0 ? -1 : 1;
				if (path_state < 0) {
					say(ret, MOAT_NET_DENY, idx, "request path on %s is denied: %s", host, perr.msg);
					return;
				}
				if (!path_matches(ru, norm)) {
					if (!path_miss && could_allow) {
						path_miss = ru;
						path_miss_i = idx;
					}
					continue;
				}
			}
		}
		switch (ru->action) {
		case MOAT_NET_ALLOW:
			say(ret, MOAT_NET_ALLOW, idx, "%s:%u is allowed by network rule %d", host, req->port, idx);
			return;
		case MOAT_NET_APPROVE:
			say(ret, MOAT_NET_APPROVE, idx, "%s:%u needs a person's approval (network rule %d)", host,
			    req->port, idx);
			return;
		default:
			say(ret, MOAT_NET_DENY, idx, "%s:%u is denied by network rule %d", host, req->port, idx);
			return;
		}
	}

	if (r->def == MOAT_NET_ALLOW) {
		say(ret, MOAT_NET_ALLOW, -1, "%s:%u is allowed by network.default", host, req->port);
		return;
	}
	if (r->def == MOAT_NET_APPROVE) {
		say(ret, MOAT_NET_APPROVE, -1, "%s:%u needs a person's approval (network.default)", host, req->port);
		return;
	}
	/* Denied by default: say what came closest, so the agent knows whether
	 * to change the port, the method, the path, or ask for the host. */
	if (hidden_miss) {
		say(ret, MOAT_NET_DENY, -1,
		    "%s is allowed by network rule %d only for some methods or paths, which this connection does not show (a TLS tunnel or SOCKS stream)",
		    host, hidden_miss_i);
	} else if (method_miss) {
		char list[128] = "";
		size_t o = 0;
		for (size_t i = 0; i < method_miss->n_methods && o + 34 < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", method_miss->methods[i]);
		say(ret, MOAT_NET_DENY, -1, "%s %s is not allowed: network rule %d allows only %s", req->method, host,
		    method_miss_i, list);
	} else if (path_miss) {
		say(ret, MOAT_NET_DENY, -1, "path %s on %s is outside the paths network rule %d allows (%s%s)", norm,
		    host, path_miss_i, path_miss->paths[0], path_miss->n_paths > 1 ? ", ..." : "");
	} else if (port_miss) {
		char list[96];
		list_ports(port_miss, list, sizeof(list));
		say(ret, MOAT_NET_DENY, -1, "port %u of %s is not allowed: network rule %d allows ports %s", req->port,
		    host, port_miss_i, list);
	} else {
		say(ret, MOAT_NET_DENY, -1, "%s is not in this sandbox's network allowlist", host);
	}
}

/* ---- the slot -------------------------------------------------------------- */

void moat_netrules_slot_init(moat_netrules_slot *s, moat_netrules *initial)
{
	pthread_mutex_init(&s->lock, NULL);
	s->cur = initial;
}

void moat_netrules_slot_destroy(moat_netrules_slot *s)
{
	moat_netrules_unref(s->cur);
	s->cur = NULL;
	pthread_mutex_destroy(&s->lock);
}

/* A bare atomic load followed by a ref would race with a publish that drops
 * the last reference in between; the lock covers exactly the load and the
 * ref, so readers never wait on anything longer than that. */
moat_netrules *moat_netrules_slot_get(moat_netrules_slot *s)
{
	pthread_mutex_lock(&s->lock);
	moat_netrules *r = moat_netrules_ref(s->cur);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void moat_netrules_slot_publish(moat_netrules_slot *s, moat_netrules *r)
{
	pthread_mutex_lock(&s->lock);
	moat_netrules *old = s->cur;
	s->cur = r;
	pthread_mutex_unlock(&s->lock);
	moat_netrules_unref(old);
}

static int parse_ports(const char *s, uint16_t *ports, size_t max, size_t *ret_n)
{
	size_t n = 0;
	while (*s) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || errno || v == 0 || v > 65535 || n >= max || (*end && *end != ','))
			return -EINVAL;
		ports[n++] = (uint16_t)v;
		s = *end ? end + 1 : end;
	}
	if (n == 0)
		return -EINVAL;
	*ret_n = n;
	return 0;
}

int moat_allow_host_spec_parse(const char *spec, char **ret_host, uint16_t *ports, size_t max, size_t *ret_n,
			       moat_error *err)
{
	/* A port list follows the last ':' unless the pattern is an IPv6
	 * literal in brackets without one. */
	_cleanup_free_ char *host = strdup(spec);
	if (!host)
		return moat_error_set(err, ENOMEM, "network rules");
	*ret_n = 0;
	char *colon = strrchr(host, ':');
	char *bracket = strrchr(host, ']');
	if (colon && (!bracket || colon > bracket) && (host[0] == '[' || strchr(host, ':') == colon)) {
		*colon = '\0';
		if (parse_ports(colon + 1, ports, max, ret_n) < 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "network.allow: %s: ports must be numbers 1-65535, separated by ','", spec);
	}
	*ret_host = TAKE_PTR(host);
	return 0;
}
