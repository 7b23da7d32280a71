/* What one sandboxed run is asked to do: the run specification, compiled
 * from the effective policy by moat_policy_compile (policy.h) and not
 * changed after that; consumed by sandbox.c. Where the front writes what
 * the run reports (result, audit log, recording) is the front's business
 * and not here. Every size the user controls is capped here, in one place
 * (moat_config_validate). */
#pragma once

#include "error.h"
#include "execgate.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The ids of the sandbox user inside its user namespace unless a front
 * (oci.c) picks others (moat_config.sandbox_uid). */
#define MOAT_DEFAULT_SANDBOX_UID 1000
#define MOAT_DEFAULT_SANDBOX_GID 1000

/* Caps on user-controlled sizes. */
#define MOAT_MAX_BINDS 256
#define MOAT_MAX_ENV 1024
#define MOAT_MAX_ARGS 4096
#define MOAT_MAX_PATH 4096
/* --stdin FILE is copied into memory the sandbox reads (sandbox.c). */
#define MOAT_MAX_STDIN_FILE_BYTES (1ull << 30)
#define MOAT_MAX_ENV_BYTES (1u << 20)
#define MOAT_MAX_ALLOW_HOSTS 1024

/* Where a sandbox finds the policy it runs under. */
#define MOAT_POLICY_INSIDE "/etc/moat/policy.yaml"

/* A limit value of MOAT_UNLIMITED means "not limited". */
#define MOAT_UNLIMITED UINT64_MAX

typedef enum moat_bind_flags {
	MOAT_BIND_RW = 1u << 0,      /* writable; otherwise read-only */
	MOAT_BIND_NOEXEC = 1u << 1,  /* nothing under it may be executed */
	MOAT_BIND_OPTIONAL = 1u << 2, /* a missing source is skipped, not an error */
} moat_bind_flags;

typedef struct moat_bind {
	char *src; /* absolute host path */
	char *dst; /* absolute path inside the sandbox */
	unsigned flags;
} moat_bind;

typedef enum moat_net_mode {
	MOAT_NET_NONE = 0, /* loopback only */
	MOAT_NET_PROXY,    /* egress through the gateway */
	/* As proxy, and every other outbound TCP connection and DNS query
	 * redirected to the gateway too (netnat.h), for programs that ignore
	 * the proxy variables. */
	MOAT_NET_TRANSPARENT,
	/* The network namespace of the Kubernetes pod a moat-oci container
	 * belongs to (made by the CNI plugin, handed over by path): joined
	 * as it is, egress NOT through the gateway (docs/kubernetes.md). An
	 * explicit opt-in of the policy; a sandbox with no pod network
	 * namespace to join is refused (sandbox-object.c). */
	MOAT_NET_POD,
	_MOAT_NET_MAX,
	_MOAT_NET_INVALID = -1,
} moat_net_mode;

/* Whether egress goes through the gateway (proxy or transparent). */
static inline bool moat_net_uses_gateway(moat_net_mode m)
{
	return m == MOAT_NET_PROXY || m == MOAT_NET_TRANSPARENT;
}

typedef struct moat_limits {
	uint64_t wall_ms;      /* wall clock */
	uint64_t cpu_ms;       /* CPU time of all processes of the run */
	uint64_t memory_bytes; /* cgroup memory limit, swap off */
	uint64_t pids;         /* cgroup pids limit (threads count) */
	uint64_t output_bytes; /* stdout + stderr together */
	uint64_t tmp_bytes;    /* size of the /tmp tmpfs */
	uint64_t disk_bytes;   /* bytes the writable output may hold */
	uint64_t disk_inodes;  /* inodes the writable output may hold */
	uint64_t files;        /* RLIMIT_NOFILE */
	uint64_t fsize;        /* RLIMIT_FSIZE */
	uint64_t cpus_milli;   /* CPU bandwidth in thousandths of a CPU */
} moat_limits;

/* A tmpfs of a given size (bytes, 0: none) and mode at dst, inside;
 * always nosuid and nodev. */
typedef struct moat_tmpfs_mount {
	char *dst;
	uint64_t size;
	unsigned mode;
	bool readonly, noexec;
} moat_tmpfs_mount;

/* moat's own file systems, whose mountinfo source a caller may name. */
typedef enum moat_own_fs {
	MOAT_FS_PROC = 0,
	MOAT_FS_DEV,
	MOAT_FS_DEVPTS,
	MOAT_FS_SHM,
	MOAT_FS_MQUEUE,
	_MOAT_FS_MAX,
} moat_own_fs;

typedef struct moat_config {
	char **argv;          /* command and arguments, NULL-terminated */
	moat_bind *binds;     /* filesystem.read_only/read_write, in order */
	size_t n_binds;
	char *out_dir;        /* filesystem.out: host path bound at /out, or NULL */
	char *cwd;            /* working directory inside, or NULL for default */
	char **env;           /* NAME=VALUE, applied over the base environment */
	char *stdin_path;     /* stdin: host file fed to the command, or NULL */
	bool tty;             /* tty: a fresh pseudo-terminal */
	/* The network mode; with proxy, the gateway is configured from the
	 * policy (egress.h) and handed over in moat_run_io. */
	moat_net_mode net;
	bool audit_files;     /* audit.files: the file and exec trail */
	char *profile;        /* the built-in policy named, "code" or "agent", or NULL */
	char *policy_path;    /* the policy file named, or NULL */
	char *hostname;       /* inside the uts namespace; default "moat" */
	/* The effective policy as YAML, placed read-only at
	 * MOAT_POLICY_INSIDE so that a run started inside this one is bounded
	 * by it (MOAT_PARENT_POLICY points there). NULL: none. */
	char *policy_yaml;
	/* SHA-256 (hex) of the effective policy's YAML (moat_policy_compile),
	 * logged in session.start; "" when the run has no policy. */
	char policy_sha256[65];
	moat_limits limits;
	/* Programs that may be executed (policy exec.allow), absolute paths
	 * inside the sandbox, enforced by Landlock; NULL means the system
	 * directories, read-only binds and /tmp. */
	char **exec_allow;
	/* A host folder that is the sandbox's root (an OCI bundle's root
	 * filesystem, oci.c) instead of moat's base root (the host's /usr and
	 * a generated /etc); NULL: the base root. moat's /proc, /dev, /tmp,
	 * /out and binds are mounted over it all the same. Its content is the
	 * image's, so anything in it may run, and with rootfs_writable the
	 * root stays writable (the caller's copy, an overlay). */
	char *rootfs;
	bool rootfs_writable;
	/* The ids the sandbox's one mapped user has inside its user namespace
	 * (moat_config_new: 1000 and 1000). Whatever they are, that user is
	 * the one unprivileged host id moat runs the sandbox as, and it holds
	 * no capability (caps.c locks SECBIT_NOROOT, so even id 0 gains none
	 * at exec): an OCI container's process.user picks them. */
	uid_t sandbox_uid;
	gid_t sandbox_gid;
	/* A seccomp program (struct sock_filter[], seccomp_extra_len bytes)
	 * every command loads on top of moat's own filter just before exec
	 * (an OCI container's linux.seccomp, oci-seccomp.c), or NULL. The
	 * kernel keeps the strictest verdict of stacked filters: it can only
	 * deny more. */
	void *seccomp_extra;
	size_t seccomp_extra_len;
	/* What an OCI container's spec asks on top of moat's root (oci.c;
	 * applied by the init in the sandbox's own namespaces, mount.c and
	 * sysctl.c): tmpfs mounts (before the binds, so binds below them
	 * land on them), paths hidden (/dev/null over a file, an empty
	 * read-only tmpfs over a folder) and made read-only, and namespaced
	 * sysctls ("key=value") written. NULL: none. */
	moat_tmpfs_mount *tmpfs;
	size_t n_tmpfs;
	/* An OCI spec's /dev/shm: a tmpfs of its own there instead of moat's
	 * link to /tmp (NULL: the link); its /dev/mqueue: the message queue
	 * file system of the sandbox's ipc namespace mounted there. */
	moat_tmpfs_mount *dev_shm;
	bool dev_mqueue;
	/* The source names moat's own file systems show in mountinfo (an OCI
	 * spec's mounts[].source for them); "": none. */
	char fs_source[_MOAT_FS_MAX][32];
	char **masked_paths;
	char **readonly_paths;
	char **sysctls;
	unsigned exec_deny_tmp : 1; /* no execution from /tmp even without an allowlist */
	unsigned exec_workspace : 1; /* /out and --rw binds may hold programs (policy exec.workspace) */
	/* exec.approve: programs whose execve is held for a person; only a
	 * sandbox with a queue to hold them in (a session's) takes them. */
	moat_exec_rule *exec_approve;
	size_t n_exec_approve;
} moat_config;

/* The cap on what one audit writer (one run, one session) adds to its log
 * unless the policy's audit.max_size says otherwise, and the range that may
 * take. A sandbox causes events (each file it opens, each request), so
 * without a cap it could fill the host's disk through the log. */
#define MOAT_AUDIT_DEFAULT_MAX_SIZE (UINT64_C(4) << 20)
#define MOAT_AUDIT_MIN_MAX_SIZE (UINT64_C(64) << 10)
#define MOAT_AUDIT_MAX_MAX_SIZE (UINT64_C(1) << 40)

/* The code profile's limits when nothing else sets them. */
void moat_limits_default_code(moat_limits *l);
/* All limits unset. */
void moat_limits_unlimited(moat_limits *l);

moat_config *moat_config_new(void);
void moat_config_free(moat_config *c);
static inline void moat_config_freep(moat_config **c) { moat_config_free(*c); }
#define _cleanup_config_ _cleanup_(moat_config_freep)

/* Adds a bind. spec is "HOST[:PATH]"; relative HOST is an error (the caller
 * resolves policy-relative paths before calling). */
int moat_config_add_bind_spec(moat_config *c, const char *spec, unsigned flags, moat_error *err);
int moat_config_add_bind(moat_config *c, const char *src, const char *dst, unsigned flags, moat_error *err);
/* Adds "NAME=VALUE". Copying a variable from the caller's environment is
 * the front's choice (moat run --env NAME), never the library's. */
int moat_config_add_env(moat_config *c, const char *spec, moat_error *err);
/* The check moat_config_add_env makes of one "NAME=VALUE". Pure. */
int moat_env_spec_check(const char *spec, moat_error *err);
/* Checks everything that can be checked before any side effect: paths,
 * ranges, forbidden bind targets. */
int moat_config_validate(const moat_config *c, moat_error *err);

/* The range of every numeric limit, in one place, so that a value from a
 * flag and the same value from a policy file meet the same check and the
 * same message, which names the field and the bound (a front that took the
 * value from a flag of its own may name the flag too):
 *   limits.pids: 4194305 is too large (at most 4194304, the kernel's
 *   limit on process ids; or unlimited)
 * Bounds keep every value exact wherever it goes (kernel interfaces, the
 * result's JSON integers): nothing is capped silently. Pure. */
#define MOAT_MAX_DURATION_MS (365ull * 24 * 3600 * 1000) /* a year */
#define MOAT_MAX_SIZE (1ull << 50)                       /* 1024T */
#define MOAT_MAX_PIDS 4194304ull                         /* PID_MAX_LIMIT */
#define MOAT_MAX_CPUS_MILLI 1000000ull                   /* 1000 CPUs */
#define MOAT_MAX_INODES (1ull << 32)
#define MOAT_MIN_FILES 8ull
/* Checks one limit given by its offset in moat_limits (offsetof), or every
 * limit. MOAT_UNLIMITED always passes. */
int moat_limit_check(size_t offset, uint64_t value, moat_error *err);
/* "limits.pids": how messages name the limit at offset. */
const char *moat_limit_label(size_t offset, char *buf, size_t len);
int moat_limits_check(const moat_limits *l, moat_error *err);

/* Pure path helper: true when p is absolute, has no "." or ".." component
 * and no empty component other than a trailing slash. */
bool moat_path_is_clean_absolute(const char *p);
/* Targets moat owns inside the sandbox that a bind may not cover. */
bool moat_path_is_reserved_target(const char *p);
