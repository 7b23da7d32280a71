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
	/* TLS termination: the hosts it is for (secrets' hosts, hosts of
	 * rules with methods or paths), the sandbox's authority once armed,
	 * and the trust bundle the sandbox reads (a host file bound at
	 * MOAT_TLS_BUNDLE_INSIDE, filled when armed). */
	char **terminate;
	struct moat_tls_ca *ca;
	char *bundle_dir, *bundle_path;
	int bundle_fd;
} moat_egress;

/* Where the sandbox finds the trust bundle: the host's authorities and the
 * sandbox's own. SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
 * NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO point at it. */
#define MOAT_TLS_BUNDLE_INSIDE "/etc/moat/ca-certificates.crt"

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
/* Before the sandbox exists: when some host's TLS is to be terminated,
 * makes the (empty) trust bundle file, binds it read-only at
 * MOAT_TLS_BUNDLE_INSIDE and points the variables at it (a variable c
 * already sets is left as it is). upstream_ca_file: an extra authority the
 * gateway trusts for upstreams (tests only), or NULL. */
int moat_egress_tls_prepare(moat_egress *e, moat_config *c, const char *upstream_ca_file, moat_error *err);
/* After the sandbox's init was cloned (its key must not be in memory the
 * init inherits) and before the command starts: makes the sandbox's
 * authority, writes the bundle, and hands the authority to the gateway. */
int moat_egress_tls_arm(moat_egress *e, const char *label, moat_error *err);

/* Frees what e holds; accepts a zeroed or already-done egress. */
void moat_egress_done(moat_egress *e);
