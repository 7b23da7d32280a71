/* What a policy does to a run: the base a run starts from, a front's
 * overlay merged on top, the compiled run specification, nesting (a child policy may only narrow its
 * parent), and the network decision the gateway asks for each request. */
#include "baseroot.h"
#include "audit.h"
#include "netrules.h"
#include "policy-internal.h"

#include "hostglob.h"
#include "units.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

/* ---- built-in profiles ------------------------------------------------- */

const char *moat_policy_profile_text(const char *name)
{
	for (size_t i = 0; i < moat__builtin_profiles_len; i++)
		if (name && strcmp(moat__builtin_profiles[i].name, name) == 0)
			return moat__builtin_profiles[i].text;
	return NULL;
}

const char *const *moat_policy_profile_names(void)
{
	static const char *names[16];
	size_t n = 0;
	for (size_t i = 0; i < moat__builtin_profiles_len && n + 1 < ELEMENTSOF(names); i++)
		names[n++] = moat__builtin_profiles[i].name;
	names[n] = NULL;
	return names;
}

int moat_policy_load_profile(const char *name, moat_policy **ret, moat_error *err)
{
	for (size_t i = 0; i < moat__builtin_profiles_len; i++) {
		const moat__builtin_profile *bp = &moat__builtin_profiles[i];
		if (strcmp(bp->name, name) != 0)
			continue;
		char source[64];
		snprintf(source, sizeof(source), "profile %s", bp->name);
		/* A built-in profile names only absolute paths, so it means the
		 * same wherever moat is run from. */
		int r = moat_policy_parse(bp->text, bp->len, source, NULL, NULL, ret, err);
		/* A profile's limits are defaults, not something the user asked
		 * for: under a stricter parent they narrow instead of failing. */
		if (r >= 0)
			(*ret)->limits_set = 0;
		return r;
	}
	char names[256] = "";
	for (size_t i = 0; i < moat__builtin_profiles_len; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
			 moat__builtin_profiles[i].name);
	return moat_error_set(err, MOAT_EINPUT, "unknown profile '%s' (expected one of: %s)", name, names);
}

/* ---- one model of a run: base, overlay, compile ----------------------- */

static bool rule_is_host_only(const moat_net_rule *r)
{
	return !r->n_ports && !r->methods && !r->paths;
}

static bool strv_has(char *const *v, const char *s);

static int replace_str(char **field, const char *value, moat_error *err)
{
	if (!value)
		return 0;
	char *d = strdup(value);
	if (!d)
		return moat_error_set(err, ENOMEM, "policy");
	free(*field);
	*field = d;
	return 0;
}

moat_policy *moat_policy_overlay_new(void)
{
	moat_policy *o = moat_policy_new();
	if (o)
		o->net = _MOAT_NET_INVALID; /* not set */
	return o;
}

/* Strips trailing slashes (but keeps "/"), as a policy file's paths are. */
static char *dup_path(const char *p)
{
	char *d = strdup(p);
	if (!d)
		return NULL;
	size_t n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	return d;
}

int moat_policy_add_bind(moat_policy *p, const char *src, const char *dst, unsigned flags, moat_error *err)
{
	const char *field = flags & MOAT_BIND_RW ? "filesystem.read_write" : "filesystem.read_only";
	if (p->n_binds >= MOAT_MAX_BINDS)
		return moat_error_set(err, MOAT_EINPUT, "%s: too many binds (at most %d)", field, MOAT_MAX_BINDS);
	moat_bind *nb = realloc(p->binds, (p->n_binds + 1) * sizeof(*nb));
	if (!nb)
		return moat_error_set(err, ENOMEM, "%s", field);
	p->binds = nb;
	moat_bind *b = &p->binds[p->n_binds];
	*b = (moat_bind){.src = dup_path(src), .dst = dup_path(dst), .flags = flags};
	if (!b->src || !b->dst) {
		free(b->src);
		free(b->dst);
		return moat_error_set(err, ENOMEM, "%s", field);
	}
	p->n_binds++;
	return 0;
}

int moat_policy_add_allow_host(moat_policy *p, const char *spec, moat_error *err)
{
	if (p->allow.n >= MOAT_MAX_ALLOW_HOSTS)
		return moat_error_set(err, MOAT_EINPUT, "network.allow: more than %d rules", MOAT_MAX_ALLOW_HOSTS);
	_cleanup_free_ char *host = NULL;
	uint16_t ports[MOAT_NETRULE_MAX_PORTS];
	size_t n_ports = 0;
	int r = moat_allow_host_spec_parse(spec, &host, ports, ELEMENTSOF(ports), &n_ports, err);
	if (r < 0)
		return r;
	/* Validated with the rest of the policy (moat__policy_check), which
	 * also takes address literals such as [::1]. */
	moat_net_rule rule = {.host = host, .ports = n_ports ? ports : NULL, .n_ports = n_ports};
	if (!moat__net_rules_append(&p->allow, &rule))
		return moat_error_set(err, ENOMEM, "network.allow");
	return 0;
}

int moat_policy_add_host(moat_policy *p, const char *name, const char *address, moat_error *err)
{
	if (p->n_hosts >= MOAT_MAX_ALLOW_HOSTS)
		return moat_error_set(err, MOAT_EINPUT, "network.hosts: more than %d entries", MOAT_MAX_ALLOW_HOSTS);
	moat_host_entry *nh = realloc(p->hosts, (p->n_hosts + 1) * sizeof(*nh));
	if (!nh)
		return moat_error_set(err, ENOMEM, "network.hosts");
	p->hosts = nh;
	nh[p->n_hosts] = (moat_host_entry){strdup(name), strdup(address)};
	if (!nh[p->n_hosts].name || !nh[p->n_hosts].address) {
		free(nh[p->n_hosts].name);
		free(nh[p->n_hosts].address);
		return moat_error_set(err, ENOMEM, "network.hosts");
	}
	p->n_hosts++;
	return 0;
}

static int load_parent(moat_policy **ret, moat_error *err)
{
	const char *path = getenv(MOAT_PARENT_POLICY_ENV);
	*ret = NULL;
	if (!path || !path[0])
		return 0;
	int r = moat__policy_load_file_ex(path, false, ret, err);
	return r < 0 ? moat_error_wrap(err, "parent policy (%s)", MOAT_PARENT_POLICY_ENV) : 0;
}

int moat_policy_load_base(const char *profile, const char *path, moat_policy **ret, moat_error *err)
{
	if (profile && path)
		return moat_error_set(err, MOAT_EINPUT, "a profile and a policy file both given (expected one of them)");
	_cleanup_policy_ moat_policy *p = NULL;
	int r = path ? moat_policy_load_file(path, &p, err) : moat_policy_load_profile(profile ? profile : "code", &p, err);
	if (r < 0)
		return r;
	/* Inside a sandbox, the parent's effective policy bounds what a
	 * nested run may ask for. */
	_cleanup_policy_ moat_policy *parent = NULL;
	if ((r = load_parent(&parent, err)) < 0)
		return r;
	if (parent) {
		moat_policy *narrowed = NULL;
		if ((r = moat_policy_intersect(parent, p, &narrowed, err)) < 0)
			return r;
		moat_policy_free(p);
		p = narrowed;
	}
	/* Named as the caller named it: the run's name in session.start, and
	 * the seccomp profile a named profile picks. */
	if ((r = replace_str(&p->profile, profile, err)) < 0 || (r = replace_str(&p->path, path, err)) < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

/* NAME=env:VAR@HOST (or NAME=file:/PATH@HOST), moat run's --secret: the common case, a
 * variable NAME inside holding the placeholder, the value sent to HOST only.
 * The fields are checked with the policy file's checks afterwards
 * (moat__policy_check); only the shape is checked here. */
int moat_policy_add_secret_spec(moat_policy *p, const char *spec, moat_error *err)
{
	const char *eq = strchr(spec, '='), *at = strrchr(spec, '@');
	if (!eq || eq == spec || !at || at < eq || !at[1] || at == eq + 1)
		return moat_error_set(err, MOAT_EINPUT, "secrets: %s: expected NAME=env:VAR@HOST or NAME=file:PATH@HOST",
				      spec);
	_cleanup_free_ char *name = strndup(spec, (size_t)(eq - spec));
	if (!name)
		return moat_error_set(err, ENOMEM, "policy");
	for (size_t i = 0; i < p->n_secrets; i++)
		if (strcmp(p->secrets[i].name, name) == 0)
			return moat_error_set(err, MOAT_EINPUT, "secrets: %s: the policy has a secret named %s already", spec,
					      name);
	if (p->n_secrets >= MOAT_POLICY_MAX_SECRETS)
		return moat_error_set(err, MOAT_EINPUT, "secrets: %s: too many secrets (at most %d)", spec,
				      MOAT_POLICY_MAX_SECRETS);
	moat_secret s = {.name = TAKE_PTR(name)};
	s.env = strdup(s.name);
	s.from = strndup(eq + 1, (size_t)(at - eq - 1));
	bool ok = s.env && s.from && moat__strv_push(&s.hosts, at + 1) >= 0;
	moat_secret *ns = ok ? realloc(p->secrets, (p->n_secrets + 1) * sizeof(*ns)) : NULL;
	if (!ns) {
		moat__secret_clear(&s);
		return moat_error_set(err, ENOMEM, "policy");
	}
	p->secrets = ns;
	p->secrets[p->n_secrets++] = s;
	return 0;
}

int moat_policy_merge_overlay(moat_policy *p, const moat_policy *o, moat_error *err)
{
	int r;
	for (size_t i = 0; i < o->n_binds; i++)
		if ((r = moat_policy_add_bind(p, o->binds[i].src, o->binds[i].dst, o->binds[i].flags, err)) < 0)
			return r;
	for (char **e = o->env; e && *e; e++)
		if (moat__strv_push(&p->env, *e) < 0)
			return moat_error_set(err, ENOMEM, "env");
	for (size_t k = 0; k < o->allow.n; k++) {
		const moat_net_rule *add = &o->allow.v[k];
		/* An allowed host the policy already allows as a whole adds
		 * nothing. */
		bool have = false;
		for (size_t i = 0; i < p->allow.n && rule_is_host_only(add); i++)
			have |= rule_is_host_only(&p->allow.v[i]) && strcmp(p->allow.v[i].host, add->host) == 0;
		if (!have && !moat__net_rules_append(&p->allow, add))
			return moat_error_set(err, ENOMEM, "network.allow");
	}
	for (char **a = o->allow_private; a && *a; a++)
		if (!strv_has(p->allow_private, *a) && moat__strv_push(&p->allow_private, *a) < 0)
			return moat_error_set(err, ENOMEM, "network.allow_private");
	for (size_t i = 0; i < o->n_hosts; i++)
		if ((r = moat_policy_add_host(p, o->hosts[i].name, o->hosts[i].address, err)) < 0)
			return r;
	/* A secret the flags add may not take a name the policy has. */
	for (size_t i = 0; i < o->n_secrets; i++) {
		for (size_t j = 0; j < p->n_secrets; j++)
			if (strcmp(p->secrets[j].name, o->secrets[i].name) == 0)
				return moat_error_set(err, MOAT_EINPUT, "secrets: the policy has a secret named %s already",
						      o->secrets[i].name);
		if (p->n_secrets >= MOAT_POLICY_MAX_SECRETS)
			return moat_error_set(err, MOAT_EINPUT, "secrets: more than %d", MOAT_POLICY_MAX_SECRETS);
		moat_secret *ns = realloc(p->secrets, (p->n_secrets + 1) * sizeof(*ns));
		if (!ns)
			return moat_error_set(err, ENOMEM, "secrets");
		p->secrets = ns;
		if (!moat__secret_copy(&p->secrets[p->n_secrets], &o->secrets[i])) {
			moat__secret_clear(&p->secrets[p->n_secrets]);
			return moat_error_set(err, ENOMEM, "secrets");
		}
		p->n_secrets++;
	}
	if ((r = replace_str(&p->resolver, o->resolver, err)) < 0 || (r = replace_str(&p->out_dir, o->out_dir, err)) < 0 ||
	    (r = replace_str(&p->cwd, o->cwd, err)) < 0 || (r = replace_str(&p->stdin_path, o->stdin_path, err)) < 0 ||
	    (r = replace_str(&p->result_path, o->result_path, err)) < 0 ||
	    (r = replace_str(&p->audit_log, o->audit_log, err)) < 0 ||
	    (r = replace_str(&p->record_path, o->record_path, err)) < 0 ||
	    (r = replace_str(&p->hostname, o->hostname, err)) < 0 ||
	    (r = replace_str(&p->approvals_notify, o->approvals_notify, err)) < 0)
		return r;
	if (o->approvals_timeout_ms)
		p->approvals_timeout_ms = o->approvals_timeout_ms;
	if (o->record_path)
		p->record = true;
	/* The trail and the terminal are only ever added, never removed. */
	p->audit_files |= o->audit_files;
	p->tty |= o->tty;
	p->stdout_direct |= o->stdout_direct;
	if (o->audit_max_size)
		p->audit_max_size = o->audit_max_size;
	for (size_t i = 0; i < moat__limit_table_len; i++) {
		const moat__limit_desc *d = &moat__limit_table[i];
		if (o->limits_set & d->bit)
			*moat__limit_field(&p->limits, d) = moat__limit_get(&o->limits, d);
	}
	p->limits_set |= o->limits_set;
	if (o->net != _MOAT_NET_INVALID)
		p->net = o->net;

	/* The limits first, each against its range (config.c), then every
	 * field as in a policy file, then, inside a sandbox, nothing wider
	 * than the parent's policy. */
	if ((r = moat_limits_check(&p->limits, err)) < 0 || (r = moat__policy_check(p, err)) < 0)
		return r;
	_cleanup_policy_ moat_policy *parent = NULL, *check = NULL;
	if ((r = load_parent(&parent, err)) < 0)
		return r;
	if (parent && (r = moat_policy_intersect(parent, p, &check, err)) < 0)
		return r;
	return 0;
}

int moat_policy_compile(const moat_policy *p, char *const *argv, moat_config **ret, moat_error *err)
{
	_cleanup_config_ moat_config *c = moat_config_new();
	if (!c)
		return moat_error_set(err, ENOMEM, "run specification");
	int r;
	if (argv && !(c->argv = moat__strv_copy(argv)))
		return moat_error_set(err, ENOMEM, "run specification");
	for (size_t i = 0; i < p->n_binds; i++)
		if ((r = moat_config_add_bind(c, p->binds[i].src, p->binds[i].dst, p->binds[i].flags, err)) < 0)
			return r;
	/* A bare NAME passes the caller's value: the front reads its own
	 * environment for it (moat run does), the engine never does. */
	for (char **e = p->env; e && *e; e++)
		if (strchr(*e, '=') && (r = moat_config_add_env(c, *e, err)) < 0)
			return r;
	if ((r = replace_str(&c->out_dir, p->out_dir, err)) < 0 || (r = replace_str(&c->cwd, p->cwd, err)) < 0 ||
	    (r = replace_str(&c->stdin_path, p->stdin_path, err)) < 0 ||
	    (r = replace_str(&c->hostname, p->hostname, err)) < 0 ||
	    (r = replace_str(&c->profile, p->profile, err)) < 0 || (r = replace_str(&c->policy_path, p->path, err)) < 0)
		return r;
	c->limits = p->limits;
	c->net = p->net;
	c->tty = p->tty;
	/* exec.allow is enforced by Landlock in the command's process. */
	if (p->exec_allow && !(c->exec_allow = moat__strv_copy(p->exec_allow)))
		return moat_error_set(err, ENOMEM, "run specification");
	c->exec_workspace = p->exec_workspace;
	if (moat__exec_rules_copy(p->exec_approve, p->n_exec_approve, &c->exec_approve) < 0)
		return moat_error_set(err, ENOMEM, "run specification");
	c->n_exec_approve = p->n_exec_approve;
	c->audit_files = p->audit_files;

	/* The policy the run is held to: its YAML as the sandbox sees it
	 * (placed at MOAT_POLICY_INSIDE) and the SHA-256 of the YAML without
	 * the front's output paths, logged in session.start, so that the log
	 * names exactly what the run was held to, flags included. */
	_cleanup_free_ char *full = moat_policy_to_yaml_run(p);
	c->policy_yaml = moat_policy_to_yaml_inside(p);
	if (!full || !c->policy_yaml)
		return moat_error_set(err, ENOMEM, "run specification");
	moat_audit_hash(full, strlen(full), c->policy_sha256);
	*ret = TAKE_PTR(c);
	return 0;
}
_Static_assert(sizeof(((moat_config *)0)->policy_sha256) == MOAT_AUDIT_HASH_HEX, "policy_sha256 holds one hash");

/* ---- nesting ----------------------------------------------------------- */

static bool path_within(const char *p, const char *base)
{
	if (strcmp(base, "/") == 0)
		return p[0] == '/';
	size_t n = strlen(base);
	return strncmp(p, base, n) == 0 && (p[n] == '\0' || p[n] == '/');
}


/* 1 when path is visible in the parent and writable when rw is asked,
 * 0 when not visible, -1 when visible but read-only. */
static int parent_grants(const moat_policy *parent, const char *path, bool rw)
{
	int best = 0;
	for (size_t i = 0; i < parent->n_binds; i++)
		if (path_within(path, parent->binds[i].dst)) {
			if (!rw || (parent->binds[i].flags & MOAT_BIND_RW))
				return 1;
			best = -1;
		}
	if (parent->out_dir && path_within(path, "/out"))
		return 1;
	if (path_within(path, "/tmp"))
		return 1;
	/* What every sandbox shows without a bind (mount.c builds it): the
	 * base root and /etc, read-only. */
	for (size_t i = 0; i < ELEMENTSOF(moat__base_system_dirs); i++)
		if (path_within(path, moat__base_system_dirs[i]))
			return rw ? -1 : 1;
	if (path_within(path, "/etc"))
		return rw ? -1 : 1;
	return best;
}

static bool host_covers(const char *ph, const char *ch)
{
	if (ch[0] != '*')
		return moat_host_glob_match(ph, ch);
	/* A child wildcard is covered by an equal or wider parent wildcard. */
	if (ph[0] != '*')
		return false;
	const char *ps = ph + 1, *cs = ch + 1; /* ".example.com" */
	size_t pl = strlen(ps), cl = strlen(cs);
	return cl >= pl && strcmp(cs + cl - pl, ps) == 0;
}

static bool strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

static bool url_path_covered(const char *pattern, const char *path)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return strncmp(path, pattern, n - 1) == 0;
	return strcmp(pattern, path) == 0;
}

/* The ports a rule covers: every port (true), or the list in *ret_ports. */
static bool rule_ports(const moat_net_rule *r, moat_net_action a, const uint16_t **ret_ports, size_t *ret_n)
{
	static const uint16_t web[] = {80, 443};
	if (r->n_ports) {
		*ret_ports = r->ports;
		*ret_n = r->n_ports;
		return false;
	}
	*ret_ports = web;
	*ret_n = ELEMENTSOF(web);
	return moat_netrule_portless_is_any(a);
}

/* Whether the parent's rule pr (action pa) covers everything the child's
 * rule cr (action ca) would let through. */
static bool rule_covers(const moat_net_rule *pr, moat_net_action pa, const moat_net_rule *cr, moat_net_action ca)
{
	const uint16_t *pports, *cports;
	size_t pn, cn;
	if (!host_covers(pr->host, cr->host))
		return false;
	if (!rule_ports(pr, pa, &pports, &pn)) {
		if (rule_ports(cr, ca, &cports, &cn))
			return false;
		for (size_t i = 0; i < cn; i++) {
			bool found = false;
			for (size_t j = 0; j < pn; j++)
				found |= pports[j] == cports[i];
			if (!found)
				return false;
		}
	}
	if (pr->methods) {
		if (!cr->methods)
			return false;
		for (char **m = cr->methods; *m; m++)
			if (!strv_has(pr->methods, *m))
				return false;
	}
	if (pr->paths) {
		if (!cr->paths)
			return false;
		for (char **cp = cr->paths; *cp; cp++) {
			bool found = false;
			for (char **pp = pr->paths; *pp && !found; pp++)
				found = url_path_covered(*pp, *cp);
			if (!found)
				return false;
		}
	}
	return true;
}

static bool rules_cover(const moat_net_rules *prs, moat_net_action pa, const moat_net_rule *cr, moat_net_action ca)
{
	for (size_t i = 0; i < prs->n; i++)
		if (rule_covers(&prs->v[i], pa, cr, ca))
			return true;
	return false;
}

static bool cidr_within(const char *outer, const char *inner)
{
	int fo, fi;
	unsigned char ao[16], ai[16];
	unsigned lo, li;
	if (moat__cidr_parse(outer, &fo, ao, &lo) < 0 || moat__cidr_parse(inner, &fi, ai, &li) < 0 || fo != fi ||
	    li < lo)
		return false;
	for (unsigned bit = 0; bit < lo; bit++)
		if ((ao[bit / 8] ^ ai[bit / 8]) & (0x80u >> (bit % 8)))
			return false;
	return true;
}

static int intersect_limits(const moat_policy *parent, const moat_policy *child, moat_policy *r, moat_error *err)
{
	for (size_t i = 0; i < moat__limit_table_len; i++) {
		const moat__limit_desc *d = &moat__limit_table[i];
		uint64_t pv = moat__limit_get(&parent->limits, d), cv = moat__limit_get(&child->limits, d);
		if ((child->limits_set & d->bit) && cv > pv) {
			char cs[32], ps[32];
			moat_format_limit(d->kind, cv, cs, sizeof(cs));
			moat_format_limit(d->kind, pv, ps, sizeof(ps));
			return moat_error_set(err, MOAT_EINPUT, "limits.%s: %s exceeds the parent's %s", d->key, cs, ps);
		}
		*moat__limit_field(&r->limits, d) = cv < pv ? cv : pv;
	}
	r->limits_set = child->limits_set | parent->limits_set;
	return 0;
}

static int intersect_files(const moat_policy *parent, const moat_policy *child, moat_error *err)
{
	for (size_t i = 0; i < child->n_binds; i++) {
		const moat_bind *b = &child->binds[i];
		bool rw = b->flags & MOAT_BIND_RW;
		int g = parent_grants(parent, b->src, rw);
		if (g == 0 && !(b->flags & MOAT_BIND_OPTIONAL))
			return moat_error_set(err, MOAT_EINPUT, "filesystem.%s: %s is not visible in the parent",
					      rw ? "read_write" : "read_only", b->src);
		if (g < 0)
			return moat_error_set(err, MOAT_EINPUT, "filesystem.read_write: %s is read-only in the parent",
					      b->src);
	}
	if (child->out_dir && parent_grants(parent, child->out_dir, true) != 1)
		return moat_error_set(err, MOAT_EINPUT, "filesystem.out: %s is not writable in the parent", child->out_dir);
	if (child->stdin_path && parent_grants(parent, child->stdin_path, false) != 1)
		return moat_error_set(err, MOAT_EINPUT, "stdin: %s is not visible in the parent", child->stdin_path);
	return 0;
}

static int intersect_network(const moat_policy *parent, const moat_policy *child, moat_policy *r, moat_error *err)
{
	if (parent->net == MOAT_NET_NONE && child->net != MOAT_NET_NONE)
		return moat_error_set(err, MOAT_EINPUT, "network.mode: %s, but the parent has no network",
				      child->net == MOAT_NET_POD ? "pod" : "proxy");
	/* A pod's network is unfiltered: wider than any gateway's. */
	if (child->net == MOAT_NET_POD && parent->net != MOAT_NET_POD)
		return moat_error_set(err, MOAT_EINPUT,
				      "network.mode: pod, but the parent's egress goes through the gateway");
	for (size_t i = 0; i < child->allow.n; i++)
		if (!rules_cover(&parent->allow, MOAT_NET_ALLOW, &child->allow.v[i], MOAT_NET_ALLOW))
			return moat_error_set(err, MOAT_EINPUT, "network.allow[%zu]: %s is not allowed by the parent", i,
					      child->allow.v[i].host);
	for (size_t i = 0; i < child->approve.n; i++)
		if (!rules_cover(&parent->allow, MOAT_NET_ALLOW, &child->approve.v[i], MOAT_NET_APPROVE) &&
		    !rules_cover(&parent->approve, MOAT_NET_APPROVE, &child->approve.v[i], MOAT_NET_APPROVE))
			return moat_error_set(err, MOAT_EINPUT, "network.approve[%zu]: %s is not allowed by the parent", i,
					      child->approve.v[i].host);
	/* The parent's deny and approve rules keep applying: a child rule
	 * covered by a broad parent allow must still be held where the parent
	 * holds it. */
	for (size_t i = 0; i < parent->deny.n; i++)
		if (!moat__net_rules_append(&r->deny, &parent->deny.v[i]))
			return moat_error_set(err, ENOMEM, "policy");
	for (size_t i = 0; i < parent->approve.n; i++)
		if (!moat__net_rules_append(&r->approve, &parent->approve.v[i]))
			return moat_error_set(err, ENOMEM, "policy");
	for (char **c = child->allow_private; c && *c; c++) {
		bool ok = false;
		for (char **pc = parent->allow_private; pc && *pc && !ok; pc++)
			ok = cidr_within(*pc, *c);
		if (!ok)
			return moat_error_set(err, MOAT_EINPUT, "network.allow_private: %s is not allowed by the parent", *c);
	}
	/* A pinned name could send an allowed host to any address, so a child
	 * may only repeat the parent's pins. */
	for (size_t i = 0; i < child->n_hosts; i++) {
		bool ok = false;
		for (size_t j = 0; j < parent->n_hosts && !ok; j++)
			ok = strcmp(parent->hosts[j].name, child->hosts[i].name) == 0 &&
			     strcmp(parent->hosts[j].address, child->hosts[i].address) == 0;
		if (!ok)
			return moat_error_set(err, MOAT_EINPUT, "network.hosts.%s: the parent does not pin it to %s",
					      child->hosts[i].name, child->hosts[i].address);
	}
	/* A budget only shrinks: a child may set a smaller one, never a
	 * larger one, and what it leaves out it inherits. */
	const struct {
		const char *key;
		size_t off;
	} budget[] = {{"bytes_up", offsetof(moat_net_budget, bytes_up)},
		      {"bytes_down", offsetof(moat_net_budget, bytes_down)},
		      {"requests_per_minute", offsetof(moat_net_budget, requests_per_minute)},
		      {"connections", offsetof(moat_net_budget, connections)}};
	for (size_t i = 0; i < ELEMENTSOF(budget); i++) {
		uint64_t pv = *(const uint64_t *)((const char *)&parent->budget + budget[i].off);
		uint64_t cv = *(const uint64_t *)((const char *)&child->budget + budget[i].off);
		uint64_t *rv = (uint64_t *)((char *)&r->budget + budget[i].off);
		if (pv && cv > pv)
			return moat_error_set(err, MOAT_EINPUT, "network.budget.%s: %llu exceeds the parent's %llu",
					      budget[i].key, (unsigned long long)cv, (unsigned long long)pv);
		*rv = cv ? cv : pv;
	}
	if (child->resolver && (!parent->resolver || strcmp(child->resolver, parent->resolver) != 0))
		return moat_error_set(err, MOAT_EINPUT, "network.resolver: %s differs from the parent's %s", child->resolver,
				      parent->resolver ? parent->resolver : "resolver");
	for (size_t i = 0; i < r->n_hosts; i++) {
		free(r->hosts[i].name);
		free(r->hosts[i].address);
	}
	free(r->hosts);
	r->hosts = NULL;
	r->n_hosts = 0;
	if (parent->n_hosts) {
		r->hosts = calloc(parent->n_hosts, sizeof(*r->hosts));
		if (!r->hosts)
			return moat_error_set(err, ENOMEM, "policy");
		for (; r->n_hosts < parent->n_hosts; r->n_hosts++) {
			r->hosts[r->n_hosts].name = strdup(parent->hosts[r->n_hosts].name);
			r->hosts[r->n_hosts].address = strdup(parent->hosts[r->n_hosts].address);
			if (!r->hosts[r->n_hosts].name || !r->hosts[r->n_hosts].address) {
				r->n_hosts++;
				return moat_error_set(err, ENOMEM, "policy");
			}
		}
	}
	return replace_str(&r->resolver, parent->resolver, err);
}

static bool path_covered(char *const *parent, const char *path)
{
	for (char *const *p = parent; *p; p++) {
		size_t l = strlen(*p);
		if (strcmp(*p, path) == 0)
			return true;
		/* "/a/" and a star covers "/a/x" and "/a/b/" and a star. */
		if (l >= 2 && (*p)[l - 1] == '*' && strncmp(*p, path, l - 1) == 0)
			return true;
	}
	return false;
}

static int intersect_secrets(const moat_policy *parent, const moat_policy *child, moat_error *err)
{
	for (size_t i = 0; i < child->n_secrets; i++) {
		const moat_secret *cs = &child->secrets[i], *ps = NULL;
		for (size_t j = 0; j < parent->n_secrets; j++)
			if (strcmp(parent->secrets[j].name, cs->name) == 0)
				ps = &parent->secrets[j];
		if (!ps || ps->honeytoken != cs->honeytoken || (ps->from == NULL) != (cs->from == NULL) ||
		    (ps->from && strcmp(ps->from, cs->from) != 0))
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s: the parent has no such secret from %s", cs->name,
					      cs->from ? cs->from : "nowhere (a honeytoken)");
		for (char **h = cs->hosts; h && *h; h++) {
			bool ok = false;
			for (char **ph = ps->hosts; ph && *ph && !ok; ph++)
				ok = host_covers(*ph, *h);
			if (!ok)
				return moat_error_set(err, MOAT_EINPUT, "secrets.%s.hosts: %s is not a host the parent "
									"sends it to", cs->name, *h);
		}
		/* The binding may only narrow: fewer methods and paths, a
		 * sooner expiry, fewer uses, and the same header. */
		if (ps->methods) {
			for (char **m = cs->methods; m && *m; m++)
				if (!strv_has(ps->methods, *m))
					return moat_error_set(err, MOAT_EINPUT, "secrets.%s.inject.methods: %s is not a method "
										"the parent sends it with", cs->name, *m);
			if (!cs->methods)
				return moat_error_set(err, MOAT_EINPUT, "secrets.%s.inject.methods: any method, but the parent "
									"sends it only with some", cs->name);
		}
		if (ps->paths) {
			for (char **m = cs->paths; m && *m; m++)
				if (!path_covered(ps->paths, *m))
					return moat_error_set(err, MOAT_EINPUT, "secrets.%s.inject.paths: %s is not a path the "
										"parent sends it to", cs->name, *m);
			if (!cs->paths)
				return moat_error_set(err, MOAT_EINPUT, "secrets.%s.inject.paths: any path, but the parent "
									"sends it only to some", cs->name);
		}
		if ((ps->header || cs->header) &&
		    (!ps->header || !cs->header || strcasecmp(ps->header, cs->header) != 0 ||
		     strcmp(ps->format ? ps->format : "{value}", cs->format ? cs->format : "{value}") != 0))
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s.inject.header: differs from the parent's",
					      cs->name);
		if (ps->expires_ms && (!cs->expires_ms || cs->expires_ms > ps->expires_ms))
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s.expires: later than the parent's", cs->name);
		if (ps->max_uses && (!cs->max_uses || cs->max_uses > ps->max_uses))
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s.max_uses: more than the parent's", cs->name);
	}
	return 0;
}

int moat_policy_intersect(const moat_policy *parent, const moat_policy *child, moat_policy **ret, moat_error *err)
{
	_cleanup_policy_ moat_policy *r = moat_policy_copy(child);
	if (!r)
		return moat_error_set(err, ENOMEM, "policy");
	int e;
	if ((e = intersect_limits(parent, child, r, err)) < 0 || (e = intersect_files(parent, child, err)) < 0 ||
	    (e = intersect_network(parent, child, r, err)) < 0 || (e = intersect_secrets(parent, child, err)) < 0)
		return e;
	if (parent->exec_allow) {
		if (!child->exec_allow) {
			r->exec_allow = moat__strv_copy(parent->exec_allow);
			if (!r->exec_allow)
				return moat_error_set(err, ENOMEM, "policy");
		}
		for (char **x = child->exec_allow; x && *x; x++)
			if (!strv_has(parent->exec_allow, *x))
				return moat_error_set(err, MOAT_EINPUT, "exec.allow: %s is not allowed by the parent", *x);
	}
	/* A nested run may run programs from its workspace only where its
	 * parent may. */
	r->exec_workspace = child->exec_workspace && parent->exec_workspace;
	r->exec_delegate = child->exec_delegate && parent->exec_delegate;
	/* The parent's exec.approve rules keep applying inside. */
	if (parent->n_exec_approve) {
		size_t n = r->n_exec_approve + parent->n_exec_approve;
		moat_exec_rule *v = realloc(r->exec_approve, n * sizeof(*v));
		if (!v)
			return moat_error_set(err, ENOMEM, "policy");
		r->exec_approve = v;
		moat_exec_rule *extra = NULL;
		if (moat__exec_rules_copy(parent->exec_approve, parent->n_exec_approve, &extra) < 0)
			return moat_error_set(err, ENOMEM, "policy");
		memcpy(v + r->n_exec_approve, extra, parent->n_exec_approve * sizeof(*v));
		free(extra);
		r->n_exec_approve = n;
	}
	r->audit_files = child->audit_files || parent->audit_files;
	/* A nested run's events land in its parent's log: its cap is no
	 * larger than the parent's. */
	uint64_t pm = parent->audit_max_size ? parent->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE;
	uint64_t cm = child->audit_max_size ? child->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE;
	r->audit_max_size = cm < pm ? cm : pm;
	r->record = child->record || parent->record;
	r->require = child->require | parent->require;
	*ret = TAKE_PTR(r);
	return 0;
}

/* ---- the gateway's question -------------------------------------------- */

static const char *const decision_names[_MOAT_POLICY_NET_MAX] = {
	[MOAT_POLICY_NET_DENY] = "deny",
	[MOAT_POLICY_NET_ALLOW] = "allow",
	[MOAT_POLICY_NET_APPROVE] = "approve",
	[MOAT_POLICY_NET_UNFILTERED] = "unfiltered",
};

const char *moat_policy_net_verdict_to_string(moat_policy_net_verdict d)
{
	return d >= 0 && d < _MOAT_POLICY_NET_MAX ? decision_names[d] : NULL;
}

/* The policy's rules compiled for the gateway: deny rules first, then
 * approve, then allow, so that a deny always beats a broader allow (first
 * match wins); anything else falls to the default, deny. This is the one
 * place a policy becomes network rules: the gateway and `policy` commands
 * decide through the same compiled set. */
int moat_policy_netrules(const moat_policy *p, moat_netrules **ret, moat_error *err)
{
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	if (!b)
		return moat_error_set(err, ENOMEM, "network rules");
	moat_netrules_builder_set_default(b, MOAT_NET_DENY);
	static const struct {
		const char *name;
		size_t offset;
		moat_net_action action;
	} order[] = {
		{"deny", offsetof(moat_policy, deny), MOAT_NET_DENY},
		{"approve", offsetof(moat_policy, approve), MOAT_NET_APPROVE},
		{"allow", offsetof(moat_policy, allow), MOAT_NET_ALLOW},
	};
	for (size_t o = 0; o < ELEMENTSOF(order); o++) {
		const moat_net_rules *rs = (const moat_net_rules *)((const char *)p + order[o].offset);
		for (size_t i = 0; i < rs->n; i++) {
			const moat_net_rule *r = &rs->v[i];
			moat_netrule_spec spec = {
				.host = r->host,
				.ports = r->ports,
				.n_ports = r->n_ports,
				.methods = (const char *const *)r->methods,
				.n_methods = moat__strv_length(r->methods),
				.paths = (const char *const *)r->paths,
				.n_paths = moat__strv_length(r->paths),
				.action = order[o].action,
			};
			int k = moat_netrules_builder_add(b, &spec, err);
			if (k < 0)
				return moat_error_wrap(err, "network.%s[%zu]", order[o].name, i);
		}
	}
	for (char **c = p->allow_private; c && *c; c++) {
		int k = moat_netrules_builder_allow_private(b, *c, err);
		if (k < 0)
			return moat_error_wrap(err, "network.allow_private");
	}
	return moat_netrules_builder_finish(b, ret, err);
}

/* Names the policy rule behind index i of the compiled set. */
static void rule_label(const moat_policy *p, int i, char *buf, size_t len)
{
	if (i < 0)
		snprintf(buf, len, "network.default");
	else if ((size_t)i < p->deny.n)
		snprintf(buf, len, "network.deny[%d]", i);
	else if ((size_t)i < p->deny.n + p->approve.n)
		snprintf(buf, len, "network.approve[%zu]", (size_t)i - p->deny.n);
	else
		snprintf(buf, len, "network.allow[%zu]", (size_t)i - p->deny.n - p->approve.n);
}

moat_policy_net_verdict moat_policy_net_decide(const moat_policy *p, const char *host, uint16_t port, const char *method,
					       const char *path, char *ret_rule, size_t rule_len)
{
	if (ret_rule)
		snprintf(ret_rule, rule_len, "network.default");
	if (p->net == MOAT_NET_POD) {
		if (ret_rule)
			snprintf(ret_rule, rule_len, "network.mode");
		return MOAT_POLICY_NET_UNFILTERED;
	}
	if (p->net == MOAT_NET_NONE || !host)
		return MOAT_POLICY_NET_DENY;
	moat_error err = {0};
	_cleanup_netrules_ moat_netrules *rules = NULL;
	moat_host h;
	if (moat_policy_netrules(p, &rules, &err) < 0 || moat_host_normalize(host, strlen(host), &h, &err) < 0)
		return MOAT_POLICY_NET_DENY;
	moat_net_request req = {.host = &h, .port = port, .method = method, .path = path};
	moat_net_decision d;
	moat_netrules_decide(rules, &req, &d);
	if (ret_rule)
		rule_label(p, d.rule, ret_rule, rule_len);
	switch (d.action) {
	case MOAT_NET_ALLOW:
		return MOAT_POLICY_NET_ALLOW;
	case MOAT_NET_APPROVE:
		return MOAT_POLICY_NET_APPROVE;
	default:
		return MOAT_POLICY_NET_DENY;
	}
}

/* ---- required layers --------------------------------------------------- */

int moat_policy_check_required(const moat_policy *p, const moat_isolation *iso, moat_error *err)
{
	for (unsigned bit = 1; bit <= MOAT_LAYER_ALL; bit <<= 1) {
		if (!(p->require & bit))
			continue;
		bool have;
		switch (bit) {
		case MOAT_LAYER_USERNS: have = iso->userns; break;
		case MOAT_LAYER_SECCOMP: have = iso->seccomp; break;
		case MOAT_LAYER_LANDLOCK: have = iso->landlock_abi > 0; break;
		case MOAT_LAYER_CGROUP: have = iso->cgroup[0] && strcmp(iso->cgroup, "none") != 0; break;
		default: have = iso->netns; break;
		}
		if (!have)
			return moat_error_set(err, MOAT_EINPUT, "the policy requires %s, which this host could not enforce "
								"(see 'moat doctor')", moat_layer_to_string((moat_layer)bit));
	}
	return 0;
}
