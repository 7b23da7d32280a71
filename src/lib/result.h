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
	bool rootless;              /* started by an unprivileged user */
	uint32_t host_uid, host_gid; /* what the sandbox user is on the host */
	uint32_t uid, gid;           /* the sandbox user inside */
	bool no_new_privs;
	bool caps_dropped;
	bool seccomp;
	char seccomp_profile[32];
	unsigned seccomp_rules;
	int landlock_abi;            /* 0 when not used */
	char landlock_rules[96];     /* "fs,net,scope" classes applied */
	char cgroup[8];              /* "v1", "v2", "hybrid" or "none" */
	char cgroup_note[160];       /* why limits fall back, when they do */
	bool rootfs_readonly;
	bool proc_masked;
} moat_isolation;

typedef struct moat_result {
	moat_status status;
	int exit_code;      /* valid when status == EXITED (else -1) */
	int signal;         /* terminating signal or 0 */
	uint64_t wall_ms;
	uint64_t cpu_ms, cpu_user_ms, cpu_sys_ms;
	uint64_t memory_peak_bytes; /* 0 when unknown */
	bool memory_peak_known;
	uint64_t stdout_bytes, stderr_bytes;
	bool output_truncated;
	bool out_checked;         /* the output directory was sanitised */
	unsigned out_removed;     /* links out, FIFOs, sockets, devices removed */
	unsigned out_fixed;       /* setuid/setgid bits cleared */
	char limit_hit[24];       /* which limit ended the run, or "" */
	char error[512];          /* setup error text, when status is setup_error */
	int exit_status;          /* what `moat run` exits with */
	moat_isolation isolation;
} moat_result;

void moat_result_init(moat_result *r);
/* The JSON object (compact, one line, no trailing newline); caller frees. */
char *moat_result_to_json(const moat_result *r);
/* Writes the JSON plus a newline to path ("-" for stdout). */
int moat_result_write(const moat_result *r, const char *path, moat_error *err);
