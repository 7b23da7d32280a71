/* An OCI bundle's config.json (runtime-spec 1.x), read into what moat will
 * run. Parsing and checking are pure functions of the JSON text and the
 * bundle's folder name (nothing on disk is looked at), so unit tests and a
 * fuzzer call them directly; opening the bundle's root, its mounts and the
 * policy file is the runtime's business (oci.c).
 *
 * The spec describes a container; moat runs it only inside its own
 * boundary, so the spec may narrow that boundary, never widen it:
 *  - capabilities: moat's command starts with none (caps.c), so a
 *    requested set is recorded and the granted set is its intersection
 *    with MOAT_OCI_CAPS_ALLOWED (empty);
 *  - namespaces: leaving out one that would then be the host's (network,
 *    pid, ipc, uts, mount) is refused; a "path" (joining an existing one)
 *    is recorded only for network, ipc and uts, which the runtime lets
 *    through only when it is another moat-oci container's (a pod; oci.c),
 *    and refused for every other type; user and cgroup namespaces moat
 *    makes whether asked or not;
 *  - seccomp: the spec's filter is loaded on top of moat's, and the kernel
 *    applies the stricter verdict of stacked filters, so it can only deny
 *    more;
 *  - resources: each limit is the smaller of the spec's and the policy's;
 *  - sysctls: only those the kernel scopes to the container's own ipc or
 *    network namespace;
 *  - devices: only the nodes moat's /dev holds anyway.
 * Every error names the JSON field ("process.rlimits[2].type: ..."). The
 * runtime spec says unknown properties must be ignored, so they are; known
 * ones moat cannot honour without widening the boundary are refused. */
#pragma once

#include "config.h"
#include "error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Caps on one config.json. */
#define MOAT_OCI_MAX_CONFIG_BYTES (4u << 20)
#define MOAT_OCI_MAX_MOUNTS 256
#define MOAT_OCI_MAX_MOUNT_OPTIONS 64
#define MOAT_OCI_MAX_LIST 1024   /* maskedPaths, readonlyPaths, gids, sysctls */
#define MOAT_OCI_MAX_ID_MAPPINGS 340 /* the kernel's limit per map (5.x) */
#define MOAT_OCI_MAX_SECCOMP_RULES 4096
#define MOAT_OCI_MAX_SECCOMP_ARGS 6
#define MOAT_OCI_MAX_ANNOTATIONS 256
#define MOAT_OCI_MAX_STRING 4096
/* The size of a spec's tmpfs when the policy sets no /tmp limit. */
#define MOAT_OCI_MAX_TMPFS (UINT64_C(256) << 20)

/* The annotations that select moat's features. */
#define MOAT_OCI_ANNOTATION_POLICY "dev.moat.policy"
#define MOAT_OCI_ANNOTATION_AUDIT "dev.moat.audit"

/* Capabilities moat lets a container keep: none. The command of a sandbox
 * starts with every set empty and the securebits locked (caps.c). */
#define MOAT_OCI_CAPS_ALLOWED UINT64_C(0)

typedef struct moat_oci_mount {
	char *destination; /* absolute, clean */
	char *type;        /* NULL: a bind when options say so */
	char *source;      /* as given; relative sources are relative to the bundle */
	char **options;    /* NULL-terminated */
	bool bind;         /* type "bind" or a "bind"/"rbind" option */
	bool readonly;     /* an "ro" option */
} moat_oci_mount;

typedef struct moat_oci_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t soft, hard;
} moat_oci_rlimit;

typedef enum moat_oci_ns {
	MOAT_OCI_NS_PID = 0,
	MOAT_OCI_NS_NETWORK,
	MOAT_OCI_NS_MOUNT,
	MOAT_OCI_NS_IPC,
	MOAT_OCI_NS_UTS,
	MOAT_OCI_NS_USER,
	MOAT_OCI_NS_CGROUP,
	MOAT_OCI_NS_TIME,
	_MOAT_OCI_NS_MAX,
	_MOAT_OCI_NS_INVALID = -1,
} moat_oci_ns;

typedef struct moat_oci_id_mapping {
	uint32_t container_id, host_id, size;
} moat_oci_id_mapping;

typedef enum moat_oci_seccomp_action {
	MOAT_OCI_SCMP_KILL = 0, /* SCMP_ACT_KILL, SCMP_ACT_KILL_THREAD */
	MOAT_OCI_SCMP_KILL_PROCESS,
	MOAT_OCI_SCMP_TRAP,
	MOAT_OCI_SCMP_ERRNO,
	MOAT_OCI_SCMP_TRACE,
	MOAT_OCI_SCMP_ALLOW,
	MOAT_OCI_SCMP_LOG,
	_MOAT_OCI_SCMP_MAX,
	_MOAT_OCI_SCMP_INVALID = -1,
} moat_oci_seccomp_action;

typedef enum moat_oci_seccomp_op {
	MOAT_OCI_SCMP_CMP_NE = 0,
	MOAT_OCI_SCMP_CMP_LT,
	MOAT_OCI_SCMP_CMP_LE,
	MOAT_OCI_SCMP_CMP_EQ,
	MOAT_OCI_SCMP_CMP_GE,
	MOAT_OCI_SCMP_CMP_GT,
	MOAT_OCI_SCMP_CMP_MASKED_EQ,
	_MOAT_OCI_SCMP_CMP_MAX,
	_MOAT_OCI_SCMP_CMP_INVALID = -1,
} moat_oci_seccomp_op;

typedef struct moat_oci_seccomp_arg {
	unsigned index; /* 0..5 */
	uint64_t value, value_two;
	moat_oci_seccomp_op op;
} moat_oci_seccomp_arg;

typedef struct moat_oci_seccomp_rule {
	char **names; /* NULL-terminated syscall names */
	moat_oci_seccomp_action action;
	unsigned errno_ret; /* ERRNO and TRACE; default EPERM */
	moat_oci_seccomp_arg args[MOAT_OCI_MAX_SECCOMP_ARGS];
	size_t n_args;
} moat_oci_seccomp_rule;

typedef struct moat_oci_seccomp {
	moat_oci_seccomp_action default_action;
	unsigned default_errno_ret;
	char **architectures; /* "SCMP_ARCH_X86_64", ...; NULL: the native one */
	moat_oci_seccomp_rule *rules;
	size_t n_rules;
} moat_oci_seccomp;

typedef struct moat_oci_sysctl {
	char *key, *value;
} moat_oci_sysctl;

typedef struct moat_oci_spec {
	char *oci_version;

	char *root_path; /* absolute: root.path resolved against the bundle */
	bool root_readonly;

	moat_oci_mount *mounts;
	size_t n_mounts;

	/* process (absent for `create` only in runtime-spec's hooks-only use;
	 * moat requires it) */
	bool terminal;
	char **args; /* NULL-terminated, at least one */
	char **env;  /* NAME=VALUE, NULL-terminated (possibly empty) */
	char *cwd;   /* absolute */
	/* process.user: the ids of the sandbox's one mapped user (any id but
	 * (uid_t)-1; it is still the one unprivileged host id moat runs as),
	 * additionalGids only that gid again. user_set: the field was given
	 * (exec's process without it runs as the container's user). */
	bool user_set;
	uid_t uid;
	gid_t gid;
	gid_t *additional_gids;
	size_t n_additional_gids;
	moat_oci_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privileges; /* moat sets no_new_privs always; recorded */
	/* process.oomScoreAdj (-1000 to 1000): set in the keeper, which the
	 * sandbox's init is cloned from (the kernel decides who may lower
	 * it). */
	bool oom_score_adj_set;
	int oom_score_adj;
	/* Capabilities asked for, per set (bit n: capability n), and what
	 * moat grants: the union of the requested sets masked with
	 * MOAT_OCI_CAPS_ALLOWED. */
	uint64_t caps_bounding, caps_effective, caps_inheritable, caps_permitted, caps_ambient;
	uint64_t caps_granted;

	char *hostname; /* NULL: moat's default */

	/* linux.namespaces: which types were listed (bit moat_oci_ns). */
	unsigned namespaces;
	/* The path of a namespace to join (only network, ipc, uts; absolute),
	 * or NULL; and its index in linux.namespaces, for messages. */
	char *ns_paths[_MOAT_OCI_NS_MAX];
	size_t ns_path_index[_MOAT_OCI_NS_MAX];
	moat_oci_id_mapping *uid_mappings, *gid_mappings;
	size_t n_uid_mappings, n_gid_mappings;

	/* linux.resources, as moat limits (MOAT_UNLIMITED where not set). */
	uint64_t memory_bytes;
	uint64_t cpus_milli; /* cpu.quota / cpu.period, in thousandths of a CPU */
	uint64_t cpu_shares; /* applied with cgroups_path; 0: not set */
	uint64_t cpu_quota, cpu_period; /* as given, when quota > 0; else 0 */
	char *cpuset_cpus, *cpuset_mems; /* applied with cgroups_path (v1); NULL: not set */
	uint64_t pids;

	char **masked_paths;   /* absolute, clean; NULL-terminated */
	char **readonly_paths; /* absolute, clean; NULL-terminated */
	moat_oci_sysctl *sysctls;
	size_t n_sysctls;

	moat_oci_seccomp *seccomp; /* NULL: no filter beyond moat's */

	char *cgroups_path; /* linux.cgroupsPath, as given, or NULL */

	/* annotations moat reads */
	char *policy;     /* dev.moat.policy: a host path or a built-in profile name */
	char *audit_path; /* dev.moat.audit: where the audit log goes */
} moat_oci_spec;

void moat_oci_spec_free(moat_oci_spec *s);
static inline void moat_oci_spec_freep(moat_oci_spec **s) { moat_oci_spec_free(*s); }
#define _cleanup_oci_spec_ _cleanup_(moat_oci_spec_freep)

/* Parses config.json text (len bytes) of the bundle at bundle_dir (an
 * absolute path: root.path is resolved against it). Returns 0 and *ret,
 * or a negative errno with err naming the field (MOAT_EINPUT for a bad
 * or refused value). */
int moat_oci_spec_parse(const char *json, size_t len, const char *bundle_dir, moat_oci_spec **ret, moat_error *err);

/* The process part alone, as `exec --process FILE` gives it (the same
 * fields and checks as config.json's "process"). The returned spec has
 * only the process fields set. */
int moat_oci_process_parse(const char *json, size_t len, moat_oci_spec **ret, moat_error *err);

/* Narrows limits l (the policy's) by the spec's resources: each limit
 * becomes the smaller of the two. Pure. */
void moat_oci_spec_narrow_limits(const moat_oci_spec *s, moat_limits *l);

/* A tmpfs mount of the spec (type "tmpfs", field "mounts[N]") as moat
 * mounts it: size= (bytes or k, m, g) capped at cap, and cap when not
 * given; mode= octal, permission and sticky bits only (01777 when not
 * given); ro and noexec honoured; always nosuid and nodev (suid and dev
 * refused); propagation and atime options ignored; anything else refused.
 * ret->dst is the caller's to free. Pure. */
int moat_oci_tmpfs_options(const moat_oci_mount *m, uint64_t cap, const char *field, moat_tmpfs_mount *ret,
			   moat_error *err);

/* Names, for messages and the runtime's `features`. */
const char *moat_oci_ns_to_string(moat_oci_ns ns);
moat_oci_ns moat_oci_ns_from_string(const char *s);
const char *moat_oci_cap_to_string(unsigned cap); /* "CAP_CHOWN"; NULL past the last */
int moat_oci_cap_from_string(const char *s);      /* -1 when unknown */
const char *moat_oci_seccomp_action_to_string(moat_oci_seccomp_action a);
const char *moat_oci_seccomp_op_to_string(moat_oci_seccomp_op op);
const char *moat_oci_rlimit_to_string(int resource);
/* True for a sysctl the kernel scopes to a container's ipc or network
 * namespace (the same list runc allows). */
bool moat_oci_sysctl_is_namespaced(const char *key);
