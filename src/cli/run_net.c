/* The network options of `moat run` and how they become a gateway
 * configuration: --net, --allow-host, --allow-private, --net-host,
 * --resolver, --net-log. */
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "gateway.h"
#include "netrules.h"
#include "audit.h"
#include "policy.h"
#include "hostpath.h"

int moat_cli_run_net_option(moat_config *c, const char *name, const char *value, moat_error *err)
{
	size_t cap = MOAT_MAX_ALLOW_HOSTS;
	if (strcmp(name, "net") == 0) {
		if (strcmp(value, "none") == 0)
			c->net = MOAT_NET_NONE;
		else if (strcmp(value, "proxy") == 0)
			c->net = MOAT_NET_PROXY;
		else
			return moat_error_set(err, MOAT_EINPUT, "'%s' is not none or proxy", value);
		return 0;
	}
	char ***list = strcmp(name, "allow-host") == 0	  ? &c->allow_hosts
		       : strcmp(name, "allow-private") == 0 ? &c->allow_private
		       : strcmp(name, "net-host") == 0	    ? &c->net_hosts
							    : NULL;
	if (list) {
		if (moat__strv_length(*list) >= cap)
			return moat_error_set(err, MOAT_EINPUT, "more than %zu values", cap);
		/* Allowing a host means going through the gateway. */
		if (list == &c->allow_hosts)
			c->net = MOAT_NET_PROXY;
		return moat__strv_push(list, value) < 0 ? moat_error_set(err, ENOMEM, "out of memory") : 0;
	}
	char **str = strcmp(name, "resolver") == 0 ? &c->resolver : strcmp(name, "net-log") == 0 ? &c->net_log_path : NULL;
	if (!str)
		return moat_error_set(err, EINVAL, "unknown network option %s", name);
	free(*str);
	*str = strdup(value);
	return *str ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}

/* Writes one net.request event as a JSON line. Runs on the gateway's
 * thread, the only writer of the file. */
static void net_log_event(void *userdata, const moat_net_event *ev)
{
	moat_cli_net *n = userdata;
	if (n->audit) {
		/* Every decision is fsync'd: the log must hold it even if moat
		 * dies right after. The writer is thread-safe. */
		json_t *f = moat_net_event_to_json(ev);
		moat_error aerr = {0};
		if (f)
			(void)moat_audit_event(n->audit, ev->type ? ev->type : "net.request", f, MOAT_AUDIT_SYNC, &aerr);
	}
	if (n->log_fd < 0)
		return;
	json_t *o = moat_net_event_to_json(ev);
	if (!o)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(o, "type", json_string(ev->type ? ev->type : "net.request"));
	json_object_set_new(o, "time_ms", json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!line)
		return;
	size_t len = strlen(line);
	line[len] = '\n';
	/* One write on an O_APPEND descriptor per event keeps lines whole. */
	(void)moat__write_all(n->log_fd, line, len + 1);
	free(line);
}

int moat_cli_net_setup(const moat_config *c, const moat_policy *policy, moat_audit *audit, moat_cli_net *n,
		       moat_error *err)
{
	memset(n, 0, sizeof(*n));
	n->log_fd = -1;
	n->audit = audit;
	if (c->net != MOAT_NET_PROXY)
		return 0;
	/* The policy, with the command-line flags folded in, is the whole
	 * truth about the network: its deny, approve and allow rules with
	 * their ports, methods and paths, allow_private, hosts and resolver. */
	const char *resolver = c->resolver;
	int r;
	if (policy) {
		r = moat_policy_netrules(policy, &n->rules, err);
		if (r < 0)
			return r;
		/* The entries point into the policy, which outlives the run. */
		if (policy->n_hosts > MOAT_GATEWAY_MAX_HOSTS)
			return moat_error_set(err, MOAT_EINPUT, "network.hosts: more than %d entries",
					      MOAT_GATEWAY_MAX_HOSTS);
		n->hosts = calloc(policy->n_hosts ? policy->n_hosts : 1, sizeof(*n->hosts));
		if (!n->hosts)
			return moat_error_set(err, ENOMEM, "network hosts");
		for (size_t i = 0; i < policy->n_hosts; i++)
			n->hosts[i] = (moat_gateway_host){policy->hosts[i].name, policy->hosts[i].address};
		n->n_hosts = policy->n_hosts;
		if (policy->resolver)
			resolver = policy->resolver;
	} else {
		r = moat_gateway_rules_from_patterns(c->allow_hosts, c->allow_private, &n->rules, err);
		if (r >= 0)
			r = moat_gateway_hosts_parse(c->net_hosts, &n->hosts, &n->n_hosts, err);
	}
	if (r < 0)
		return r;
	if (c->net_log_path) {
		n->log_fd = moat__hostpath_open("--net-log", c->net_log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600, err);
		if (n->log_fd < 0)
			return n->log_fd;
	}
	n->cfg = (moat_gateway_config){
		.rules = n->rules,
		.hosts = n->hosts,
		.n_hosts = n->n_hosts,
		.resolver = resolver,
		.on_event = net_log_event,
		.userdata = n,
	};
	/* network.budget: the whole run's egress. */
	if (policy) {
		const moat_net_budget *b = &policy->budget;
		n->cfg.budget_run.max_bytes_up = b->bytes_up;
		n->cfg.budget_run.max_bytes_down = b->bytes_down;
		n->cfg.budget_run.requests_per_minute = (uint32_t)b->requests_per_minute;
		n->cfg.max_clients = (uint32_t)b->connections;
	}
	return 0;
}

void moat_cli_net_done(moat_cli_net *n)
{
	moat_netrules_unref(n->rules);
	free(n->hosts);
	if (n->log_fd >= 0)
		close(n->log_fd);
	memset(n, 0, sizeof(*n));
	n->log_fd = -1;
}
