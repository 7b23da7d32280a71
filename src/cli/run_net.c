/* The network options of `moat run`: --net, --allow-host, --allow-private,
 * --net-host, --resolver, --secret as fields of the policy overlay, --net-log for the
 * front. The engine turns the effective policy into the gateway's
 * configuration (egress.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int moat_cli_run_net_option(moat_cli_run_opts *ro, const char *name, const char *value, moat_error *err)
{
	moat_policy *o = ro->overlay;
	if (strcmp(name, "net") == 0) {
		if (strcmp(value, "none") == 0)
			o->net = MOAT_NET_NONE;
		else if (strcmp(value, "proxy") == 0)
			o->net = MOAT_NET_PROXY;
		else if (strcmp(value, "transparent") == 0)
			o->net = MOAT_NET_TRANSPARENT;
		else
			return moat_error_set(err, MOAT_EINPUT, "'%s' is not none, proxy or transparent", value);
		return 0;
	}
	if (strcmp(name, "allow-host") == 0) {
		/* Allowing a host means going through the gateway. */
		if (!moat_net_uses_gateway(o->net))
			o->net = MOAT_NET_PROXY;
		return moat_policy_add_allow_host(o, value, err);
	}
	if (strcmp(name, "allow-private") == 0) {
		if (moat__strv_length(o->allow_private) >= MOAT_MAX_ALLOW_HOSTS)
			return moat_error_set(err, MOAT_EINPUT, "more than %d values", MOAT_MAX_ALLOW_HOSTS);
		return moat__strv_push(&o->allow_private, value) < 0 ? moat_error_set(err, ENOMEM, "out of memory") : 0;
	}
	if (strcmp(name, "secret") == 0) {
		/* Sending a secret to a host means going through the gateway;
		 * a relative file: path means the caller's folder, which the
		 * engine does not know. */
		o->net = MOAT_NET_PROXY;
		const char *f = strstr(value, "=file:");
		if (f && f[6] && f[6] != '/') {
			char cwd[4096];
			_cleanup_free_ char *abs = NULL;
			if (!getcwd(cwd, sizeof(cwd)))
				return moat_error_set(err, errno, "the current folder");
			if (asprintf(&abs, "%.*sfile:%s/%s", (int)(f + 1 - value), value, cwd, f + 6) < 0)
				return moat_error_set(err, ENOMEM, "out of memory");
			return moat_policy_add_secret_spec(o, abs, err);
		}
		return moat_policy_add_secret_spec(o, value, err);
	}
	if (strcmp(name, "net-host") == 0) {
		const char *eq = strchr(value, '=');
		if (!eq || eq == value || !eq[1])
			return moat_error_set(err, MOAT_EINPUT, "%s: expected NAME=ADDRESS", value);
		_cleanup_free_ char *host = strndup(value, (size_t)(eq - value));
		if (!host)
			return moat_error_set(err, ENOMEM, "out of memory");
		return moat_policy_add_host(o, host, eq + 1, err);
	}
	char **str = strcmp(name, "resolver") == 0 ? &o->resolver : strcmp(name, "net-log") == 0 ? &ro->net_log : NULL;
	if (!str)
		return moat_error_set(err, EINVAL, "unknown network option %s", name);
	free(*str);
	*str = strdup(value);
	return *str ? 0 : moat_error_set(err, ENOMEM, "out of memory");
}
