/* A token's policy ceiling (docs/api.md, "Token limits"): the policy a
 * request asks for (its profile or inline policy, with its limits and
 * allowed hosts on top) must fit inside the token's ceiling, as a nested
 * run's must fit inside its parent's (moat_policy_intersect, the code that
 * `moat mcp serve` narrows its calls with). Asking for more is refused
 * naming the field; what the request leaves unsaid takes the ceiling's
 * narrower value. The result is the effective policy the run or session
 * gets, as YAML. */
#include "server.h"

#include <stddef.h>
#include <string.h>

#include "policy.h"
#include "session.h"
#include "units.h"
#include "util.h"

static const struct {
	const char *opt;
	size_t off;
	unsigned bit;
	enum { DUR, SIZE, COUNT, CPUS } unit;
} limit_opts[] = {
	{"--time=", offsetof(moat_limits, wall_ms), MOAT_LIMIT_WALL, DUR},
	{"--cpu=", offsetof(moat_limits, cpu_ms), MOAT_LIMIT_CPU_TIME, DUR},
	{"--mem=", offsetof(moat_limits, memory_bytes), MOAT_LIMIT_MEMORY, SIZE},
	{"--pids=", offsetof(moat_limits, pids), MOAT_LIMIT_PIDS, COUNT},
	{"--output=", offsetof(moat_limits, output_bytes), MOAT_LIMIT_OUTPUT, SIZE},
	{"--tmp-size=", offsetof(moat_limits, tmp_bytes), MOAT_LIMIT_TMP, SIZE},
	{"--files=", offsetof(moat_limits, files), MOAT_LIMIT_FILES, COUNT},
	{"--cpus=", offsetof(moat_limits, cpus_milli), MOAT_LIMIT_CPU, CPUS},
};

/* The request's limits and hosts as a policy overlay. */
static int overlay_of(char *const *opts, moat_policy *o, moat_error *err)
{
	for (size_t i = 0; opts && opts[i]; i++) {
		if (strncmp(opts[i], "--allow-host=", 13) == 0) {
			int r = moat_policy_add_allow_host(o, opts[i] + 13, err);
			if (r < 0)
				return r;
			/* As moat run's --allow-host: a host to reach is the
			 * gateway's network. */
			o->net = MOAT_NET_PROXY;
			continue;
		}
		for (size_t k = 0; k < ELEMENTSOF(limit_opts); k++) {
			size_t n = strlen(limit_opts[k].opt);
			if (strncmp(opts[i], limit_opts[k].opt, n) != 0)
				continue;
			const char *v = opts[i] + n;
			uint64_t x = 0;
			int r = limit_opts[k].unit == DUR    ? moat_parse_duration_ms(v, &x, err)
				: limit_opts[k].unit == SIZE  ? moat_parse_size(v, &x, err)
				: limit_opts[k].unit == COUNT ? moat_parse_count(v, &x, err)
							      : moat_parse_cpus_milli(v, &x, err);
			if (r < 0)
				return r;
			memcpy((char *)&o->limits + limit_opts[k].off, &x, sizeof(x));
			o->limits_set |= limit_opts[k].bit;
		}
	}
	return 0;
}

static bool path_within(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* Host paths, matched on the host's side. moat_policy_intersect compares
 * a nested run's paths inside its parent sandbox, where /tmp is the
 * sandbox's own and always writable; here a path is the host's, and only
 * the ceiling's own folders (and what they hold) may be bound. */
static int binds_within(const moat_policy *ceiling, const moat_policy *child, moat_error *err)
{
	for (size_t i = 0; i < child->n_binds; i++) {
		const moat_bind *b = &child->binds[i];
		bool rw = b->flags & MOAT_BIND_RW;
		bool ok = false;
		for (size_t k = 0; !ok && k < ceiling->n_binds; k++)
			ok = path_within(b->src, ceiling->binds[k].src) && (!rw || (ceiling->binds[k].flags & MOAT_BIND_RW));
		if (!ok)
			return moat_error_set(err, EACCES, "filesystem.%s: %s is not %s in the token ceiling",
					      rw ? "read_write" : "read_only", b->src, rw ? "writable" : "visible");
	}
	if (child->out_dir) {
		bool ok = false;
		for (size_t k = 0; !ok && k < ceiling->n_binds; k++)
			ok = path_within(child->out_dir, ceiling->binds[k].src) && (ceiling->binds[k].flags & MOAT_BIND_RW);
		if (!ok)
			return moat_error_set(err, EACCES, "filesystem.out: %s is not writable in the token ceiling",
					      child->out_dir);
	}
	if (child->stdin_path)
		return moat_error_set(err, EACCES, "stdin: a host file is not for a request under a token ceiling");
	return 0;
}

/* The request's own mistakes are its 400, whatever errno the policy code
 * gave them. */
static int as_input(moat_error *err)
{
	if (err->code != ENOMEM)
		err->code = MOAT_EINPUT;
	return -err->code;
}

int moatd_ceiling_apply(const moat_policy *ceiling, bool session, const char *policy_json, char *const *opts,
			char **ret_yaml, moat_error *err)
{
	const char *profile = "code";
	for (size_t i = 0; opts && opts[i]; i++)
		if (strncmp(opts[i], "--profile=", 10) == 0)
			profile = opts[i] + 10;
	_cleanup_policy_ moat_policy *child = NULL, *o = NULL, *eff = NULL;
	int r = policy_json ? moat_policy_parse(policy_json, strlen(policy_json), "policy", "/", NULL, &child, err)
			    : moat_policy_load_profile(profile, &child, err);
	if (r < 0)
		return as_input(err);
	if (!(o = moat_policy_overlay_new()))
		return moat_error_set(err, ENOMEM, "policy");
	if ((r = overlay_of(opts, o, err)) < 0 || (r = moat_policy_merge_overlay(child, o, err)) < 0)
		return as_input(err);
	if (session)
		moat__session_default_limits(child);
	if ((r = binds_within(ceiling, child, err)) < 0)
		return r;
	if (moat_policy_intersect(ceiling, child, &eff, err) < 0) {
		/* The intersection speaks of "the parent's": here that is the
		 * token's ceiling. */
		char msg[MOAT_ERROR_MAX];
		const char *p = strstr(err->msg, "the parent");
		if (p)
			snprintf(msg, sizeof(msg), "%.*sthe token ceiling%s", (int)(p - err->msg), err->msg,
				 p + strlen("the parent"));
		else
			snprintf(msg, sizeof(msg), "%s", err->msg);
		return moat_error_set(err, EACCES, "%s", msg);
	}
	char *y = moat_policy_to_yaml(eff);
	if (!y)
		return moat_error_set(err, ENOMEM, "policy");
	*ret_yaml = y;
	return 0;
}

int moatd_ceiling_check(const moat_policy *ceiling, moat_error *err)
{
	/* A request's binds are compared with the ceiling's on both sides
	 * (host folder here, path inside in moat_policy_intersect): one path
	 * for both keeps the two checks the same check. */
	for (size_t i = 0; i < ceiling->n_binds; i++)
		if (strcmp(ceiling->binds[i].src, ceiling->binds[i].dst) != 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "filesystem: %s:%s: a ceiling binds folders at their own path (HOST, not "
					      "HOST:PATH)",
					      ceiling->binds[i].src, ceiling->binds[i].dst);
	return 0;
}
