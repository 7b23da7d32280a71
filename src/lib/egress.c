/* A run's egress from its policy (egress.h). */
#include "egress.h"

#include "audit.h"
#include "hostpath.h"
#include "netrules.h"
#include "policy.h"
#include "tls.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Writes one gateway event to the audit log and as a JSON line to the net
 * log. Runs on the gateway's thread, the only writer of the net log. */
static void egress_event(void *userdata, const moat_net_event *ev)
{
	moat_egress *e = userdata;
	const char *type = ev->type ? ev->type : "net.request";
	if (e->audit) {
		/* Every decision is fsync'd: the log must hold it even if moat
		 * dies right after. The writer is thread-safe. */
		json_t *f = moat_net_event_to_json(ev);
		moat_error aerr = {0};
		if (f)
			(void)moat_audit_event(e->audit, type, f, MOAT_AUDIT_SYNC, &aerr);
	}
	if (e->log_fd < 0)
		return;
	json_t *o = moat_net_event_to_json(ev);
	if (!o)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "time_ms", json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!line)
		return;
	size_t len = strlen(line);
	line[len] = '\n';
	/* One write on an O_APPEND descriptor per event keeps lines whole. */
	(void)moat__write_all(e->log_fd, line, len + 1);
	free(line);
}

static bool strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

int moat_egress_from_policy(const moat_policy *policy, const char *net_log_path, moat_audit *audit, moat_egress *e,
			    moat_error *err)
{
	memset(e, 0, sizeof(*e));
	e->log_fd = -1;
	e->bundle_fd = -1;
	e->audit = audit;
	if (!moat_net_uses_gateway(policy->net))
		return 0;
	/* The effective policy is the whole truth about the network: its
	 * deny, approve and allow rules with their ports, methods and paths,
	 * allow_private, hosts and resolver. */
	int r = moat_policy_netrules(policy, &e->rules, err);
	if (r < 0)
		goto fail;
	if (policy->n_hosts > MOAT_GATEWAY_MAX_HOSTS) {
		r = moat_error_set(err, MOAT_EINPUT, "network.hosts: more than %d entries", MOAT_GATEWAY_MAX_HOSTS);
		goto fail;
	}
	/* The entries point into the policy, which outlives e. */
	e->hosts = calloc(policy->n_hosts ? policy->n_hosts : 1, sizeof(*e->hosts));
	if (!e->hosts) {
		r = moat_error_set(err, ENOMEM, "network.hosts");
		goto fail;
	}
	for (size_t i = 0; i < policy->n_hosts; i++)
		e->hosts[i] = (moat_gateway_host){policy->hosts[i].name, policy->hosts[i].address};
	e->n_hosts = policy->n_hosts;
	if (net_log_path) {
		e->log_fd = moat__hostpath_open("net log", net_log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW,
						0600, err);
		if (e->log_fd < 0) {
			r = e->log_fd;
			goto fail;
		}
	}
	/* TLS is terminated only where it has to be: for the hosts a secret
	 * is sent to and those with method or path rules. */
	const moat_net_rules *lists[] = {&policy->allow, &policy->deny, &policy->approve};
	for (size_t l = 0; l < ELEMENTSOF(lists); l++)
		for (size_t i = 0; i < lists[l]->n; i++) {
			const moat_net_rule *ru = &lists[l]->v[i];
			if ((ru->methods || ru->paths) && !strv_contains(e->terminate, ru->host) &&
			    moat__strv_push(&e->terminate, ru->host) < 0) {
				r = moat_error_set(err, ENOMEM, "egress");
				goto fail;
			}
		}
	for (size_t i = 0; i < policy->n_secrets; i++)
		for (char **h = policy->secrets[i].hosts; h && *h; h++)
			if (!strv_contains(e->terminate, *h) && moat__strv_push(&e->terminate, *h) < 0) {
				r = moat_error_set(err, ENOMEM, "egress");
				goto fail;
			}
	e->cfg = (moat_gateway_config){
		.terminate_hosts = e->terminate,
		.rules = e->rules,
		.hosts = e->hosts,
		.n_hosts = e->n_hosts,
		.resolver = policy->resolver,
		.on_event = egress_event,
		.userdata = e,
	};
	/* network.budget: the whole run's egress. */
	const moat_net_budget *b = &policy->budget;
	e->cfg.budget_run.max_bytes_up = b->bytes_up;
	e->cfg.budget_run.max_bytes_down = b->bytes_down;
	e->cfg.budget_run.requests_per_minute = (uint32_t)b->requests_per_minute;
	e->cfg.max_clients = (uint32_t)b->connections;
	return 0;
fail:
	moat_egress_done(e);
	return r;
}

const moat_gateway_config *moat_egress_gateway(const moat_egress *e)
{
	return e->cfg.on_event ? &e->cfg : NULL;
}

void moat_egress_done(moat_egress *e)
{
	moat_netrules_unref(e->rules);
	free(e->hosts);
	if (e->log_fd >= 0)
		close(e->log_fd);
	moat__strv_free(e->terminate);
	moat_tls_ca_free(e->ca);
	if (e->bundle_fd >= 0)
		close(e->bundle_fd);
	if (e->bundle_path)
		unlink(e->bundle_path);
	if (e->bundle_dir)
		rmdir(e->bundle_dir);
	free(e->bundle_path);
	free(e->bundle_dir);
	memset(e, 0, sizeof(*e));
	e->log_fd = -1;
	e->bundle_fd = -1;
}

int moat_egress_tls_prepare(moat_egress *e, moat_config *c, const char *upstream_ca_file, moat_error *err)
{
	if (!e->cfg.on_event || !e->terminate)
		return 0;
	e->cfg.upstream_ca_file = upstream_ca_file;
	/* A folder of our own, so no one else's file can stand in for the
	 * bundle; the file is readable by the sandbox's user. */
	const char *tmp = getenv("TMPDIR");
	if (asprintf(&e->bundle_dir, "%s/moat-tls.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") < 0) {
		e->bundle_dir = NULL;
		return moat_error_set(err, ENOMEM, "TLS bundle");
	}
	if (!mkdtemp(e->bundle_dir)) {
		int r = moat_error_set(err, errno, "TLS bundle: a folder in %s", tmp ? tmp : "/tmp");
		free(TAKE_PTR(e->bundle_dir));
		return r;
	}
	if (chmod(e->bundle_dir, 0711) < 0 || asprintf(&e->bundle_path, "%s/ca-certificates.crt", e->bundle_dir) < 0)
		return moat_error_set(err, errno ? errno : ENOMEM, "TLS bundle");
	e->bundle_fd = open(e->bundle_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (e->bundle_fd < 0)
		return moat_error_set(err, errno, "TLS bundle: %s", e->bundle_path);
	(void)fchmod(e->bundle_fd, 0644);
	int r = moat_config_add_bind(c, e->bundle_path, MOAT_TLS_BUNDLE_INSIDE, MOAT_BIND_NOEXEC, err);
	if (r < 0)
		return r;
	static const char *const vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
					   "GIT_SSL_CAINFO"};
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		size_t vl = strlen(vars[i]);
		bool set = false;
		for (char **v = c->env; v && *v && !set; v++)
			set = strncmp(*v, vars[i], vl) == 0 && (*v)[vl] == '=';
		char kv[96];
		snprintf(kv, sizeof(kv), "%s=%s", vars[i], MOAT_TLS_BUNDLE_INSIDE);
		if (!set && (r = moat_config_add_env(c, kv, err)) < 0)
			return r;
	}
	return 0;
}

/* The host's own authorities, from the first bundle file the usual
 * distributions keep. Empty when there is none: the sandbox then trusts
 * only its own authority. */
static int copy_host_bundle(int out, moat_error *err)
{
	static const char *const bundles[] = {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
					      "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"};
	for (size_t i = 0; i < ELEMENTSOF(bundles); i++) {
		_cleanup_close_ int fd = open(bundles[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		char buf[65536];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (moat__write_all(out, buf, (size_t)n) < 0)
				return moat_error_set(err, errno, "TLS bundle");
		if (n < 0)
			return moat_error_set(err, errno, "TLS bundle: %s", bundles[i]);
		return 0;
	}
	return 0;
}

int moat_egress_tls_arm(moat_egress *e, const char *label, moat_error *err)
{
	if (e->bundle_fd < 0 || e->ca)
		return 0;
	int r = moat_tls_ca_new(label, &e->ca, err);
	if (r < 0)
		return r;
	const char *pem = moat_tls_ca_pem(e->ca);
	if ((r = copy_host_bundle(e->bundle_fd, err)) < 0)
		return r;
	if (moat__write_all(e->bundle_fd, "\n", 1) < 0 || moat__write_all(e->bundle_fd, pem, strlen(pem)) < 0)
		return moat_error_set(err, errno, "TLS bundle: %s", e->bundle_path);
	close(e->bundle_fd);
	e->bundle_fd = -1;
	e->cfg.tls_ca = e->ca;
	return 0;
}
