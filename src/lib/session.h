/* Sessions: a named, long-lived sandbox held by its keeper (keeper.h), that
 * commands are run in one after another and at once (`moat session`). A
 * session is its keeper's sandbox plus a small record of its own:
 *
 *   root:      /run/moat/sessions/ID/session.json
 *   rootless:  $XDG_RUNTIME_DIR/moat/sessions/ID/session.json, or, without
 *              it, /tmp/moat-UID/sessions/ID/session.json
 *
 * which holds its name, when it was made, its keeper's pid and socket, the
 * effective policy's hash and whether it was stopped. The record outlives
 * the keeper, so that a session whose keeper died shows as dead (with the
 * reason) until it is removed. docs/sessions.md tells what works. */
#pragma once

#include "error.h"
#include "keeper.h"
#include "policy.h"

#include <stdbool.h>
#include <stdint.h>

/* A session's name: 1 to this many characters of [A-Za-z0-9._-], starting
 * with a letter or digit, and not itself a sandbox id. */
#define MOAT_SESSION_NAME_MAX 64
/* Sessions one user may have at once (live or dead, until removed). */
#define MOAT_SESSION_MAX 256

typedef struct moat_session_info {
	char id[MOAT_KEEPER_ID_LEN];
	char name[MOAT_SESSION_NAME_MAX + 1];
	int64_t created;  /* seconds since the epoch */
	pid_t keeper_pid;
	char socket[PATH_MAX];
	char dir[PATH_MAX]; /* the session's state folder */
	char policy_sha256[65];
	bool running;     /* its keeper answered */
	char reason[160]; /* not running: why, in words */
	/* The host folder bound at /workspace ("" for a session made before
	 * workspaces), and whether it is the session's own persistent one
	 * (BASE/workspaces/ID: kept by stop and rm, removed by rm --purge). */
	char workspace[PATH_MAX];
	bool workspace_persistent;
	uint64_t ttl_ms, idle_ms; /* its lifetime (0: none) */
	/* Its audit log, and whether it is the session's own
	 * (BASE/session-logs/ID.log: removed by rm) or create's --audit FILE. */
	char audit_log[PATH_MAX];
	bool audit_own;
	/* create --record: each exec -t is recorded (asciicast) in dir */
	bool record;
	/* not running: what its keeper said when it ended (end.json's
	 * reason: ttl, idle, stopped, limit, ended), or "" when it said
	 * nothing (killed) */
	char end_reason[16];
	/* running, but its keeper did not answer a hello in time (stopped or
	 * hung): reason says so; a call to it will fail, not wait forever */
	bool unanswered;
	/* unanswered because its keeper is at its connection cap (it said
	 * so: EBUSY); reason is its word */
	bool busy;
} moat_session_info;

/* The workspace a session is created with: host_path is bound read-write
 * at /workspace (already in the policy); persistent_tmp, when set, is the
 * name (ws-RANDOM) of a folder moat__session_workspace_new made, which it
 * keeps for its life. */
typedef struct moat_session_workspace {
	const char *host_path;
	const char *persistent_tmp;
	/* The audit log the policy names; log_tmp, when set, is the temporary
	 * name of the session's own (moat__session_log_new), which takes the
	 * session's id. */
	const char *log_path;
	const char *log_tmp;
	/* create --record */
	bool record;
} moat_session_workspace;

/* A session's own end, enforced by its keeper (keeper-lifetime.h): it is
 * stopped ttl_ms after it was made, and idle_ms after its last command
 * ended with none started since (0: never). */
typedef struct moat_session_lifetime {
	uint64_t ttl_ms, idle_ms;
} moat_session_lifetime;

/* session-workspace.c: a fresh persistent workspace folder (0700, as root
 * the sandbox's unprivileged uid's), its path and its name (ws-RANDOM,
 * kept for its life). */
int moat__session_workspace_new(char *ret_path, size_t len, char *ret_name, size_t name_len, moat_error *err);
/* Removes workspace name (ws-RANDOM) and everything in
 * it, never following a link. */
int moat__session_workspace_purge(const char *name, moat_error *err);

/* A session's life is bounded by its policy's limits.wall, and the CPU time
 * of all its commands together by limits.cpu_time. A profile's defaults are
 * for one command (10 s); where neither the policy nor the command line set
 * them, a session gets these instead. */
#define MOAT_SESSION_DEFAULT_WALL_MS (8ull * 3600 * 1000)
#define MOAT_SESSION_DEFAULT_CPU_MS (3600ull * 1000)
/* Pure: applies the two defaults above to p where it did not set them. */
void moat__session_default_limits(moat_policy *p);

/* Pure: whether s is a name a session may take (see above). */
bool moat__session_name_valid(const char *s);

/* Starts a keeper for policy (effective: moat_cli_load_run_policy) and
 * records the session under name (NULL: none). EEXIST: a session of that
 * name is there already (running or dead: removing it frees the name). */
int moat_session_create(const moat_policy *policy, const char *name, const moat_session_workspace *ws,
			const moat_session_lifetime *life, const moat_keeper_start_opts *opts, moat_session_info *ret,
			moat_error *err);

/* Every session of this user, in the order of their creation; *ret is the
 * caller's to free. */
int moat_session_list(moat_session_info **ret, size_t *ret_n, moat_error *err);

/* The session named key (its id or its name). ENOENT: none is. */
int moat_session_find(const char *key, moat_session_info *ret, moat_error *err);
/* The same, and when the session runs, the connection to its keeper that
 * found it so (hello done) in *ret_k, the caller's to close; else NULL.
 * A command then costs one connection, not two. */
int moat_session_find_connected(const char *key, moat_session_info *ret, moat_keeper **ret_k, moat_error *err);

/* Stops a running session: every process of its sandbox ends, then its
 * keeper; its record stays (state dead, reason "stopped"). ESRCH: it is not
 * running. */
int moat_session_stop(const moat_session_info *s, moat_error *err);

/* Stops the session if it runs and removes its record and its keeper's
 * runtime folder; its persistent workspace too with purge (else it stays,
 * and a bound --workspace folder always stays). */
int moat_session_remove(const moat_session_info *s, bool purge, moat_error *err);

/* One command through the session's keeper (never setns: its init starts
 * it; session-exec.c). Its standard streams are the caller's own 0, 1, 2,
 * where a terminal is never passed: a terminal's input goes through a pipe
 * (input), its output through pipes this process copies out. SIGINT,
 * SIGTERM and SIGHUP to the caller are sent on to the command; if the
 * caller is killed, the keeper kills the command (spawn.attached) unless
 * it was detached. */
typedef struct moat_session_exec_opts {
	char *const *argv;
	char *const *env; /* NAME=VALUE */
	const char *cwd;  /* NULL: the sandbox's default */
	/* > 0: the command is killed after that long (ret->timed_out). */
	uint64_t time_ms;
	/* A pseudo-terminal of the sandbox's own is the command's (-t): the
	 * caller's terminal goes raw, its keystrokes and window size
	 * (SIGWINCH) are relayed, and the command's output comes on stdout. */
	bool tty;
	/* The caller's standard input is the command's (-i); without it (and
	 * without tty), /dev/null. */
	bool input;
	/* Output goes through this process, which counts it (--result). */
	bool count_output;
	/* Started and left running (--detach): not waited for, not killed
	 * when the caller ends, its streams /dev/null. */
	bool detach;
} moat_session_exec_opts;

typedef struct moat_session_exec_result {
	uint32_t id;        /* the command's id in its sandbox */
	pid_t pid;          /* its pid inside */
	moat_keeper_exit exit; /* how it ended (not for detach) */
	bool timed_out;     /* time_ms passed: it was killed */
	uint64_t wall_ms;   /* the front's clock, start to end */
	uint64_t stdout_bytes, stderr_bytes; /* what this process relayed */
} moat_session_exec_result;

int moat_session_exec(const moat_session_info *s, const moat_session_exec_opts *o, moat_session_exec_result *ret,
		      moat_error *err);
/* The same over k, a connection to s's keeper the caller opened (and
 * closes): moat_session_find_connected's. */
int moat_session_exec_on(moat_keeper *k, const moat_session_info *s, const moat_session_exec_opts *o,
			 moat_session_exec_result *ret, moat_error *err);

/* Writes x as `moat run`'s result JSON for that one command to path ("-":
 * stdout; a host path never resolved through a link the sandbox could
 * have planted), with the session's id and the command's; the isolation
 * is the session's own and is not repeated there. */
int moat_session_exec_result_write(const moat_session_info *s, const moat_session_exec_opts *o,
				   const moat_session_exec_result *x, const char *path, moat_error *err);

/* Copies host_path into the session at sandbox_path (into), or
 * sandbox_path out to host_path: regular files and folders, recursively,
 * never through a link or `..` on either side, refusing devices, FIFOs and
 * sockets, keeping modes less setuid, setgid and sticky bits. The
 * sandbox's side is written and read as the sandbox's own user (its
 * limits, its ownership; never host root), the host's as the caller.
 * Copying to a folder puts the source in it under its own name; a file
 * there of that name is overwritten. A copy stopped by a refusal or a limit
 * leaves what it copied before (session-cp.c). */
typedef struct moat_session_cp_stats {
	uint64_t files, dirs, bytes;
} moat_session_cp_stats;
int moat_session_cp(const moat_session_info *s, bool into, const char *host_path, const char *sandbox_path,
		    moat_session_cp_stats *ret, moat_error *err);
/* A copy out with caps on what it writes on the host, for a caller that
 * copies for someone else (moatd): max_bytes for the whole copy (a sparse
 * or growing file in the session is dense on the host; 0: no cap), and
 * file_only for a regular file, never a folder's tree. Over either, the
 * copy fails and what it was writing is removed. */
typedef struct moat_session_cp_caps {
	uint64_t max_bytes;
	bool file_only;
} moat_session_cp_caps;
int moat_session_cp_capped(const moat_session_info *s, bool into, const char *host_path, const char *sandbox_path,
			   const moat_session_cp_caps *caps, moat_session_cp_stats *ret, moat_error *err);

/* Pure: whether arg is KEY:PATH with KEY a session's name or id and PATH
 * absolute (then key and *ret_path are filled). */
bool moat__session_cp_split(const char *arg, char *key, size_t key_len, const char **ret_path);
/* Pure: a path in a session: absolute, no `..` component, not too long. */
int moat__session_cp_path_check(const char *p, moat_error *err);

/* ---- the session's audit log (session-log.c) ---- */

/* A fresh name for a session's own log, BASE/session-logs/.new-RND.log
 * (the keeper makes the file). */
int moat__session_log_new(char *ret_path, size_t len, char *ret_name, size_t name_len, moat_error *err);
/* Renames it to ID.log. */
int moat__session_log_adopt(const char *tmp_name, const char *id, char *ret_path, size_t len, moat_error *err);
/* Removes a session's own log, by its id or temporary name. */
int moat__session_log_remove(const char *name, moat_error *err);
/* Pure: whether an event of type matches --type want: the same, or want
 * is its prefix up to a dot ("command" matches "command.end"). */
bool moat__session_log_type_matches(const char *type, const char *want);

/* Prints the log's events (of type, NULL: all), one JSON line each; with
 * follow, then each one as it is written, until session.end or the
 * keeper is gone (inotify and the keeper's socket: no polling). */
int moat_session_logs(const moat_session_info *s, const char *type, bool follow, moat_error *err);

/* What the log says so far, for `show`. */
typedef struct moat_session_log_summary {
	uint64_t events, commands, copies, limit_hits;
	uint64_t cpu_ms, wall_ms; /* of the commands that ended */
	uint64_t cp_in_bytes, cp_out_bytes;
	uint64_t head_seq; /* the last event: its seq, type, time and the hash it chains to */
	char head_type[64], head_time[40], head_prev[72];
	struct json_t *isolation; /* session.start's (a new reference, or NULL) */
} moat_session_log_summary;
int moat_session_log_summarize(const moat_session_info *s, moat_session_log_summary *ret, moat_error *err);
