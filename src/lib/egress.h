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
	int log_fd;               /* the net log, or -1 */
	struct moat_audit *audit; /* not owned */
} moat_egress;

/* Fills e for a run under policy, the effective one (the front's overlay
 * merged). With a network mode other than proxy, e is left empty and 0
 * returned: check moat_egress_gateway. net_log_path (may be NULL) is a
 * host file each gateway event is appended to as a JSON line; audit (may
 * be NULL) gets every event too. The policy must outlive e. */
int moat_egress_from_policy(const struct moat_policy *policy, const char *net_log_path, struct moat_audit *audit,
			    moat_egress *e, moat_error *err);
/* The configuration for moat_run_io.gateway, or NULL when the run has no
 * egress. */
const moat_gateway_config *moat_egress_gateway(const moat_egress *e);
/* Frees what e holds; accepts a zeroed or already-done egress. */
void moat_egress_done(moat_egress *e);
