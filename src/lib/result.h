/* The outcome of one run, exactly as measured, and its JSON form. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum moat_status {
	MOAT_STATUS_EXITED = 0,
	MOAT_STATUS_SIGNALED,
	MOAT_STATUS_TIMEOUT,
	MOAT_STATUS_CPU_LIMIT,
	MOAT_STATUS_OOM,
	MOAT_STATUS_PIDS_LIMIT,
	MOAT_STATUS_OUTPUT_LIMIT,
	MOAT_STATUS_SETUP_ERROR,
	_MOAT_STATUS_MAX,
	_MOAT_STATUS_INVALID = -1,
} moat_status;

const char *moat_status_to_string(moat_status s);

/* Which layers were actually in force. Filled by the mechanisms themselves
 * as they succeed, never from what was asked. */
typedef struct moat_isolation {
	bool userns, mountns, pidns, netns, ipcns, utsns, cgroupns;
	/* How egress leaves: "none", "proxy", "transparent" or "pod" (the
	 * pod's network namespace, not through moat). */
	char egress[16];
	bool rootless;              /* started by an unprivileged user */
	uint32_t host_uid, host_gid; /* what the sandbox user is on the host */
	uint32_t uid, gid;           /* the sandbox user inside */
	bool no_new_privs;
	bool caps_dropped;
	bool seccomp;
	char seccomp_profile[32];
	unsigned seccomp_rules;
	int landlock_abi;            /* 0 when not used */
	char landlock_rules[96];     /* "fs,scope" classes applied */
	char cgroup[8];              /* "v1", "v2", "hybrid" or "none" */
	char cgroup_note[160];       /* why limits fall back, when they do */
	bool rootfs_readonly;
	bool proc_masked;
} moat_isolation;

/* Each limit a run can have, and what enforced it. A limit is listed in the
 * result only when it was asked for; its mechanism is filled by the code
 * that put it in force, so an rlimit standing in for a cgroup limit, or a
 * limit nothing could enforce, is reported as exactly that. */
typedef enum moat_limit_kind {
	MOAT_LIMIT_KIND_WALL = 0,
	MOAT_LIMIT_KIND_CPU,
	MOAT_LIMIT_KIND_MEMORY,
	MOAT_LIMIT_KIND_PIDS,
	MOAT_LIMIT_KIND_CPUS,
	MOAT_LIMIT_KIND_OUTPUT,
	MOAT_LIMIT_KIND_TMP,
	MOAT_LIMIT_KIND_DISK,
	MOAT_LIMIT_KIND_FILES,
	MOAT_LIMIT_KIND_FSIZE,
	MOAT_LIMIT_KIND_INODES,
	_MOAT_LIMIT_KIND_MAX,
	_MOAT_LIMIT_KIND_INVALID = -1,
} moat_limit_kind;

typedef enum moat_mechanism {
	MOAT_MECH_NONE = 0,   /* asked for, not enforced */
	MOAT_MECH_CGROUP,     /* the run's cgroup: all processes together */
	MOAT_MECH_RLIMIT,     /* setrlimit: per process (or per user) only */
	MOAT_MECH_TIMER,      /* the supervisor's clock */
	MOAT_MECH_SUPERVISOR, /* the supervisor counts and cuts (output) */
	MOAT_MECH_TMPFS,      /* a size-limited tmpfs */
	_MOAT_MECH_MAX,
	_MOAT_MECH_INVALID = -1,
} moat_mechanism;

typedef struct moat_enforced {
	bool set;       /* the run asked for this limit */
	uint64_t value; /* bytes, ms, count or thousandths of a CPU */
	moat_mechanism by;
} moat_enforced;

const char *moat_limit_kind_to_string(moat_limit_kind k);
const char *moat_mechanism_to_string(moat_mechanism m);

typedef struct moat_result {
	moat_status status;
	int exit_code;      /* valid when status == EXITED (else -1) */
	int signal;         /* terminating signal or 0 */
	uint64_t wall_ms;
	uint64_t cpu_ms, cpu_user_ms, cpu_sys_ms;
	/* cpu_ms is the init's rusage, not a cgroup's count: it holds only
	 * the processes the init reaped (a SIGKILLed init reaps none). */
	bool cpu_from_rusage;
	uint64_t memory_peak_bytes; /* 0 when unknown */
	bool memory_peak_known;
	uint64_t stdout_bytes, stderr_bytes;
	/* stdout went straight to the caller (moat run --direct-stdout):
	 * moat never saw it, so stdout_bytes is null, not a false 0. */
	bool stdout_uncounted;
	/* stdout and stderr reached moat as one stream (a warm eval sample):
	 * stdout_bytes holds their sum, reported as output_bytes, and the
	 * two per-stream fields are null. */
	bool streams_merged;
	bool output_truncated;
	/* Output kept (counted in stdout_bytes/stderr_bytes) that the caller's
	 * consumer never took: it went away, or did not read by the time moat
	 * stopped waiting (docs/limits.md). */
	uint64_t output_dropped_bytes;
	bool out_checked;         /* the output directory was sanitised */
	unsigned out_removed;     /* links out, FIFOs, sockets, devices removed */
	unsigned out_fixed;       /* setuid/setgid bits cleared */
	char limit_hit[24];       /* which limit ended the run, or "" */
	char error[512];          /* setup error text, when status is setup_error */
	int exit_status;          /* what `moat run` exits with */
	moat_isolation isolation;
	moat_enforced enforced[_MOAT_LIMIT_KIND_MAX];
	char limits_note[1024];   /* how fallbacks differ from the limit asked */
} moat_result;

void moat_result_init(moat_result *r);
/* Records that limit k of value v is in force by mechanism m (MOAT_MECH_NONE
 * when nothing could enforce it). Callers skip unlimited values. */
void moat_result_enforce(moat_result *r, moat_limit_kind k, uint64_t v, moat_mechanism m);
/* The JSON object (compact, one line, no trailing newline); caller frees. */
char *moat_result_to_json(const moat_result *r);
/* The "isolation" object of that JSON, alone (a new reference). */
struct json_t;
struct json_t *moat_isolation_to_json(const moat_isolation *i);
/* Writes the JSON plus a newline to path ("-" for stdout). */
int moat_result_write(const moat_result *r, const char *path, moat_error *err);

struct json_t;
/* What a run's result says of its sandbox, from r, as one JSON object:
 * "isolation", "enforced", "limits_note" when r has one,
 * "memory_peak_bytes" (null when unknown), and "cpu_user_ms" and
 * "cpu_sys_ms" when cpu_known. A keeper's exit carries it (keeper-proto.h)
 * for a front that reports its one command as a run (moatd's pool). */
struct json_t *moat__result_sandbox_json(const moat_result *r, bool cpu_known);
