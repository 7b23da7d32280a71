/* Transparent egress, the sandbox's side: inside its network namespace
 * (which the sandbox's user namespace owns, so the init holds
 * CAP_NET_ADMIN over it and over nothing else), every outbound TCP
 * connection is redirected to the gateway and every DNS query to the
 * gateway's stub (dnsstub.h); all other traffic that would leave loopback
 * is dropped.
 *
 * The init programs this itself over netlink (rtnetlink for an address and
 * a route, nf_tables for the rules), before the command
 * exists: no other program runs in the spawn path. What it sets up:
 *
 *   lo       198.18.0.1/32, and a default route through lo from it: a
 *            connection to a non-loopback address needs a route before
 *            the redirect can take it (there is no device to leave by)
 *   nat      output: UDP to port 53 (any address, a loopback resolver
 *            too) redirected to 127.0.0.1:53; then 127.0.0.0/8
 *            untouched; TCP redirected to 127.0.0.1:MOAT_TRANSPARENT_PORT
 *   filter   output, policy drop: redirected flows, 127.0.0.0/8 and ::1
 *
 * IPv6 has no route at all (connect() fails with ENETUNREACH), and the
 * filter drops any IPv6 packet not bound for ::1 besides. */
#pragma once

#include "error.h"

#include <stdbool.h>

#define MOAT_TRANSPARENT_PORT 3129
#define MOAT_DNS_STUB_PORT 53

/* In the init, with CAP_NET_ADMIN over its network namespace: the address,
 * route and rules above, then the gateway's two sockets in the namespace
 * (a TCP listener at 127.0.0.1:MOAT_TRANSPARENT_PORT and a UDP socket at
 * 127.0.0.1:53), passed to the supervisor over ctl. A kernel without what
 * it needs (nf_tables, NAT, redirect, conntrack) fails with an error that
 * names it. */
int moat__netnat_setup(int ctl, moat_error *err);
/* The address, route and rules alone, in the current network namespace:
 * how `moat doctor` learns, in a throwaway namespace, whether this host can
 * give transparent egress. */
int moat__netnat_rules(moat_error *err);
