/* Shared by the net_secret_* attacks: the placeholder the sandbox holds for
 * the secret GH_TOKEN, bound to bound.wild.test (net_attacks.sh gives the
 * run --secret GH_TOKEN=env:...@bound.wild.test). Each attack sends it
 * where the real value must never go; the gateway must refuse the request
 * (and log a secret.misuse alert), so any answer it forwarded is an escape. */
#pragma once

#include "netattack.h"

static inline const char *ns_placeholder(void)
{
	const char *p = getenv("GH_TOKEN");
	return p && strncmp(p, "moat_ph_", 8) == 0 ? p : NULL;
}

/* Without a placeholder: held when the sandbox has no egress at all (a
 * generic attack runner), else the run was not set up as net_attacks.sh
 * does it. */
static inline int ns_no_placeholder(void)
{
	int fd = na_proxy_connect();
	if (fd < 0)
		return na_blocked("no proxy port: the sandbox has no egress at all");
	close(fd);
	return na_unexpected("no placeholder in GH_TOKEN");
}
