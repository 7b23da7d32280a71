/* A policy written back out: as YAML (libyaml's emitter, so quoting is
 * always right) for `policy show` and for nested sandboxes, and as a short
 * human summary for reviewers (`policy explain`). */
#include "policy-internal.h"

#include "netrules.h"
#include "units.h"

#include <stdarg.h>
#include <string.h>
#include <yaml.h>

/* ---- YAML -------------------------------------------------------------- */

typedef struct outbuf {
	char *data;
	size_t len, cap;
	bool failed;
} outbuf;

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	outbuf *o = data;
	if (o->len + size + 1 > o->cap) {
		size_t cap = (o->len + size + 1) * 2;
		char *nd = realloc(o->data, cap);
		if (!nd) {
			o->failed = true;
			return 0;
		}
		o->data = nd;
		o->cap = cap;
	}
	memcpy(o->data + o->len, buffer, size);
	o->len += size;
	o->data[o->len] = '\0';
	return 1;
}

typedef struct emitter {
	yaml_emitter_t e;
	bool failed;
	/* The sandbox's own view: no host path, only what is seen inside. */
	bool inside;
	/* Without the front's output paths (audit log, recording, result):
	 * where a run's reports go is not what it is held to. */
	bool no_outputs;
} emitter;

static void emit(emitter *em, yaml_event_t *ev, int ok)
{
	if (em->failed)
		return;
	if (!ok || !yaml_emitter_emit(&em->e, ev))
		em->failed = true;
}

/* Strings that a plain scalar would turn into null are always quoted. */
static void str(emitter *em, const char *s)
{
	yaml_event_t ev;
	bool quote = !s[0] || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
	emit(em, &ev,
	     yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
					  quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE));
}

static void plain(emitter *em, const char *s)
{
	yaml_event_t ev;
	emit(em, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
						   YAML_PLAIN_SCALAR_STYLE));
}

static void map_start(emitter *em, bool flow)
{
	yaml_event_t ev;
	emit(em, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							  flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(emitter *em)
{
	yaml_event_t ev;
	emit(em, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(emitter *em, bool flow)
{
	yaml_event_t ev;
	emit(em, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							   flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(emitter *em)
{
	yaml_event_t ev;
	emit(em, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void kv(emitter *em, const char *k, const char *v)
{
	plain(em, k);
	str(em, v);
}

static void kbool(emitter *em, const char *k, bool v)
{
	plain(em, k);
	plain(em, v ? "true" : "false");
}

static void strv(emitter *em, const char *k, char *const *v)
{
	plain(em, k);
	seq_start(em, true);
	for (; v && *v; v++)
		str(em, *v);
	seq_end(em);
}

static void binds(emitter *em, const moat_policy *p, const char *key, bool rw)
{
	plain(em, key);
	seq_start(em, false);
	for (size_t i = 0; i < p->n_binds; i++) {
		const moat_bind *b = &p->binds[i];
		if (!!(b->flags & MOAT_BIND_RW) != rw)
			continue;
		if (em->inside) {
			/* Where it is inside; the host folder behind it is
			 * none of the sandbox's business. */
			str(em, b->dst);
		} else if (b->flags & MOAT_BIND_OPTIONAL) {
			map_start(em, true);
			kv(em, "host", b->src);
			kv(em, "path", b->dst);
			kbool(em, "optional", true);
			map_end(em);
		} else if (strcmp(b->src, b->dst) == 0) {
			str(em, b->src);
		} else {
			char spec[2 * MOAT_MAX_PATH + 2];
			snprintf(spec, sizeof(spec), "%s:%s", b->src, b->dst);
			str(em, spec);
		}
	}
	seq_end(em);
}

static void rules(emitter *em, const char *key, const moat_net_rules *rs)
{
	plain(em, key);
	seq_start(em, false);
	for (size_t i = 0; i < rs->n; i++) {
		const moat_net_rule *r = &rs->v[i];
		map_start(em, true);
		kv(em, "host", r->host);
		if (r->n_ports) {
			plain(em, "ports");
			seq_start(em, true);
			for (size_t j = 0; j < r->n_ports; j++) {
				char num[8];
				snprintf(num, sizeof(num), "%u", r->ports[j]);
				plain(em, num);
			}
			seq_end(em);
		}
		if (r->methods)
			strv(em, "methods", r->methods);
		if (r->paths)
			strv(em, "paths", r->paths);
		map_end(em);
	}
	seq_end(em);
}

static void emit_policy(emitter *em, const moat_policy *p)
{
	plain(em, "version");
	plain(em, "1");
	if (p->name)
		kv(em, "name", p->name);

	plain(em, "filesystem");
	map_start(em, false);
	binds(em, p, "read_only", false);
	binds(em, p, "read_write", true);
	if (p->out_dir)
		kv(em, "out", em->inside ? "/out" : p->out_dir);
	kv(em, "workspace", moat_workspace_to_string(p->workspace));
	if (p->cwd)
		kv(em, "cwd", p->cwd);
	map_end(em);

	if (p->exec_allow || p->exec_workspace || p->exec_delegate || p->n_exec_approve) {
		plain(em, "exec");
		map_start(em, false);
		if (p->exec_allow)
			strv(em, "allow", p->exec_allow);
		if (p->exec_workspace)
			kv(em, "workspace", "true");
		if (p->exec_delegate)
			kv(em, "delegate", "true");
		if (p->n_exec_approve) {
			plain(em, "approve");
			seq_start(em, false);
			for (size_t i = 0; i < p->n_exec_approve; i++) {
				map_start(em, true);
				kv(em, "path", p->exec_approve[i].path);
				if (p->exec_approve[i].args)
					strv(em, "args", p->exec_approve[i].args);
				map_end(em);
			}
			seq_end(em);
		}
		map_end(em);
	}

	plain(em, "network");
	map_start(em, false);
	kv(em, "default", "deny");
	kv(em, "mode", p->net == MOAT_NET_TRANSPARENT ? "transparent"
		       : p->net == MOAT_NET_PROXY     ? "proxy"
		       : p->net == MOAT_NET_POD       ? "pod"
						      : "none");
	rules(em, "allow", &p->allow);
	rules(em, "deny", &p->deny);
	rules(em, "approve", &p->approve);
	if (p->allow_private)
		strv(em, "allow_private", p->allow_private);
	if (p->n_hosts) {
		plain(em, "hosts");
		map_start(em, false);
		for (size_t i = 0; i < p->n_hosts; i++)
			kv(em, p->hosts[i].name, p->hosts[i].address);
		map_end(em);
	}
	if (p->resolver)
		kv(em, "resolver", p->resolver);
	const moat_net_budget *b = &p->budget;
	if (b->bytes_up || b->bytes_down || b->requests_per_minute || b->connections) {
		const struct {
			const char *key;
			uint64_t v;
		} fields[] = {{"bytes_up", b->bytes_up},
			      {"bytes_down", b->bytes_down},
			      {"requests_per_minute", b->requests_per_minute},
			      {"connections", b->connections}};
		plain(em, "budget");
		map_start(em, false);
		for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
			char num[32];
			if (!fields[i].v)
				continue;
			snprintf(num, sizeof(num), "%llu", (unsigned long long)fields[i].v);
			kv(em, fields[i].key, num);
		}
		map_end(em);
	}
	map_end(em);

	if (p->n_secrets) {
		plain(em, "secrets");
		seq_start(em, false);
		for (size_t i = 0; i < p->n_secrets; i++) {
			const moat_secret *s = &p->secrets[i];
			map_start(em, false);
			kv(em, "name", s->name);
			/* Inside, a secret is a name and its binding: where the
			 * host keeps it stays on the host. */
			if (s->from)
				kv(em, "from", em->inside && moat__startswith(s->from, "file:") ? "file:/hidden" : s->from);
			if (s->env)
				kv(em, "env", s->env);
			if (s->honeytoken)
				kbool(em, "honeytoken", true);
			if (s->hosts && s->hosts[0] && !s->hosts[1]) {
				plain(em, "inject");
				map_start(em, false);
				kv(em, "host", s->hosts[0]);
				if (s->header)
					kv(em, "header", s->header);
				if (s->format)
					kv(em, "format", s->format);
				if (s->methods)
					strv(em, "methods", s->methods);
				if (s->paths)
					strv(em, "paths", s->paths);
				map_end(em);
			} else if (s->hosts) {
				/* Several hosts come only from the short form, which
				 * has no header, methods or paths. */
				strv(em, "hosts", s->hosts);
			}
			if (s->expires_ms) {
				char d[32];
				moat_format_duration_ms(s->expires_ms, d, sizeof(d));
				kv(em, "expires", d);
			}
			if (s->max_uses) {
				char n[32];
				snprintf(n, sizeof(n), "%llu", (unsigned long long)s->max_uses);
				plain(em, "max_uses");
				plain(em, n);
			}
			map_end(em);
		}
		seq_end(em);
	}

	/* The list form keeps NAME (pass the caller's value) apart from
	 * NAME=VALUE. */
	plain(em, "env");
	seq_start(em, false);
	for (char **e = p->env; e && *e; e++)
		str(em, *e);
	seq_end(em);

	plain(em, "limits");
	map_start(em, false);
	for (size_t i = 0; i < moat__limit_table_len; i++) {
		const moat__limit_desc *d = &moat__limit_table[i];
		char buf[32];
		moat_format_limit(d->kind, moat__limit_get(&p->limits, d), buf, sizeof(buf));
		plain(em, d->key);
		plain(em, buf);
	}
	map_end(em);

	plain(em, "audit");
	map_start(em, false);
	if (p->audit_log && !em->inside && !em->no_outputs)
		kv(em, "log", p->audit_log);
	kbool(em, "files", p->audit_files);
	if (p->record_path && !em->inside && !em->no_outputs)
		kv(em, "record", p->record_path);
	else
		kbool(em, "record", p->record);
	{
		char sz[32];
		moat_format_size(p->audit_max_size ? p->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE, sz, sizeof(sz));
		kv(em, "max_size", sz);
	}
	map_end(em);

	if (p->approvals_timeout_ms || (p->approvals_notify && !em->inside)) {
		plain(em, "approvals");
		map_start(em, false);
		if (p->approvals_timeout_ms) {
			char d[32];
			moat_format_duration_ms(p->approvals_timeout_ms, d, sizeof(d));
			kv(em, "timeout", d);
		}
		/* A host command: never shown to the sandbox. */
		if (p->approvals_notify && !em->inside)
			kv(em, "notify", p->approvals_notify);
		map_end(em);
	}

	plain(em, "require");
	seq_start(em, true);
	for (unsigned bit = 1; bit <= MOAT_LAYER_ALL; bit <<= 1)
		if (p->require & bit)
			plain(em, moat_layer_to_string((moat_layer)bit));
	seq_end(em);

	kbool(em, "tty", p->tty);
	if (p->stdin_path && !em->inside)
		kv(em, "stdin", p->stdin_path);
	if (p->result_path && !em->inside && !em->no_outputs)
		kv(em, "result", p->result_path);
	if (p->hostname)
		kv(em, "hostname", p->hostname);
}

static char *to_yaml(const moat_policy *p, bool inside, bool no_outputs)
{
	outbuf o = {0};
	emitter em = {.inside = inside, .no_outputs = no_outputs};
	if (!yaml_emitter_initialize(&em.e))
		return NULL;
	yaml_emitter_set_output(&em.e, write_handler, &o);
	yaml_emitter_set_unicode(&em.e, 1);
	yaml_emitter_set_width(&em.e, 100);
	yaml_event_t ev;
	emit(&em, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(&em, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	map_start(&em, false);
	emit_policy(&em, p);
	map_end(&em);
	emit(&em, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(&em, &ev, yaml_stream_end_event_initialize(&ev));
	yaml_emitter_delete(&em.e);
	if (em.failed || o.failed) {
		free(o.data);
		return NULL;
	}
	return o.data;
}

/* ---- explain ----------------------------------------------------------- */

typedef struct text {
	char *data;
	size_t len, cap;
	bool failed;
} text;

static void _printf_(2, 3) add(text *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	if (t->len + (size_t)n + 1 > t->cap) {
		size_t cap = (t->len + (size_t)n + 1) * 2 + 256;
		char *nd = realloc(t->data, cap);
		if (!nd) {
			t->failed = true;
			return;
		}
		t->data = nd;
		t->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* A host path as the reviewer wrote it: relative to the policy's folder
 * when it lies inside it, so the summary reads the same on every machine. */
static const char *show_path(const moat_policy *p, const char *path, char *buf, size_t len)
{
	if (p->dir && strcmp(p->dir, "/") != 0) {
		size_t n = strlen(p->dir);
		if (strncmp(path, p->dir, n) == 0 && path[n] == '\0')
			return ".";
		if (strncmp(path, p->dir, n) == 0 && path[n] == '/') {
			snprintf(buf, len, ".%s", path + n);
			return buf;
		}
	}
	return path;
}

static void explain_binds(text *t, const moat_policy *p, bool rw)
{
	bool any = false;
	for (size_t i = 0; i < p->n_binds; i++) {
		const moat_bind *b = &p->binds[i];
		if (!!(b->flags & MOAT_BIND_RW) != rw)
			continue;
		char buf[MOAT_MAX_PATH + 2];
		const char *shown = show_path(p, b->src, buf, sizeof(buf));
		add(t, "  %s %s", rw ? "read-write:" : "read-only: ", shown);
		if (strcmp(b->src, b->dst) != 0)
			add(t, " at %s", b->dst);
		add(t, "%s\n", (b->flags & MOAT_BIND_OPTIONAL) ? " (if it exists)" : "");
		any = true;
	}
	if (!any)
		add(t, "  %s nothing from the host\n", rw ? "read-write:" : "read-only: ");
}

/* Every rule shows its ports, also when the policy names none: what a
 * port-less rule covers depends on its kind (moat_netrule_portless_is_any),
 * and a reviewer must not have to know that. */
static void explain_rule(text *t, const char *label, const moat_net_rule *r, moat_net_action a)
{
	add(t, "  %-9s %s", label, r->host);
	if (r->n_ports) {
		add(t, " port%s", r->n_ports > 1 ? "s" : "");
		for (size_t j = 0; j < r->n_ports; j++)
			add(t, "%s%u", j ? "," : " ", r->ports[j]);
	} else if (moat_netrule_portless_is_any(a)) {
		add(t, " every port");
	} else {
		add(t, " ports 80,443");
	}
	if (r->methods) {
		add(t, " (");
		for (char **m = r->methods; *m; m++)
			add(t, "%s%s", m == r->methods ? "" : ", ", *m);
		add(t, ")");
	}
	if (r->paths) {
		add(t, " paths");
		for (char **s = r->paths; *s; s++)
			add(t, "%s%s", s == r->paths ? " " : ", ", *s);
	}
	add(t, "\n");
}

char *moat_policy_explain(const moat_policy *p)
{
	text t = {0};
	char buf[MOAT_MAX_PATH + 2], num[32];

	add(&t, "policy %s\n", p->name ? p->name : "(unnamed)");

	add(&t, "\nfiles:\n");
	add(&t, "  base system read-only (/usr and the /bin, /lib links), minimal /etc, private /tmp\n");
	explain_binds(&t, p, false);
	explain_binds(&t, p, true);
	if (p->out_dir)
		add(&t, "  output:     %s at /out (writable)\n", show_path(p, p->out_dir, buf, sizeof(buf)));
	/* How /out is built follows moat__out_capped (outdir.c). */
	if (p->out_dir && !p->exec_workspace && !(p->name && strcmp(p->name, "agent") == 0) &&
	    (p->limits.disk_bytes != MOAT_UNLIMITED || p->limits.disk_inodes != MOAT_UNLIMITED))
		add(&t, "              a tmpfs capped by limits.disk and limits.inodes, starting empty,\n"
			"              copied into the folder after the run\n");
	else if (p->out_dir)
		add(&t, "              the folder itself, bound in place: limits.disk and limits.inodes not enforced\n");
	add(&t, "  workspace:  %s\n", p->workspace == MOAT_WORKSPACE_PERSISTENT
					   ? "persistent (kept between commands)"
					   : "ephemeral (gone when the sandbox ends)");
	if (p->cwd)
		add(&t, "  cwd:        %s\n", p->cwd);

	add(&t, "\nprograms:\n");
	if (!p->exec_allow) {
		add(&t, "  the base system, read-only binds and /tmp may hold programs that run\n");
		if (p->exec_workspace)
			add(&t, "  the workspace too: programs written to /out and read-write binds may run (exec.workspace)\n");
		else
			add(&t, "  nothing written to /out or a read-write bind may run (exec.workspace: false)\n");
	} else if (!p->exec_allow[0]) {
		add(&t, "  no program may be started\n");
	} else {
		for (char **e = p->exec_allow; *e; e++)
			add(&t, "  may run:   %s\n", *e);
	}

	add(&t, "\nnetwork:\n");
	if (p->net == MOAT_NET_NONE) {
		add(&t, "  none: only loopback inside the sandbox\n");
	} else if (p->net == MOAT_NET_POD) {
		add(&t, "  pod: the Kubernetes pod's network namespace (made by its CNI plugin), joined as it is by "
			"moat-oci; egress does NOT pass moat's gateway and is not filtered or audited by moat\n");
	} else {
		add(&t, "  through the egress gateway only; anything not allowed below is denied\n");
		if (p->net == MOAT_NET_TRANSPARENT)
			add(&t, "  transparent: every TCP connection and DNS query is redirected to the gateway too, "
				"for programs that ignore the proxy variables; other UDP and IPv6 reach nothing\n");
		else
			add(&t, "  proxy: programs reach the gateway through the proxy variables; one that ignores "
				"them reaches nothing\n");
		if (!p->allow.n && !p->approve.n)
			add(&t, "  (no host is allowed yet)\n");
		for (size_t i = 0; i < p->deny.n; i++)
			explain_rule(&t, "denied:", &p->deny.v[i], MOAT_NET_DENY);
		for (size_t i = 0; i < p->allow.n; i++)
			explain_rule(&t, "allowed:", &p->allow.v[i], MOAT_NET_ALLOW);
		for (char **c = p->allow_private; c && *c; c++)
			add(&t, "  private range allowed: %s\n", *c);
		for (size_t i = 0; i < p->n_hosts; i++)
			add(&t, "  pinned:    %s -> %s\n", p->hosts[i].name, p->hosts[i].address);
		if (p->resolver)
			add(&t, "  resolver:  %s\n", p->resolver);
		const moat_net_budget *b = &p->budget;
		if (b->bytes_up || b->bytes_down || b->requests_per_minute || b->connections) {
			add(&t, "  budget:   ");
			if (b->bytes_up)
				add(&t, " %llu bytes up", (unsigned long long)b->bytes_up);
			if (b->bytes_down)
				add(&t, " %llu bytes down", (unsigned long long)b->bytes_down);
			if (b->requests_per_minute)
				add(&t, " %llu requests a minute", (unsigned long long)b->requests_per_minute);
			if (b->connections)
				add(&t, " %llu connections at once", (unsigned long long)b->connections);
			add(&t, "\n");
		}
	}

	add(&t, "\napprovals:\n");
	if (!p->approve.n)
		add(&t, "  none: nothing waits for a person\n");
	for (size_t i = 0; i < p->approve.n; i++)
		explain_rule(&t, "held:", &p->approve.v[i], MOAT_NET_APPROVE);

	add(&t, "\nsecrets (never inside the sandbox; the gateway adds them to requests):\n");
	if (!p->n_secrets)
		add(&t, "  none\n");
	for (size_t i = 0; i < p->n_secrets; i++) {
		const moat_secret *s = &p->secrets[i];
		if (s->honeytoken) {
			add(&t, "  %s: a decoy in %s; any use is an alert\n", s->name, s->env);
			continue;
		}
		const char *from = s->from;
		if (moat__startswith(from, "file:"))
			from = show_path(p, from + 5, buf, sizeof(buf));
		add(&t, "  %s from %s%s, sent only to", s->name, moat__startswith(s->from, "file:") ? "file " : "",
		    moat__startswith(s->from, "env:") ? s->from : from);
		for (char **h = s->hosts; *h; h++)
			add(&t, "%s%s", h == s->hosts ? " " : ", ", *h);
		if (s->methods) {
			add(&t, ", for");
			for (char **m = s->methods; *m; m++)
				add(&t, "%s%s", m == s->methods ? " " : ", ", *m);
		}
		if (s->paths) {
			add(&t, ", on");
			for (char **m = s->paths; *m; m++)
				add(&t, "%s%s", m == s->paths ? " " : ", ", *m);
		}
		if (s->header)
			add(&t, ", as the header %s", s->header);
		if (s->expires_ms) {
			char d[32];
			moat_format_duration_ms(s->expires_ms, d, sizeof(d));
			add(&t, ", for %s", d);
		}
		if (s->max_uses)
			add(&t, ", at most %llu times", (unsigned long long)s->max_uses);
		if (s->env)
			add(&t, "; the sandbox sees a placeholder in %s\n", s->env);
		else
			add(&t, "; the sandbox sees nothing of it\n");
	}

	add(&t, "\nenvironment (starts empty):\n");
	if (!p->env || !p->env[0])
		add(&t, "  nothing set\n");
	for (char **e = p->env; e && *e; e++)
		add(&t, strchr(*e, '=') ? "  %s\n" : "  %s (the caller's value)\n", *e);

	add(&t, "\nlimits:\n ");
	for (size_t i = 0; i < moat__limit_table_len; i++) {
		const moat__limit_desc *d = &moat__limit_table[i];
		moat_format_limit(d->kind, moat__limit_get(&p->limits, d), num, sizeof(num));
		add(&t, " %s %s%s", d->key, num, i + 1 < moat__limit_table_len ? "," : "\n");
	}

	add(&t, "\naudit:\n");
	add(&t, "  log:       %s\n", p->audit_log ? show_path(p, p->audit_log, buf, sizeof(buf)) : "not written");
	add(&t, "  files:     %s\n", p->audit_files ? "file access is logged" : "file access is not logged");
	moat_format_size(p->audit_max_size ? p->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE, num, sizeof(num));
	add(&t, "  max size:  %s a run (then one audit.overflow event)\n", num);
	if (p->record_path)
		add(&t, "  terminal:  recorded to %s\n", show_path(p, p->record_path, buf, sizeof(buf)));
	else
		add(&t, "  terminal:  %s\n", p->record ? "recorded" : "not recorded");

	if (p->require) {
		add(&t, "\nrequired layers (the run fails without them):");
		for (unsigned bit = 1; bit <= MOAT_LAYER_ALL; bit <<= 1)
			if (p->require & bit)
				add(&t, " %s", moat_layer_to_string((moat_layer)bit));
		add(&t, "\n");
	}
	if (t.failed) {
		free(t.data);
		return NULL;
	}
	return t.data;
}

char *moat_policy_to_yaml(const moat_policy *p)
{
	return to_yaml(p, false, false);
}

char *moat_policy_to_yaml_run(const moat_policy *p)
{
	return to_yaml(p, false, true);
}

char *moat_policy_to_yaml_inside(const moat_policy *p)
{
	return to_yaml(p, true, true);
}
