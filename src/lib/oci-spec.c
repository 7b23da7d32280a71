/* config.json (runtime-spec 1.x) into moat_oci_spec: see oci-spec.h for
 * what is honoured, narrowed and refused. Pure: nothing here touches the
 * system. */
#include "oci-spec.h"
#include "policy.h"

#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* A field's name as messages show it: "process.rlimits[2].type". */
#define FIELD_MAX 256

static void jsonp(json_t **j)
{
	json_decref(*j);
}
#define _cleanup_json_ _cleanup_(jsonp)

static const char *const cap_names[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
	"CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
	"CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

const char *moat_oci_cap_to_string(unsigned cap)
{
	return cap < ELEMENTSOF(cap_names) ? cap_names[cap] : NULL;
}

int moat_oci_cap_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(cap_names); i++)
		if (strcmp(s, cap_names[i]) == 0)
			return (int)i;
	return -1;
}

static const char *const ns_names[_MOAT_OCI_NS_MAX] = {
	[MOAT_OCI_NS_PID] = "pid", [MOAT_OCI_NS_NETWORK] = "network", [MOAT_OCI_NS_MOUNT] = "mount",
	[MOAT_OCI_NS_IPC] = "ipc", [MOAT_OCI_NS_UTS] = "uts",         [MOAT_OCI_NS_USER] = "user",
	[MOAT_OCI_NS_CGROUP] = "cgroup", [MOAT_OCI_NS_TIME] = "time",
};

const char *moat_oci_ns_to_string(moat_oci_ns ns)
{
	return ns >= 0 && ns < _MOAT_OCI_NS_MAX ? ns_names[ns] : NULL;
}

moat_oci_ns moat_oci_ns_from_string(const char *s)
{
	for (int i = 0; i < _MOAT_OCI_NS_MAX; i++)
		if (strcmp(s, ns_names[i]) == 0)
			return (moat_oci_ns)i;
	return _MOAT_OCI_NS_INVALID;
}

static const char *const action_names[_MOAT_OCI_SCMP_MAX] = {
	[MOAT_OCI_SCMP_KILL] = "SCMP_ACT_KILL",   [MOAT_OCI_SCMP_KILL_PROCESS] = "SCMP_ACT_KILL_PROCESS",
	[MOAT_OCI_SCMP_TRAP] = "SCMP_ACT_TRAP",   [MOAT_OCI_SCMP_ERRNO] = "SCMP_ACT_ERRNO",
	[MOAT_OCI_SCMP_TRACE] = "SCMP_ACT_TRACE", [MOAT_OCI_SCMP_ALLOW] = "SCMP_ACT_ALLOW",
	[MOAT_OCI_SCMP_LOG] = "SCMP_ACT_LOG",
};

const char *moat_oci_seccomp_action_to_string(moat_oci_seccomp_action a)
{
	return a >= 0 && a < _MOAT_OCI_SCMP_MAX ? action_names[a] : NULL;
}

static const char *const op_names[_MOAT_OCI_SCMP_CMP_MAX] = {
	[MOAT_OCI_SCMP_CMP_NE] = "SCMP_CMP_NE", [MOAT_OCI_SCMP_CMP_LT] = "SCMP_CMP_LT",
	[MOAT_OCI_SCMP_CMP_LE] = "SCMP_CMP_LE", [MOAT_OCI_SCMP_CMP_EQ] = "SCMP_CMP_EQ",
	[MOAT_OCI_SCMP_CMP_GE] = "SCMP_CMP_GE", [MOAT_OCI_SCMP_CMP_GT] = "SCMP_CMP_GT",
	[MOAT_OCI_SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

const char *moat_oci_seccomp_op_to_string(moat_oci_seccomp_op op)
{
	return op >= 0 && op < _MOAT_OCI_SCMP_CMP_MAX ? op_names[op] : NULL;
}

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{"RLIMIT_AS", RLIMIT_AS},         {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_CPU", RLIMIT_CPU},
	{"RLIMIT_DATA", RLIMIT_DATA},     {"RLIMIT_FSIZE", RLIMIT_FSIZE},       {"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_NOFILE", RLIMIT_NOFILE}, {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO}, {"RLIMIT_RTTIME", RLIMIT_RTTIME},     {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_STACK", RLIMIT_STACK},
};

const char *moat_oci_rlimit_to_string(int resource)
{
	for (size_t i = 0; i < ELEMENTSOF(rlimit_names); i++)
		if (rlimit_names[i].resource == resource)
			return rlimit_names[i].name;
	return NULL;
}

static int rlimit_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(rlimit_names); i++)
		if (strcmp(s, rlimit_names[i].name) == 0)
			return rlimit_names[i].resource;
	return -1;
}

bool moat_oci_sysctl_is_namespaced(const char *key)
{
	/* The ipc namespace's own (ipc/ipc_sysctl.c, ipc/mq_sysctl.c), the
	 * uts namespace's names, and everything under net (per network
	 * namespace); moat always gives the container all three. */
	static const char *const ipc[] = {
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem", "kernel.shmall",
		"kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", "kernel.domainname", "kernel.hostname",
	};
	for (size_t i = 0; i < ELEMENTSOF(ipc); i++)
		if (strcmp(key, ipc[i]) == 0)
			return true;
	return strncmp(key, "fs.mqueue.", 10) == 0 || strncmp(key, "net.", 4) == 0;
}

/* ---- tmpfs mounts ---- */

/* A tmpfs "size=" value: bytes, or with a k, m or g suffix (tmpfs's own
 * "%" of memory is refused: it is the host's memory). */
static bool tmpfs_size(const char *v, uint64_t *ret)
{
	char *end = NULL;
	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno)
		return false;
	unsigned shift = 0;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10, end++;
		break;
	case 'm': case 'M':
		shift = 20, end++;
		break;
	case 'g': case 'G':
		shift = 30, end++;
		break;
	default:
		return false;
	}
	if (*end || n > (UINT64_MAX >> shift))
		return false;
	*ret = (uint64_t)n << shift;
	return true;
}

int moat_oci_tmpfs_options(const moat_oci_mount *m, uint64_t cap, const char *field, moat_tmpfs_mount *ret,
			   moat_error *err)
{
	/* Options that change nothing moat keeps: moat's mounts never
	 * propagate and their times are the kernel's default. */
	static const char *const ignored[] = {"rw", "nosuid", "nodev", "exec", "strictatime", "relatime", "noatime",
					      "nodiratime", "atime", "diratime", "private", "rprivate", "slave",
					      "rslave", "shared", "rshared", "unbindable", "runbindable", NULL};
	memset(ret, 0, sizeof(*ret));
	ret->mode = 01777;
	ret->size = cap;
	for (size_t i = 0; m->options && m->options[i]; i++) {
		const char *o = m->options[i];
		bool known = false;
		for (size_t k = 0; ignored[k] && !known; k++)
			known = strcmp(o, ignored[k]) == 0;
		if (known)
			continue;
		if (strcmp(o, "ro") == 0) {
			ret->readonly = true;
		} else if (strcmp(o, "noexec") == 0) {
			ret->noexec = true;
		} else if (strncmp(o, "size=", 5) == 0) {
			uint64_t v;
			if (!tmpfs_size(o + 5, &v) || v == 0)
				return moat_error_set(err, MOAT_EINPUT,
						      "%s.options[%zu]: \"%.64s\" is not a size (bytes, or k, m, g)", field, i,
						      o);
			/* Capped: a tmpfs is memory, and the policy bounds the
			 * container's own file systems. */
			ret->size = v < cap ? v : cap;
		} else if (strncmp(o, "mode=", 5) == 0) {
			char *end = NULL;
			errno = 0;
			unsigned long v = strtoul(o + 5, &end, 8);
			if (errno || end == o + 5 || *end || v > 07777)
				return moat_error_set(err, MOAT_EINPUT, "%s.options[%zu]: \"%.64s\" is not an octal mode",
						      field, i, o);
			/* No setuid or setgid folder: permission bits and the
			 * sticky bit only. */
			ret->mode = (unsigned)v & 01777;
		} else if (strcmp(o, "suid") == 0 || strcmp(o, "dev") == 0) {
			return moat_error_set(err, MOAT_EINPUT,
					      "%s.options[%zu]: %s is refused: moat mounts every file system nosuid and nodev",
					      field, i, o);
		} else {
			return moat_error_set(err, MOAT_EINPUT, "%s.options[%zu]: tmpfs option \"%.64s\" is not supported",
					      field, i, o);
		}
	}
	if (!(ret->dst = strdup(m->destination)))
		return moat_error_set(err, ENOMEM, "%s", field);
	return 0;
}

/* ---- small readers; each names the field in its errors ---- */

/* A string member of o, copied; absent: *ret stays NULL (an error when
 * required). */
static int get_string(json_t *o, const char *key, const char *parent, bool required, char **ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return moat_error_set(err, MOAT_EINPUT, "%s%s%s: required", parent, *parent ? "." : "", key);
		return 0;
	}
	if (!json_is_string(v))
		return moat_error_set(err, MOAT_EINPUT, "%s%s%s: expected a string", parent, *parent ? "." : "", key);
	if (json_string_length(v) > MOAT_OCI_MAX_STRING)
		return moat_error_set(err, MOAT_EINPUT, "%s%s%s: longer than %u bytes", parent, *parent ? "." : "", key,
				      MOAT_OCI_MAX_STRING);
	char *s = strdup(json_string_value(v));
	if (!s)
		return moat_error_set(err, ENOMEM, "%s.%s", parent, key);
	free(*ret);
	*ret = s;
	return 0;
}

static int get_bool(json_t *o, const char *key, const char *parent, bool *ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: expected true or false", parent, key);
	*ret = json_is_true(v);
	return 0;
}

/* An integer in [min, max]; absent leaves *ret. */
static int get_int(json_t *o, const char *key, const char *parent, json_int_t min, json_int_t max, bool required,
		   json_int_t *ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return moat_error_set(err, MOAT_EINPUT, "%s.%s: required", parent, key);
		return 0;
	}
	if (!json_is_integer(v))
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: expected an integer", parent, key);
	json_int_t n = json_integer_value(v);
	if (n < min || n > max)
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: %lld is out of range (%lld to %lld)", parent, key,
				      (long long)n, (long long)min, (long long)max);
	*ret = n;
	return 0;
}

/* A uint64 member: jansson keeps integers as long long, so values above
 * INT64_MAX (a seccomp mask of all ones) arrive as reals and are refused
 * unless exact. */
static int get_u64(json_t *o, const char *key, const char *parent, uint64_t *ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d >= 0 && d < 18446744073709551616.0 && d == (double)(uint64_t)d) {
			*ret = (uint64_t)d;
			return 0;
		}
	}
	return moat_error_set(err, MOAT_EINPUT, "%s.%s: expected an integer from 0 to 2^64-1", parent, key);
}

/* A list of strings, each checked by check (may be NULL). */
static int get_strv(json_t *o, const char *key, const char *parent, size_t cap, size_t max_len,
		    int (*check)(const char *s, const char *field, moat_error *err), char ***ret, moat_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	char field[FIELD_MAX];
	snprintf(field, sizeof(field), "%s%s%s", parent, *parent ? "." : "", key);
	if (!json_is_array(v))
		return moat_error_set(err, MOAT_EINPUT, "%s: expected a list of strings", field);
	size_t n = json_array_size(v);
	if (n > cap)
		return moat_error_set(err, MOAT_EINPUT, "%s: more than %zu entries", field, cap);
	_cleanup_strv_free_ char **out = calloc(n + 1, sizeof(char *));
	if (!out)
		return moat_error_set(err, ENOMEM, "%s", field);
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		char f[FIELD_MAX];
		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		if (!json_is_string(e))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected a string", f);
		if (json_string_length(e) > max_len)
			return moat_error_set(err, MOAT_EINPUT, "%s: longer than %zu bytes", f, max_len);
		if (check) {
			int r = check(json_string_value(e), f, err);
			if (r < 0)
				return r;
		}
		out[i] = strdup(json_string_value(e));
		if (!out[i])
			return moat_error_set(err, ENOMEM, "%s", f);
	}
	moat__strv_free(*ret);
	*ret = TAKE_PTR(out);
	return 0;
}

static int check_abs_path(const char *s, const char *field, moat_error *err)
{
	if (!moat_path_is_clean_absolute(s))
		return moat_error_set(err, MOAT_EINPUT, "%s: \"%s\" is not an absolute path without '.', '..' or '//'",
				      field, s);
	return 0;
}

static int check_env(const char *s, const char *field, moat_error *err)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return moat_error_set(err, MOAT_EINPUT, "%s: \"%.64s\" is not NAME=VALUE", field, s);
	return 0;
}

/* ---- sections ---- */

static int parse_caps(json_t *process, moat_oci_spec *s, moat_error *err)
{
	json_t *c = json_object_get(process, "capabilities");
	if (!c || json_is_null(c))
		return 0;
	if (!json_is_object(c))
		return moat_error_set(err, MOAT_EINPUT, "process.capabilities: expected an object");
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
	uint64_t *dst[] = {&s->caps_bounding, &s->caps_effective, &s->caps_inheritable, &s->caps_permitted,
			   &s->caps_ambient};
	for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
		json_t *l = json_object_get(c, sets[i]);
		if (!l || json_is_null(l))
			continue;
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "process.capabilities.%s", sets[i]);
		if (!json_is_array(l))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected a list of capability names", field);
		if (json_array_size(l) > 64)
			return moat_error_set(err, MOAT_EINPUT, "%s: more than 64 entries", field);
		size_t j;
		json_t *e;
		json_array_foreach(l, j, e) {
			if (!json_is_string(e))
				return moat_error_set(err, MOAT_EINPUT, "%s[%zu]: expected a capability name", field, j);
			int cap = moat_oci_cap_from_string(json_string_value(e));
			if (cap < 0)
				return moat_error_set(err, MOAT_EINPUT, "%s[%zu]: unknown capability \"%.64s\"", field, j,
						      json_string_value(e));
			*dst[i] |= UINT64_C(1) << cap;
		}
	}
	/* A capability is granted only when moat allows it, whatever the
	 * spec asks. */
	s->caps_granted = (s->caps_bounding | s->caps_effective | s->caps_permitted | s->caps_inheritable |
			   s->caps_ambient) &
			  MOAT_OCI_CAPS_ALLOWED;
	return 0;
}

static int parse_rlimits(json_t *process, moat_oci_spec *s, moat_error *err)
{
	json_t *l = json_object_get(process, "rlimits");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return moat_error_set(err, MOAT_EINPUT, "process.rlimits: expected a list");
	size_t n = json_array_size(l);
	if (n > ELEMENTSOF(rlimit_names))
		return moat_error_set(err, MOAT_EINPUT, "process.rlimits: more than %zu entries", ELEMENTSOF(rlimit_names));
	s->rlimits = calloc(n ? n : 1, sizeof(*s->rlimits));
	if (!s->rlimits)
		return moat_error_set(err, ENOMEM, "process.rlimits");
	size_t i;
	json_t *e;
	json_array_foreach(l, i, e) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "process.rlimits[%zu]", i);
		if (!json_is_object(e))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
		_cleanup_free_ char *type = NULL;
		int r = get_string(e, "type", field, true, &type, err);
		if (r < 0)
			return r;
		int res = rlimit_from_string(type);
		if (res < 0)
			return moat_error_set(err, MOAT_EINPUT, "%s.type: unknown resource \"%.64s\"", field, type);
		for (size_t k = 0; k < s->n_rlimits; k++)
			if (s->rlimits[k].resource == res)
				return moat_error_set(err, MOAT_EINPUT, "%s.type: %s is given twice", field, type);
		moat_oci_rlimit *rl = &s->rlimits[s->n_rlimits];
		rl->resource = res;
		rl->soft = rl->hard = RLIM_INFINITY;
		if (!json_object_get(e, "soft") || !json_object_get(e, "hard"))
			return moat_error_set(err, MOAT_EINPUT, "%s: soft and hard are required", field);
		r = get_u64(e, "soft", field, &rl->soft, err);
		if (r >= 0)
			r = get_u64(e, "hard", field, &rl->hard, err);
		if (r < 0)
			return r;
		if (rl->soft > rl->hard)
			return moat_error_set(err, MOAT_EINPUT, "%s: soft %llu is above hard %llu", field,
					      (unsigned long long)rl->soft, (unsigned long long)rl->hard);
		s->n_rlimits++;
	}
	return 0;
}

static int parse_user(json_t *process, moat_oci_spec *s, moat_error *err)
{
	json_t *u = json_object_get(process, "user");
	if (!u || json_is_null(u))
		return 0;
	if (!json_is_object(u))
		return moat_error_set(err, MOAT_EINPUT, "process.user: expected an object");
	json_int_t uid = 0, gid = 0;
	/* (uid_t)-1 means "unchanged" to setresuid, so it is not an id. */
	int r = get_int(u, "uid", "process.user", 0, UINT32_MAX - 1, false, &uid, err);
	if (r >= 0)
		r = get_int(u, "gid", "process.user", 0, UINT32_MAX - 1, false, &gid, err);
	if (r < 0)
		return r;
	s->user_set = true;
	s->uid = (uid_t)uid;
	s->gid = (gid_t)gid;
	json_t *g = json_object_get(u, "additionalGids");
	if (!g || json_is_null(g))
		return 0;
	if (!json_is_array(g))
		return moat_error_set(err, MOAT_EINPUT, "process.user.additionalGids: expected a list of integers");
	size_t n = json_array_size(g);
	if (n > MOAT_OCI_MAX_LIST)
		return moat_error_set(err, MOAT_EINPUT, "process.user.additionalGids: more than %u entries",
				      MOAT_OCI_MAX_LIST);
	s->additional_gids = calloc(n ? n : 1, sizeof(gid_t));
	if (!s->additional_gids)
		return moat_error_set(err, ENOMEM, "process.user.additionalGids");
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(g, i);
		if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= UINT32_MAX)
			return moat_error_set(err, MOAT_EINPUT, "process.user.additionalGids[%zu]: expected a group id",
					      i);
		gid_t ag = (gid_t)json_integer_value(e);
		/* The sandbox's user namespace maps one user and one group
		 * (process.user.uid and gid, as the one unprivileged host id
		 * moat runs as); a supplementary group would be an unmapped
		 * id, which setgroups cannot give. */
		if (ag != s->gid)
			return moat_error_set(err, MOAT_EINPUT,
					      "process.user.additionalGids[%zu]: group %u is not mapped in the sandbox's "
					      "user namespace (moat maps only process.user.gid %u); refused",
					      i, (unsigned)ag, (unsigned)s->gid);
		s->additional_gids[s->n_additional_gids++] = ag;
	}
	return 0;
}

static int parse_process(json_t *p, moat_oci_spec *s, moat_error *err)
{
	if (!json_is_object(p))
		return moat_error_set(err, MOAT_EINPUT, "process: expected an object");
	int r = get_bool(p, "terminal", "process", &s->terminal, err);
	if (r < 0)
		return r;
	r = get_strv(p, "args", "process", MOAT_MAX_ARGS, MOAT_MAX_ENV_BYTES, NULL, &s->args, err);
	if (r < 0)
		return r;
	if (!s->args || !s->args[0])
		return moat_error_set(err, MOAT_EINPUT, "process.args: required, with at least the program");
	if (!s->args[0][0])
		return moat_error_set(err, MOAT_EINPUT, "process.args[0]: empty program name");
	r = get_strv(p, "env", "process", MOAT_MAX_ENV, MOAT_MAX_ENV_BYTES, check_env, &s->env, err);
	if (r < 0)
		return r;
	if (!s->env) {
		s->env = calloc(1, sizeof(char *));
		if (!s->env)
			return moat_error_set(err, ENOMEM, "process.env");
	}
	r = get_string(p, "cwd", "process", true, &s->cwd, err);
	if (r < 0)
		return r;
	/* runtime-spec: cwd MUST be an absolute path; a trailing slash is
	 * fine. */
	r = check_abs_path(s->cwd, "process.cwd", err);
	if (r < 0)
		return r;
	r = parse_user(p, s, err);
	if (r >= 0)
		r = parse_rlimits(p, s, err);
	if (r >= 0)
		r = parse_caps(p, s, err);
	if (r >= 0)
		r = get_bool(p, "noNewPrivileges", "process", &s->no_new_privileges, err);
	json_int_t oom = 0;
	if (r >= 0 && json_object_get(p, "oomScoreAdj") && !json_is_null(json_object_get(p, "oomScoreAdj")) &&
	    (r = get_int(p, "oomScoreAdj", "process", -1000, 1000, false, &oom, err)) >= 0) {
		s->oom_score_adj_set = true;
		s->oom_score_adj = (int)oom;
	}
	return r;
}

static int parse_mounts(json_t *root, moat_oci_spec *s, moat_error *err)
{
	json_t *l = json_object_get(root, "mounts");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return moat_error_set(err, MOAT_EINPUT, "mounts: expected a list");
	size_t n = json_array_size(l);
	if (n > MOAT_OCI_MAX_MOUNTS)
		return moat_error_set(err, MOAT_EINPUT, "mounts: more than %u entries", MOAT_OCI_MAX_MOUNTS);
	s->mounts = calloc(n ? n : 1, sizeof(*s->mounts));
	if (!s->mounts)
		return moat_error_set(err, ENOMEM, "mounts");
	size_t i;
	json_t *e;
	json_array_foreach(l, i, e) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "mounts[%zu]", i);
		if (!json_is_object(e))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
		moat_oci_mount *m = &s->mounts[s->n_mounts++];
		int r = get_string(e, "destination", field, true, &m->destination, err);
		if (r >= 0)
			r = get_string(e, "type", field, false, &m->type, err);
		if (r >= 0)
			r = get_string(e, "source", field, false, &m->source, err);
		if (r < 0)
			return r;
		char f[FIELD_MAX];
		snprintf(f, sizeof(f), "%s.destination", field);
		r = check_abs_path(m->destination, f, err);
		if (r < 0)
			return r;
		r = get_strv(e, "options", field, MOAT_OCI_MAX_MOUNT_OPTIONS, MOAT_OCI_MAX_STRING, NULL, &m->options, err);
		if (r < 0)
			return r;
		m->bind = m->type && strcmp(m->type, "bind") == 0;
		for (char **o = m->options; o && *o; o++) {
			if (strcmp(*o, "bind") == 0 || strcmp(*o, "rbind") == 0)
				m->bind = true;
			else if (strcmp(*o, "ro") == 0)
				m->readonly = true;
			else if (strcmp(*o, "rw") == 0)
				m->readonly = false;
		}
		if (m->bind && (!m->source || !m->source[0]))
			return moat_error_set(err, MOAT_EINPUT, "%s.source: a bind mount needs a source", field);
		if (!m->bind && !m->type)
			return moat_error_set(err, MOAT_EINPUT, "%s.type: required for a mount that is not a bind", field);
	}
	return 0;
}

static int parse_id_mappings(json_t *linux_, const char *key, moat_oci_id_mapping **ret, size_t *ret_n,
			     moat_error *err)
{
	json_t *l = json_object_get(linux_, key);
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return moat_error_set(err, MOAT_EINPUT, "linux.%s: expected a list", key);
	size_t n = json_array_size(l);
	if (n > MOAT_OCI_MAX_ID_MAPPINGS)
		return moat_error_set(err, MOAT_EINPUT, "linux.%s: more than %u entries", key, MOAT_OCI_MAX_ID_MAPPINGS);
	moat_oci_id_mapping *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return moat_error_set(err, ENOMEM, "linux.%s", key);
	*ret = v;
	size_t i;
	json_t *e;
	json_array_foreach(l, i, e) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "linux.%s[%zu]", key, i);
		if (!json_is_object(e))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
		json_int_t c = 0, h = 0, sz = 0;
		int r = get_int(e, "containerID", field, 0, UINT32_MAX - 1, true, &c, err);
		if (r >= 0)
			r = get_int(e, "hostID", field, 0, UINT32_MAX - 1, true, &h, err);
		if (r >= 0)
			r = get_int(e, "size", field, 1, UINT32_MAX, true, &sz, err);
		if (r < 0)
			return r;
		/* A range past the last id wraps in the kernel's eyes: refused
		 * here rather than by write(2) later. */
		if (c + sz > (json_int_t)UINT32_MAX || h + sz > (json_int_t)UINT32_MAX)
			return moat_error_set(err, MOAT_EINPUT, "%s: the range runs past id 4294967294", field);
		v[i] = (moat_oci_id_mapping){(uint32_t)c, (uint32_t)h, (uint32_t)sz};
		*ret_n = i + 1;
	}
	return 0;
}

static int parse_namespaces(json_t *linux_, moat_oci_spec *s, moat_error *err)
{
	json_t *l = json_object_get(linux_, "namespaces");
	if (l && !json_is_null(l)) {
		if (!json_is_array(l))
			return moat_error_set(err, MOAT_EINPUT, "linux.namespaces: expected a list");
		if (json_array_size(l) > _MOAT_OCI_NS_MAX)
			return moat_error_set(err, MOAT_EINPUT, "linux.namespaces: more than %d entries",
					      _MOAT_OCI_NS_MAX);
		size_t i;
		json_t *e;
		json_array_foreach(l, i, e) {
			char field[FIELD_MAX];
			snprintf(field, sizeof(field), "linux.namespaces[%zu]", i);
			if (!json_is_object(e))
				return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
			_cleanup_free_ char *type = NULL, *path = NULL;
			int r = get_string(e, "type", field, true, &type, err);
			if (r >= 0)
				r = get_string(e, "path", field, false, &path, err);
			if (r < 0)
				return r;
			moat_oci_ns ns = moat_oci_ns_from_string(type);
			if (ns < 0)
				return moat_error_set(err, MOAT_EINPUT, "%s.type: unknown namespace type \"%.32s\"", field,
						      type);
			if (s->namespaces & (1u << ns))
				return moat_error_set(err, MOAT_EINPUT, "%s.type: %s is listed twice", field, type);
			/* Joining a namespace that exists already would put the
			 * container beside whatever else lives there (the
			 * host's, or another container's). A pod's network,
			 * ipc and uts namespaces may be joined: the runtime
			 * (oci.c) lets it only when the path is a namespace of
			 * another moat-oci container under the same --root,
			 * and refuses anything else. Other types never. */
			if (path && path[0]) {
				if (ns != MOAT_OCI_NS_NETWORK && ns != MOAT_OCI_NS_IPC && ns != MOAT_OCI_NS_UTS)
					return moat_error_set(err, MOAT_EINPUT,
							      "%s.path: joining the existing %s namespace %.256s is "
							      "refused: moat gives every container %s namespace of its "
							      "own (only network, ipc and uts namespaces of another "
							      "moat-oci container may be joined)",
							      field, type, path, type);
				if (path[0] != '/')
					return moat_error_set(err, MOAT_EINPUT, "%s.path: %.256s is not an absolute path",
							      field, path);
				s->ns_paths[ns] = TAKE_PTR(path);
				s->ns_path_index[ns] = i;
			}
			s->namespaces |= 1u << ns;
		}
	}
	/* A type left out means the host's namespace (runtime-spec). */
	static const moat_oci_ns required[] = {MOAT_OCI_NS_MOUNT, MOAT_OCI_NS_PID, MOAT_OCI_NS_NETWORK, MOAT_OCI_NS_IPC,
					       MOAT_OCI_NS_UTS};
	for (size_t i = 0; i < ELEMENTSOF(required); i++)
		if (!(s->namespaces & (1u << required[i])))
			return moat_error_set(err, MOAT_EINPUT,
					      "linux.namespaces: no \"%s\" entry, which asks to share the host's %s "
					      "namespace; moat refuses that",
					      ns_names[required[i]], ns_names[required[i]]);
	if (s->namespaces & (1u << MOAT_OCI_NS_TIME))
		return moat_error_set(err, MOAT_EINPUT, "linux.namespaces: a time namespace is not supported");
	return 0;
}

/* A limit of the spec: negative (-1) means unlimited; runc reads 0 as
 * "not set" for memory and pids. */
static int resource_limit(json_t *o, const char *key, const char *field, size_t limit_offset, uint64_t *ret,
			  moat_error *err)
{
	json_int_t v = 0;
	int r = get_int(o, key, field, INT64_MIN, INT64_MAX, false, &v, err);
	if (r < 0)
		return r;
	if (v <= 0)
		return 0;
	moat_error sub = {0};
	if (moat_limit_check(limit_offset, (uint64_t)v, &sub) < 0)
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: %s", field, key, sub.msg);
	*ret = (uint64_t)v;
	return 0;
}

static int parse_resources(json_t *linux_, moat_oci_spec *s, moat_error *err)
{
	json_t *res = json_object_get(linux_, "resources");
	if (!res || json_is_null(res))
		return 0;
	if (!json_is_object(res))
		return moat_error_set(err, MOAT_EINPUT, "linux.resources: expected an object");
	json_t *mem = json_object_get(res, "memory");
	if (mem && !json_is_null(mem)) {
		if (!json_is_object(mem))
			return moat_error_set(err, MOAT_EINPUT, "linux.resources.memory: expected an object");
		int r = resource_limit(mem, "limit", "linux.resources.memory", offsetof(moat_limits, memory_bytes),
				       &s->memory_bytes, err);
		if (r < 0)
			return r;
	}
	json_t *pids = json_object_get(res, "pids");
	if (pids && !json_is_null(pids)) {
		if (!json_is_object(pids))
			return moat_error_set(err, MOAT_EINPUT, "linux.resources.pids: expected an object");
		int r = resource_limit(pids, "limit", "linux.resources.pids", offsetof(moat_limits, pids), &s->pids, err);
		if (r < 0)
			return r;
	}
	json_t *cpu = json_object_get(res, "cpu");
	if (cpu && !json_is_null(cpu)) {
		if (!json_is_object(cpu))
			return moat_error_set(err, MOAT_EINPUT, "linux.resources.cpu: expected an object");
		json_int_t quota = -1, period = 100000, shares = 0;
		int r = get_int(cpu, "quota", "linux.resources.cpu", INT64_MIN, INT64_MAX, false, &quota, err);
		if (r >= 0)
			r = get_int(cpu, "period", "linux.resources.cpu", 1000, 1000000, false, &period, err);
		if (r >= 0)
			r = get_int(cpu, "shares", "linux.resources.cpu", 0, 262144, false, &shares, err);
		if (r < 0)
			return r;
		s->cpu_shares = (uint64_t)shares;
		static const char *const sets[] = {"cpus", "mems"};
		for (size_t k = 0; k < 2; k++) {
			char **dst = k == 0 ? &s->cpuset_cpus : &s->cpuset_mems;
			r = get_string(cpu, sets[k], "linux.resources.cpu", false, dst, err);
			if (r < 0)
				return r;
			/* A list such as "0-3,5": written to cpuset.cpus as is. */
			const char *v = *dst;
			bool ok = !v || strlen(v) <= 256;
			for (; ok && v && *v; v++)
				ok = (*v >= '0' && *v <= '9') || *v == ',' || *v == '-';
			if (!ok)
				return moat_error_set(err, MOAT_EINPUT,
						      "linux.resources.cpu.%s: not a list of numbers and ranges", sets[k]);
		}
		if (quota > 0) {
			s->cpu_quota = (uint64_t)quota;
			s->cpu_period = (uint64_t)period;
			if (quota > (json_int_t)(MOAT_MAX_CPUS_MILLI * 1000000))
				return moat_error_set(err, MOAT_EINPUT, "linux.resources.cpu.quota: %lld is too large",
						      (long long)quota);
			/* Rounded up: a quota never becomes zero CPU. */
			uint64_t milli = ((uint64_t)quota * 1000 + (uint64_t)period - 1) / (uint64_t)period;
			moat_error sub = {0};
			if (moat_limit_check(offsetof(moat_limits, cpus_milli), milli, &sub) < 0)
				return moat_error_set(err, MOAT_EINPUT, "linux.resources.cpu.quota: %s", sub.msg);
			s->cpus_milli = milli;
		}
	}
	return 0;
}

static int check_sysctl_key(const char *k, const char *field, moat_error *err)
{
	/* The key becomes a path under /proc/sys: dots and nothing that could
	 * climb out of it. */
	size_t n = strlen(k);
	bool ok = n > 0 && n <= 256 && k[0] != '.' && k[n - 1] != '.' && !strstr(k, "..");
	for (size_t i = 0; ok && i < n; i++)
		ok = (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
		     k[i] == '_' || k[i] == '-' || k[i] == '.';
	if (!ok)
		return moat_error_set(err, MOAT_EINPUT, "%s: \"%.64s\" is not a sysctl name", field, k);
	if (!moat_oci_sysctl_is_namespaced(k))
		return moat_error_set(err, MOAT_EINPUT,
				      "%s: %s is not scoped to the container's namespaces; setting it would change the host",
				      field, k);
	return 0;
}

static int parse_sysctls(json_t *linux_, moat_oci_spec *s, moat_error *err)
{
	json_t *o = json_object_get(linux_, "sysctl");
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return moat_error_set(err, MOAT_EINPUT, "linux.sysctl: expected an object");
	size_t n = json_object_size(o);
	if (n > MOAT_OCI_MAX_LIST)
		return moat_error_set(err, MOAT_EINPUT, "linux.sysctl: more than %u entries", MOAT_OCI_MAX_LIST);
	s->sysctls = calloc(n ? n : 1, sizeof(*s->sysctls));
	if (!s->sysctls)
		return moat_error_set(err, ENOMEM, "linux.sysctl");
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "linux.sysctl.%.200s", k);
		int r = check_sysctl_key(k, field, err);
		if (r < 0)
			return r;
		if (!json_is_string(v) || json_string_length(v) > MOAT_OCI_MAX_STRING)
			return moat_error_set(err, MOAT_EINPUT, "%s: expected a string of at most %u bytes", field,
					      MOAT_OCI_MAX_STRING);
		moat_oci_sysctl *e = &s->sysctls[s->n_sysctls++];
		e->key = strdup(k);
		e->value = strdup(json_string_value(v));
		if (!e->key || !e->value)
			return moat_error_set(err, ENOMEM, "%s", field);
	}
	return 0;
}

static moat_oci_seccomp_action action_from_string(const char *s)
{
	if (strcmp(s, "SCMP_ACT_KILL_THREAD") == 0)
		return MOAT_OCI_SCMP_KILL;
	for (int i = 0; i < _MOAT_OCI_SCMP_MAX; i++)
		if (strcmp(s, action_names[i]) == 0)
			return (moat_oci_seccomp_action)i;
	return _MOAT_OCI_SCMP_INVALID;
}

static int get_action(json_t *o, const char *key, const char *field, bool required, moat_oci_seccomp_action *ret,
		      moat_error *err)
{
	_cleanup_free_ char *a = NULL;
	int r = get_string(o, key, field, required, &a, err);
	if (r < 0)
		return r;
	if (!a)
		return 0;
	/* SCMP_ACT_NOTIFY hands syscalls to a listener outside the
	 * container, which would then act for it: a new way out of the
	 * boundary, so not offered. */
	if (strcmp(a, "SCMP_ACT_NOTIFY") == 0)
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: SCMP_ACT_NOTIFY is not supported", field, key);
	moat_oci_seccomp_action act = action_from_string(a);
	if (act < 0)
		return moat_error_set(err, MOAT_EINPUT, "%s.%s: unknown action \"%.64s\"", field, key, a);
	*ret = act;
	return 0;
}

static int parse_seccomp_rule(json_t *e, const char *field, moat_oci_seccomp_rule *rule, moat_error *err)
{
	if (!json_is_object(e))
		return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
	int r = get_strv(e, "names", field, 1024, 64, NULL, &rule->names, err);
	if (r < 0)
		return r;
	if (!rule->names || !rule->names[0])
		return moat_error_set(err, MOAT_EINPUT, "%s.names: required, with at least one system call", field);
	r = get_action(e, "action", field, true, &rule->action, err);
	if (r < 0)
		return r;
	json_int_t eno = 1; /* EPERM */
	r = get_int(e, "errnoRet", field, 0, 4095, false, &eno, err);
	if (r < 0)
		return r;
	rule->errno_ret = (unsigned)eno;
	json_t *args = json_object_get(e, "args");
	if (!args || json_is_null(args))
		return 0;
	if (!json_is_array(args))
		return moat_error_set(err, MOAT_EINPUT, "%s.args: expected a list", field);
	if (json_array_size(args) > MOAT_OCI_MAX_SECCOMP_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "%s.args: more than %d entries", field, MOAT_OCI_MAX_SECCOMP_ARGS);
	size_t i;
	json_t *a;
	json_array_foreach(args, i, a) {
		char f[FIELD_MAX];
		snprintf(f, sizeof(f), "%s.args[%zu]", field, i);
		if (!json_is_object(a))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", f);
		moat_oci_seccomp_arg *sa = &rule->args[rule->n_args++];
		json_int_t idx = 0;
		r = get_int(a, "index", f, 0, 5, true, &idx, err);
		if (r >= 0)
			r = get_u64(a, "value", f, &sa->value, err);
		if (r >= 0)
			r = get_u64(a, "valueTwo", f, &sa->value_two, err);
		if (r < 0)
			return r;
		sa->index = (unsigned)idx;
		_cleanup_free_ char *op = NULL;
		r = get_string(a, "op", f, true, &op, err);
		if (r < 0)
			return r;
		sa->op = _MOAT_OCI_SCMP_CMP_INVALID;
		for (int k = 0; k < _MOAT_OCI_SCMP_CMP_MAX; k++)
			if (strcmp(op, op_names[k]) == 0)
				sa->op = (moat_oci_seccomp_op)k;
		if (sa->op < 0)
			return moat_error_set(err, MOAT_EINPUT, "%s.op: unknown operator \"%.64s\"", f, op);
	}
	return 0;
}

static int check_arch(const char *s, const char *field, moat_error *err)
{
	if (strncmp(s, "SCMP_ARCH_", 10) != 0 || !s[10])
		return moat_error_set(err, MOAT_EINPUT, "%s: \"%.64s\" is not an architecture (SCMP_ARCH_...)", field, s);
	return 0;
}

static int parse_seccomp(json_t *linux_, moat_oci_spec *s, moat_error *err)
{
	json_t *o = json_object_get(linux_, "seccomp");
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return moat_error_set(err, MOAT_EINPUT, "linux.seccomp: expected an object");
	const char *f = "linux.seccomp";
	json_t *lp = json_object_get(o, "listenerPath");
	if (lp && json_is_string(lp) && json_string_length(lp) > 0)
		return moat_error_set(err, MOAT_EINPUT, "%s.listenerPath: a seccomp notification listener is not supported", f);
	s->seccomp = calloc(1, sizeof(*s->seccomp));
	if (!s->seccomp)
		return moat_error_set(err, ENOMEM, "%s", f);
	moat_oci_seccomp *sc = s->seccomp;
	int r = get_action(o, "defaultAction", f, true, &sc->default_action, err);
	if (r < 0)
		return r;
	json_int_t eno = 1;
	r = get_int(o, "defaultErrnoRet", f, 0, 4095, false, &eno, err);
	if (r < 0)
		return r;
	sc->default_errno_ret = (unsigned)eno;
	r = get_strv(o, "architectures", f, 32, 64, check_arch, &sc->architectures, err);
	if (r < 0)
		return r;
	json_t *l = json_object_get(o, "syscalls");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return moat_error_set(err, MOAT_EINPUT, "%s.syscalls: expected a list", f);
	size_t n = json_array_size(l);
	if (n > MOAT_OCI_MAX_SECCOMP_RULES)
		return moat_error_set(err, MOAT_EINPUT, "%s.syscalls: more than %u entries", f, MOAT_OCI_MAX_SECCOMP_RULES);
	sc->rules = calloc(n ? n : 1, sizeof(*sc->rules));
	if (!sc->rules)
		return moat_error_set(err, ENOMEM, "%s.syscalls", f);
	size_t i;
	json_t *e;
	json_array_foreach(l, i, e) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "%s.syscalls[%zu]", f, i);
		sc->n_rules++;
		r = parse_seccomp_rule(e, field, &sc->rules[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The device nodes moat's /dev has anyway (mount.c): asking for them
 * changes nothing. Any other node would give the container hardware or
 * kernel interfaces moat keeps out. */
static int parse_devices(json_t *linux_, moat_error *err)
{
	json_t *l = json_object_get(linux_, "devices");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return moat_error_set(err, MOAT_EINPUT, "linux.devices: expected a list");
	static const char *const known[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
					    "/dev/tty"};
	size_t i;
	json_t *e;
	json_array_foreach(l, i, e) {
		char field[FIELD_MAX];
		snprintf(field, sizeof(field), "linux.devices[%zu]", i);
		if (!json_is_object(e))
			return moat_error_set(err, MOAT_EINPUT, "%s: expected an object", field);
		_cleanup_free_ char *path = NULL;
		int r = get_string(e, "path", field, true, &path, err);
		if (r < 0)
			return r;
		bool ok = false;
		for (size_t k = 0; k < ELEMENTSOF(known); k++)
			ok = ok || strcmp(path, known[k]) == 0;
		if (!ok)
			return moat_error_set(err, MOAT_EINPUT,
					      "%s.path: device %.256s is refused: a container has only moat's own /dev "
					      "(null, zero, full, random, urandom, tty)",
					      field, path);
	}
	return 0;
}

static int parse_linux(json_t *root, moat_oci_spec *s, moat_error *err)
{
	json_t *l = json_object_get(root, "linux");
	if (!l || json_is_null(l))
		return moat_error_set(err, MOAT_EINPUT, "linux: required (moat runs Linux containers only)");
	if (!json_is_object(l))
		return moat_error_set(err, MOAT_EINPUT, "linux: expected an object");
	int r = parse_namespaces(l, s, err);
	if (r >= 0)
		r = parse_id_mappings(l, "uidMappings", &s->uid_mappings, &s->n_uid_mappings, err);
	if (r >= 0)
		r = parse_id_mappings(l, "gidMappings", &s->gid_mappings, &s->n_gid_mappings, err);
	if (r >= 0)
		r = parse_resources(l, s, err);
	if (r >= 0)
		r = get_strv(l, "maskedPaths", "linux", MOAT_OCI_MAX_LIST, MOAT_MAX_PATH, check_abs_path, &s->masked_paths, err);
	if (r >= 0)
		r = get_strv(l, "readonlyPaths", "linux", MOAT_OCI_MAX_LIST, MOAT_MAX_PATH, check_abs_path, &s->readonly_paths, err);
	if (r >= 0)
		r = parse_sysctls(l, s, err);
	if (r >= 0)
		r = parse_seccomp(l, s, err);
	if (r >= 0)
		r = parse_devices(l, err);
	if (r >= 0)
		r = get_string(l, "cgroupsPath", "linux", false, &s->cgroups_path, err);
	return r;
}

static int parse_annotations(json_t *root, moat_oci_spec *s, moat_error *err)
{
	json_t *a = json_object_get(root, "annotations");
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_object(a))
		return moat_error_set(err, MOAT_EINPUT, "annotations: expected an object");
	if (json_object_size(a) > MOAT_OCI_MAX_ANNOTATIONS)
		return moat_error_set(err, MOAT_EINPUT, "annotations: more than %u entries", MOAT_OCI_MAX_ANNOTATIONS);
	const char *k;
	json_t *v;
	json_object_foreach(a, k, v)
		if (!json_is_string(v))
			return moat_error_set(err, MOAT_EINPUT, "annotations.%.200s: expected a string", k);
	int r = get_string(a, MOAT_OCI_ANNOTATION_POLICY, "annotations", false, &s->policy, err);
	if (r >= 0)
		r = get_string(a, MOAT_OCI_ANNOTATION_AUDIT, "annotations", false, &s->audit_path, err);
	if (r < 0)
		return r;
	if (s->policy) {
		bool profile = false;
		for (const char *const *n = moat_policy_profile_names(); *n; n++)
			profile = profile || strcmp(*n, s->policy) == 0;
		if (!profile && !moat_path_is_clean_absolute(s->policy))
			return moat_error_set(err, MOAT_EINPUT,
					      "annotations.%s: \"%.256s\" is neither a built-in profile nor an absolute "
					      "path of a policy file",
					      MOAT_OCI_ANNOTATION_POLICY, s->policy);
	}
	if (s->audit_path && !moat_path_is_clean_absolute(s->audit_path))
		return moat_error_set(err, MOAT_EINPUT, "annotations.%s: \"%.256s\" is not an absolute path",
				      MOAT_OCI_ANNOTATION_AUDIT, s->audit_path);
	return 0;
}

static int parse_root(json_t *root, const char *bundle_dir, moat_oci_spec *s, moat_error *err)
{
	json_t *r = json_object_get(root, "root");
	if (!r || json_is_null(r))
		return moat_error_set(err, MOAT_EINPUT, "root: required");
	if (!json_is_object(r))
		return moat_error_set(err, MOAT_EINPUT, "root: expected an object");
	_cleanup_free_ char *path = NULL;
	int rc = get_string(r, "path", "root", true, &path, err);
	if (rc >= 0)
		rc = get_bool(r, "readonly", "root", &s->root_readonly, err);
	if (rc < 0)
		return rc;
	if (!path[0])
		return moat_error_set(err, MOAT_EINPUT, "root.path: empty");
	if (path[0] == '/')
		s->root_path = TAKE_PTR(path);
	else if (asprintf(&s->root_path, "%s/%s", bundle_dir, path) < 0) {
		s->root_path = NULL;
		return moat_error_set(err, ENOMEM, "root.path");
	}
	return 0;
}

/* Hooks run host programs with the runtime's privileges around the
 * container's life; moat runs nothing on the host for a container. */
static int refuse_hooks(json_t *root, moat_error *err)
{
	json_t *h = json_object_get(root, "hooks");
	if (!h || json_is_null(h))
		return 0;
	if (!json_is_object(h))
		return moat_error_set(err, MOAT_EINPUT, "hooks: expected an object");
	const char *k;
	json_t *v;
	json_object_foreach(h, k, v)
		if (json_is_array(v) && json_array_size(v) > 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "hooks.%.64s: refused: moat runs no host program for a container", k);
	return 0;
}

static int load(const char *text, size_t len, json_t **ret, moat_error *err)
{
	if (len > MOAT_OCI_MAX_CONFIG_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "config.json: larger than %u bytes", MOAT_OCI_MAX_CONFIG_BYTES);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return moat_error_set(err, MOAT_EINPUT, "line %d, column %d: %s", je.line, je.column, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return moat_error_set(err, MOAT_EINPUT, "expected a JSON object");
	}
	*ret = j;
	return 0;
}

int moat_oci_spec_parse(const char *json, size_t len, const char *bundle_dir, moat_oci_spec **ret, moat_error *err)
{
	if (!bundle_dir || bundle_dir[0] != '/')
		return moat_error_set(err, EINVAL, "the bundle's folder must be an absolute path");
	_cleanup_json_ json_t *root = NULL;
	int r = load(json, len, &root, err);
	if (r < 0)
		return r;
	_cleanup_oci_spec_ moat_oci_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return moat_error_set(err, ENOMEM, "config.json");
	s->memory_bytes = s->cpus_milli = s->pids = MOAT_UNLIMITED;

	r = get_string(root, "ociVersion", "", true, &s->oci_version, err);
	if (r < 0)
		return r;
	/* 1.x only: a 2.0 spec may mean something else by the same fields. */
	if (strncmp(s->oci_version, "1.", 2) != 0)
		return moat_error_set(err, MOAT_EINPUT, "ociVersion: \"%.32s\" is not a 1.x runtime-spec version",
				      s->oci_version);
	r = parse_root(root, bundle_dir, s, err);
	if (r < 0)
		return r;
	json_t *p = json_object_get(root, "process");
	if (!p || json_is_null(p))
		return moat_error_set(err, MOAT_EINPUT, "process: required");
	r = parse_process(p, s, err);
	if (r >= 0)
		r = get_string(root, "hostname", "", false, &s->hostname, err);
	if (r < 0)
		return r;
	if (s->hostname && strlen(s->hostname) > 64)
		return moat_error_set(err, MOAT_EINPUT, "hostname: longer than 64 bytes");
	r = parse_mounts(root, s, err);
	if (r >= 0)
		r = parse_linux(root, s, err);
	if (r >= 0)
		r = parse_annotations(root, s, err);
	if (r >= 0)
		r = refuse_hooks(root, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

int moat_oci_process_parse(const char *json, size_t len, moat_oci_spec **ret, moat_error *err)
{
	_cleanup_json_ json_t *root = NULL;
	int r = load(json, len, &root, err);
	if (r < 0)
		return moat_error_wrap(err, "process");
	_cleanup_oci_spec_ moat_oci_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return moat_error_set(err, ENOMEM, "process");
	s->memory_bytes = s->cpus_milli = s->pids = MOAT_UNLIMITED;
	r = parse_process(root, s, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

void moat_oci_spec_narrow_limits(const moat_oci_spec *s, moat_limits *l)
{
	if (s->memory_bytes < l->memory_bytes)
		l->memory_bytes = s->memory_bytes;
	if (s->pids < l->pids)
		l->pids = s->pids;
	if (s->cpus_milli < l->cpus_milli)
		l->cpus_milli = s->cpus_milli;
}

void moat_oci_spec_free(moat_oci_spec *s)
{
	if (!s)
		return;
	free(s->oci_version);
	free(s->root_path);
	for (size_t i = 0; i < _MOAT_OCI_NS_MAX; i++)
		free(s->ns_paths[i]);
	for (size_t i = 0; i < s->n_mounts; i++) {
		free(s->mounts[i].destination);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		moat__strv_free(s->mounts[i].options);
	}
	free(s->mounts);
	moat__strv_free(s->args);
	moat__strv_free(s->env);
	free(s->cwd);
	free(s->additional_gids);
	free(s->rlimits);
	free(s->hostname);
	free(s->uid_mappings);
	free(s->gid_mappings);
	moat__strv_free(s->masked_paths);
	moat__strv_free(s->readonly_paths);
	for (size_t i = 0; i < s->n_sysctls; i++) {
		free(s->sysctls[i].key);
		free(s->sysctls[i].value);
	}
	free(s->sysctls);
	if (s->seccomp) {
		moat__strv_free(s->seccomp->architectures);
		for (size_t i = 0; i < s->seccomp->n_rules; i++)
			moat__strv_free(s->seccomp->rules[i].names);
		free(s->seccomp->rules);
		free(s->seccomp);
	}
	free(s->cgroups_path);
	free(s->cpuset_cpus);
	free(s->cpuset_mems);
	free(s->policy);
	free(s->audit_path);
	free(s);
}
