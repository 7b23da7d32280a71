/* The sandbox's side of the egress gateway: the proxy port inside the
 * sandbox's network namespace and the gateway thread in the supervisor.
 *
 * The init creates a listening socket at 127.0.0.1:MOAT_PROXY_PORT inside
 * the namespace and passes it to the supervisor over the control socket
 * (SCM_RIGHTS). The supervisor serves it with a gateway on an event loop of
 * its own thread, so that its poll loop over the run's pipes and timers stays
 * as it is. Connections the gateway makes upstream come from the host's
 * namespace (or, given one, another: a Kubernetes pod's, which the thread
 * alone enters); nothing inside the sandbox can reach anything else. */
#pragma once

#include "error.h"
#include "gateway.h"

#define MOAT_PROXY_PORT 3128

/* Init side: creates the listener and sends it over ctl. */
int moat__netproxy_listen(int ctl, moat_error *err);

typedef struct moat_netproxy moat_netproxy;

/* The sockets the gateway serves: the proxy port, and with transparent
 * egress (netnat.h) the redirected TCP listener and the DNS stub's socket
 * (-1 without); and the network namespace its upstream side lives in, or
 * -1 for the supervisor's own: the gateway's thread enters it (setns
 * moves only the calling thread) before it makes any socket, so every
 * connection out and every DNS lookup is made there. */
typedef struct moat_netproxy_fds {
	int proxy, transparent, dns, upstream_netns;
} moat_netproxy_fds;

/* Supervisor side: serves the sockets of fds (owned from now on, also on
 * failure) with a gateway made from cfg, on a new thread. */
int moat__netproxy_start(const moat_gateway_config *cfg, const moat_netproxy_fds *fds, moat_netproxy **ret,
			 moat_error *err);
/* The gateway, e.g. to swap its rules (moat_gateway_set_rules is safe from
 * any thread). */
moat_gateway *moat__netproxy_gateway(moat_netproxy *p);
/* Stops the thread, closes every connection (each is logged) and frees.
 * Accepts NULL. */
void moat__netproxy_stop(moat_netproxy *p, moat_gateway_stats *ret_stats);
