#include "result.h"
#include "hostpath.h"

#include <fcntl.h>
#include <jansson.h>
#include <string.h>

/* JSON integers are signed 64-bit: a count above that would print as a
 * negative number. Limits are bounded far below (config.c) and counters
 * cannot get there; should one ever, it reads as unknown, never negative. */
static json_t *json_u64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static const char *const status_names[_MOAT_STATUS_MAX] = {
	[MOAT_STATUS_EXITED] = "exited",
	[MOAT_STATUS_SIGNALED] = "signaled",
	[MOAT_STATUS_TIMEOUT] = "timeout",
	[MOAT_STATUS_CPU_LIMIT] = "cpu_limit",
	[MOAT_STATUS_OOM] = "oom",
	[MOAT_STATUS_PIDS_LIMIT] = "pids_limit",
	[MOAT_STATUS_OUTPUT_LIMIT] = "output_limit",
	[MOAT_STATUS_SETUP_ERROR] = "setup_error",
};

const char *moat_status_to_string(moat_status s)
{
	if (s < 0 || s >= _MOAT_STATUS_MAX)
		return "invalid";
	return status_names[s];
}

static const char *const limit_names[_MOAT_LIMIT_KIND_MAX] = {
	[MOAT_LIMIT_KIND_WALL] = "wall",     [MOAT_LIMIT_KIND_CPU] = "cpu",     [MOAT_LIMIT_KIND_MEMORY] = "memory",
	[MOAT_LIMIT_KIND_PIDS] = "pids",     [MOAT_LIMIT_KIND_CPUS] = "cpus",   [MOAT_LIMIT_KIND_OUTPUT] = "output",
	[MOAT_LIMIT_KIND_TMP] = "tmp",       [MOAT_LIMIT_KIND_DISK] = "disk",   [MOAT_LIMIT_KIND_FILES] = "files",
	[MOAT_LIMIT_KIND_FSIZE] = "fsize",   [MOAT_LIMIT_KIND_INODES] = "inodes",
};

static const char *const mech_names[_MOAT_MECH_MAX] = {
	[MOAT_MECH_NONE] = "none",   [MOAT_MECH_CGROUP] = "cgroup",         [MOAT_MECH_RLIMIT] = "rlimit",
	[MOAT_MECH_TIMER] = "timer", [MOAT_MECH_SUPERVISOR] = "supervisor", [MOAT_MECH_TMPFS] = "tmpfs",
};

const char *moat_limit_kind_to_string(moat_limit_kind k)
{
	if (k < 0 || k >= _MOAT_LIMIT_KIND_MAX)
		return "invalid";
	return limit_names[k];
}

const char *moat_mechanism_to_string(moat_mechanism m)
{
	if (m < 0 || m >= _MOAT_MECH_MAX)
		return "invalid";
	return mech_names[m];
}

void moat_result_enforce(moat_result *r, moat_limit_kind k, uint64_t v, moat_mechanism m)
{
	if (k < 0 || k >= _MOAT_LIMIT_KIND_MAX)
		return;
	r->enforced[k] = (moat_enforced){.set = true, .value = v, .by = m};
}

static json_t *enforced_json(const moat_result *r)
{
	json_t *o = json_object();
	for (int k = 0; k < _MOAT_LIMIT_KIND_MAX; k++) {
		const moat_enforced *e = &r->enforced[k];
		if (!e->set)
			continue;
		json_t *x = json_object();
		json_object_set_new(x, "limit", json_u64(e->value));
		json_object_set_new(x, "by", json_string(moat_mechanism_to_string(e->by)));
		json_object_set_new(o, limit_names[k], x);
	}
	return o;
}

void moat_result_init(moat_result *r)
{
	memset(r, 0, sizeof(*r));
	r->status = MOAT_STATUS_SETUP_ERROR;
	r->exit_code = -1;
	r->exit_status = 125;
	snprintf(r->isolation.cgroup, sizeof(r->isolation.cgroup), "none");
}

json_t *moat_isolation_to_json(const moat_isolation *i)
{
	json_t *o = json_object();
	json_object_set_new(o, "userns", json_boolean(i->userns));
	json_object_set_new(o, "mountns", json_boolean(i->mountns));
	json_object_set_new(o, "pidns", json_boolean(i->pidns));
	json_object_set_new(o, "netns", json_boolean(i->netns));
	json_object_set_new(o, "egress", json_string(i->egress[0] ? i->egress : "none"));
	json_object_set_new(o, "ipcns", json_boolean(i->ipcns));
	json_object_set_new(o, "utsns", json_boolean(i->utsns));
	json_object_set_new(o, "cgroupns", json_boolean(i->cgroupns));
	json_object_set_new(o, "mode", json_string(i->rootless ? "rootless" : "root"));
	json_t *map = json_object();
	json_object_set_new(map, "uid", json_integer(i->uid));
	json_object_set_new(map, "gid", json_integer(i->gid));
	json_object_set_new(map, "host_uid", json_integer(i->host_uid));
	json_object_set_new(map, "host_gid", json_integer(i->host_gid));
	json_object_set_new(o, "uid_map", map);
	json_object_set_new(o, "rootfs_readonly", json_boolean(i->rootfs_readonly));
	json_object_set_new(o, "proc_masked", json_boolean(i->proc_masked));
	json_object_set_new(o, "no_new_privs", json_boolean(i->no_new_privs));
	json_object_set_new(o, "caps_dropped", json_boolean(i->caps_dropped));
	if (i->seccomp) {
		json_t *s = json_object();
		json_object_set_new(s, "profile", json_string(i->seccomp_profile));
		json_object_set_new(s, "rules", json_integer(i->seccomp_rules));
		json_object_set_new(o, "seccomp", s);
	} else {
		json_object_set_new(o, "seccomp", json_false());
	}
	json_object_set_new(o, "landlock_abi", json_integer(i->landlock_abi));
	if (i->landlock_abi > 0)
		json_object_set_new(o, "landlock_rules", json_string(i->landlock_rules));
	json_object_set_new(o, "cgroup", json_string(i->cgroup));
	if (i->cgroup_note[0])
		json_object_set_new(o, "cgroup_note", json_string(i->cgroup_note));
	return o;
}

char *moat_result_to_json(const moat_result *r)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "status", json_string(moat_status_to_string(r->status)));
	json_object_set_new(o, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
	json_object_set_new(o, "signal", r->signal > 0 ? json_integer(r->signal) : json_null());
	json_object_set_new(o, "wall_ms", json_u64(r->wall_ms));
	json_object_set_new(o, "cpu_ms", json_u64(r->cpu_ms));
	json_object_set_new(o, "cpu_user_ms", json_u64(r->cpu_user_ms));
	json_object_set_new(o, "cpu_sys_ms", json_u64(r->cpu_sys_ms));
	json_object_set_new(o, "memory_peak_bytes",
			    r->memory_peak_known ? json_u64(r->memory_peak_bytes) : json_null());
	if (r->streams_merged) {
		json_object_set_new(o, "stdout_bytes", json_null());
		json_object_set_new(o, "stderr_bytes", json_null());
		json_object_set_new(o, "output_bytes", json_u64(r->stdout_bytes));
	} else {
		json_object_set_new(o, "stdout_bytes", r->stdout_uncounted ? json_null() : json_u64(r->stdout_bytes));
		json_object_set_new(o, "stderr_bytes", json_u64(r->stderr_bytes));
	}
	json_object_set_new(o, "output_truncated", json_boolean(r->output_truncated));
	json_object_set_new(o, "output_dropped_bytes", json_u64(r->output_dropped_bytes));
	json_object_set_new(o, "limit", r->limit_hit[0] ? json_string(r->limit_hit) : json_null());
	if (r->out_checked) {
		json_t *od = json_object();
		json_object_set_new(od, "removed", json_integer(r->out_removed));
		json_object_set_new(od, "modes_fixed", json_integer(r->out_fixed));
		json_object_set_new(o, "out_sanitized", od);
	}
	if (r->error[0])
		json_object_set_new(o, "error", json_string(r->error));
	json_object_set_new(o, "exit_status", json_integer(r->exit_status));
	json_object_set_new(o, "isolation", moat_isolation_to_json(&r->isolation));
	json_object_set_new(o, "enforced", enforced_json(r));
	if (r->limits_note[0])
		json_object_set_new(o, "limits_note", json_string(r->limits_note));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

json_t *moat__result_sandbox_json(const moat_result *r, bool cpu_known)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (cpu_known) {
		json_object_set_new(o, "cpu_user_ms", json_u64(r->cpu_user_ms));
		json_object_set_new(o, "cpu_sys_ms", json_u64(r->cpu_sys_ms));
	}
	json_object_set_new(o, "memory_peak_bytes", r->memory_peak_known ? json_u64(r->memory_peak_bytes) : json_null());
	json_object_set_new(o, "isolation", moat_isolation_to_json(&r->isolation));
	json_object_set_new(o, "enforced", enforced_json(r));
	if (r->limits_note[0])
		json_object_set_new(o, "limits_note", json_string(r->limits_note));
	return o;
}

int moat_result_write(const moat_result *r, const char *path, moat_error *err)
{
	_cleanup_free_ char *s = moat_result_to_json(r);
	if (!s)
		return moat_error_set(err, ENOMEM, "result JSON");
	_cleanup_close_ int fd = -1;
	int out = STDOUT_FILENO;
	if (strcmp(path, "-") != 0) {
		fd = moat__hostpath_open("result:", path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644, err);
		if (fd < 0)
			return fd;
		out = fd;
	}
	size_t n = strlen(s);
	s[n] = '\0';
	int rc = moat__write_all(out, s, n);
	if (rc >= 0)
		rc = moat__write_all(out, "\n", 1);
	if (rc < 0)
		return moat_error_set(err, rc, "write result %s", path);
	return 0;
}
