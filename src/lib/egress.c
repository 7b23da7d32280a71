/* A run's egress from its policy (egress.h). */
#include "egress.h"

#include "audit.h"
#include "hostpath.h"
#include "netrules.h"
#include "policy.h"
#include "util.h"

#include <fcntl.h>
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

int moat_egress_from_policy(const moat_policy *policy, const char *net_log_path, moat_audit *audit, moat_egress *e,
			    moat_error *err)
{
	memset(e, 0, sizeof(*e));
	e->log_fd = -1;
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
	e->cfg = (moat_gateway_config){
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
	memset(e, 0, sizeof(*e));
	e->log_fd = -1;
}
