/* moatd's warm pool: configuration and the pooled-or-cold decision
 * (poolplan.h). Pure. */
#include "poolplan.h"

#include <jansson.h>
#include <string.h>

#include "policy.h"
#include "units.h"
#include "util.h"

int moatd_pool_conf_parse(json_t *v, moatd_pool_conf *ret, moat_error *err)
{
	if (!json_is_object(v))
		return moat_error_set(err, MOAT_EINPUT, "pool: expected a mapping of profile names to counts");
	moatd_pool_conf c;
	memset(&c, 0, sizeof(c));
	const char *k;
	json_t *e;
	json_object_foreach(v, k, e) {
		if (c.n == MOATD_POOL_MAX_PROFILES)
			return moat_error_set(err, MOAT_EINPUT, "pool: more than %d profiles", MOATD_POOL_MAX_PROFILES);
		/* Only a built-in profile: its policy is known without any
		 * file, the same at every start. */
		moat_error perr = {0};
		_cleanup_policy_ moat_policy *p = NULL;
		if (strlen(k) > MOATD_POOL_PROFILE_MAX || moat_policy_load_profile(k, &p, &perr) < 0)
			return moat_error_set(err, MOAT_EINPUT, "pool.%.64s: %s", k,
					      perr.msg[0] ? perr.msg : "not a profile name");
		if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > MOATD_POOL_MAX_SIZE)
			return moat_error_set(err, MOAT_EINPUT, "pool.%s: expected a count from 0 to %d", k,
					      MOATD_POOL_MAX_SIZE);
		snprintf(c.e[c.n].profile, sizeof(c.e[c.n].profile), "%s", k);
		c.e[c.n].size = (unsigned)json_integer_value(e);
		c.e[c.n].wall_ms = p->limits.wall_ms;
		c.e[c.n].output_bytes = p->limits.output_bytes;
		c.n++;
	}
	*ret = c;
	return 0;
}

bool moatd_pool_plan_run(const moatd_pool_conf *c, char *const *opts, bool has_policy, size_t n_files,
			 moatd_pool_plan *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->profile = -1;
	if (has_policy) {
		ret->why_cold = "policy";
		return false;
	}
	if (n_files) {
		ret->why_cold = "files";
		return false;
	}
	const char *profile = "code";
	bool time_set = false;
	for (size_t i = 0; opts && opts[i]; i++) {
		const char *o = opts[i];
		if (moat__startswith(o, "--profile="))
			profile = o + 10;
		else if (moat__startswith(o, "--env=")) {
			/* "--env=NAME" alone passes moatd's own variable: not
			 * something a pooled sandbox may see differently. */
			if (!strchr(o + 6, '=') || ret->n_env == ELEMENTSOF(ret->env) - 1) {
				ret->why_cold = "env";
				return false;
			}
			ret->env[ret->n_env++] = o + 6;
		} else if (moat__startswith(o, "--cwd="))
			ret->cwd = o + 6;
		else if (moat__startswith(o, "--time=")) {
			moat_error e = {0};
			if (moat_parse_duration_ms(o + 7, &ret->time_ms, &e) < 0 || ret->time_ms == 0) {
				ret->why_cold = "limits";
				return false;
			}
			time_set = true;
		} else {
			/* A limit the cgroup or rlimits hold is set when the
			 * sandbox is made. */
			static const char *const limits[] = {"--mem=", "--pids=", "--cpu=", "--output=",
							     "--tmp-size=", "--files=", "--cpus="};
			ret->why_cold = "options";
			for (size_t l = 0; l < ELEMENTSOF(limits); l++)
				if (moat__startswith(o, limits[l]))
					ret->why_cold = "limits";
			return false;
		}
	}
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->e[i].profile, profile) == 0 && c->e[i].size > 0) {
			ret->profile = (int)i;
			ret->output_bytes = c->e[i].output_bytes;
			if (!time_set)
				ret->time_ms = c->e[i].wall_ms;
			return true;
		}
	ret->why_cold = "profile";
	return false;
}
