/* The network options of `moat run`: --net, --allow-host, --allow-private,
 * --net-host, --resolver, --net-log. The engine turns them, folded into the
 * policy, into the gateway's configuration (egress.c). */
#include <string.h>

#include "cli.h"

int moat_cli_run_net_option(moat_config *c, const char *name, const char *value, moat_error *err)
{
	size_t cap = MOAT_MAX_ALLOW_HOSTS;
	if (strcmp(name, "net") == 0) {
		if (strcmp(value, "none") == 0)
			c->net = MOAT_NET_NONE;
		else if (strcmp(value, "proxy") == 0)
			c->net = MOAT_NET_PROXY;
		else if (strcmp(value, "transparent") == 0)
			c->net = MOAT_NET_TRANSPARENT;
		else
			return moat_error_set(err, MOAT_EINPUT, "'%s' is not none, proxy or transparent", value);
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
		if (list == &c->allow_hosts && !moat_net_uses_gateway(c->net))
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
