/* Egress: how a run's policy becomes its gateway's configuration (the
 * rules, static names, resolver, budgets) and where the gateway's events go
 * (the audit log, a net log file). One place, so that every front that
 * starts a sandbox (moat run, moat judge, and whatever comes next) gets the
 * same gateway from the same policy. */
#pragma once

#include "config.h"
#include "gateway.h"

struct moat_audit; /* audit.h */
struct moat_policy; /* policy.h */

typedef struct moat_egress {
	/* What moat_run_io.gateway points at; valid while the egress lives. */
	moat_gateway_config cfg;
	moat_netrules *rules;
	moat_gateway_host *hosts;
	size_t n_hosts;
	int log_fd;               /* config->net_log_path, or -1 */
	struct moat_audit *audit; /* not owned */
} moat_egress;

/* Fills e for a run of config c under policy (the effective one, with the
 * flags folded in; NULL: c's own allow_hosts, allow_private and net_hosts).
 * With c->net other than proxy, e is left empty and 0 returned: check
 * moat_egress_gateway. audit may be NULL; when set, every gateway event is
 * also written there. The policy must outlive e. */
int moat_egress_from_policy(const moat_config *c, const struct moat_policy *policy, struct moat_audit *audit,
			    moat_egress *e, moat_error *err);
/* The configuration for moat_run_io.gateway, or NULL when the run has no
 * egress. */
const moat_gateway_config *moat_egress_gateway(const moat_egress *e);
/* Frees what e holds; accepts a zeroed or already-done egress. */
void moat_egress_done(moat_egress *e);
