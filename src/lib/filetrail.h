/* The file and exec trail: which files a sandboxed program opened, wrote,
 * removed or renamed, and which programs it executed, seen from outside.
 *
 * The command's process installs a seccomp filter whose only job is to
 * notify (SECCOMP_RET_USER_NOTIF) on execve, execveat, open, openat,
 * openat2, creat, unlink, unlinkat, rmdir, rename, renameat and renameat2.
 * It sends the listener to the supervisor over the control socket. A thread
 * of the supervisor receives each notification, reads the path argument
 * from /proc/PID/mem, lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
 * and writes the event to the audit log. Nothing in the trail trusts the
 * sandboxed side: the kernel stops the call until the supervisor has looked.
 *
 * What the trail records is what was asked, not what happened: CONTINUE
 * hands the call back to the kernel, which runs it after the supervisor
 * answered, so its result is never seen; and a second thread of a hostile
 * program can rewrite the path between the supervisor's read and the
 * kernel's (the TOCTOU the kernel's seccomp.h warns about). The trail is an
 * account, not a boundary; mounts, Landlock and the confinement filter are
 * the boundary. Events it cannot vouch for say so (reliability), and as
 * root the same thread also reports what the kernel actually opened, from
 * fanotify (fanwatch.h). See docs/audit.md. */
#pragma once

#include "audit.h"
#include "error.h"

typedef struct moat_filetrail moat_filetrail;

typedef struct moat_filetrail_stats {
	uint64_t notifications; /* calls the kernel stopped for us */
	uint64_t events;        /* events written */
	uint64_t unreadable;    /* calls whose arguments could not be read */
	uint64_t racy;          /* calls from a multi-threaded process */
	bool fanotify;          /* the fanotify source was in use (root) */
	uint64_t fanotify_events; /* events from it */
	uint64_t fanotify_lost;   /* overflows of its kernel queue */
} moat_filetrail_stats;

/* In the command's process, after the root filesystem exists and before
 * the confinement filter: sets no_new_privs, installs the notify filter and
 * returns its listener (O_CLOEXEC). The caller must pass it on and close its
 * own copy before making any of the watched calls, or it would wait on
 * itself. */
int moat__filetrail_install(moat_error *err);

/* In the supervisor: starts the thread that answers the listener (taken).
 * Calls made before the first execve are moat's own setup and are let
 * through unrecorded; events of the command are held back until
 * moat__filetrail_session_started() says session.start is in the log. */
int moat__filetrail_start(int listener, moat_audit *a, moat_filetrail **ret, moat_error *err);
/* The same; fanotify false: the seccomp source only, even as root. A
 * sandbox of many commands has one trail per command, and a fanotify
 * source each would report every open of the sandbox once per trail. */
int moat__filetrail_start_source(int listener, moat_audit *a, bool fanotify, moat_filetrail **ret, moat_error *err);
struct moat_approvals;
/* The trail of a sandbox with exec.approve rules also gates: an execve of
 * a rule's program with matching arguments is held in approvals' queue
 * until a person decides (execgate.h, docs/approvals.md), every other one
 * goes on at once. record false: the trail's own events are not written
 * (audit.files off), the gate's are. */
typedef struct moat_filetrail_opts {
	moat_audit *audit; /* may be NULL when record is false */
	bool fanotify;
	bool record;
	const struct moat_exec_rule *rules; /* not owned: must outlive the trail */
	size_t n_rules;
	struct moat_approvals *approvals; /* required with rules */
} moat_filetrail_opts;
int moat__filetrail_start_opts(int listener, const moat_filetrail_opts *o, moat_filetrail **ret, moat_error *err);
/* True once the thread has left: no process holds the filter any more
 * (or t is NULL). Stopping it then loses nothing. */
bool moat__filetrail_done(const moat_filetrail *t);
void moat__filetrail_session_started(moat_filetrail *t);
/* Waits for the thread (the listener hangs up when the run's last process
 * is gone), writes what was held back, frees. Accepts NULL. */
void moat__filetrail_stop(moat_filetrail *t, moat_filetrail_stats *ret_stats);

/* Pure: the "mode" field of file.mkdir and file.chmod, in octal ("0755"). */
json_t *moat__filetrail_mode_json(unsigned mode);
/* Pure: the event type for a watched call ("exec", "file.open",
 * "file.write", "file.unlink", "file.rename", "file.truncate", "file.link",
 * "file.symlink", "file.mkdir", "file.chmod"), or NULL. flags are the open
 * flags for the open family. */
const char *moat__filetrail_event_type(const char *syscall, int flags);
/* Pure: joins a relative path to the directory it is relative to. */
char *moat__filetrail_join(const char *dir, const char *path);

/* An argv is kept whole in the exec event up to this many bytes (its
 * strings with their NULs) and this many strings, so that the event stays
 * well under MOAT_AUDIT_MAX_LINE whatever escaping its bytes need. A larger
 * one is kept as its first MOAT_TRAIL_ARGV_HEAD bytes plus the SHA-256 of
 * all of it. */
#define MOAT_TRAIL_ARGV_WHOLE (128u << 10)
#define MOAT_TRAIL_ARGV_WHOLE_COUNT 4096u
#define MOAT_TRAIL_ARGV_HEAD 4096u

/* Pure: collects an argv as it is read, string by string and chunk by
 * chunk. The SHA-256 covers the strings each with its terminating NUL, in
 * order: exactly the bytes the kernel copies for execve. */
typedef struct moat_trail_argv moat_trail_argv;
moat_trail_argv *moat__trail_argv_new(void);
/* Appends bytes of the current string (without its NUL). */
int moat__trail_argv_add(moat_trail_argv *v, const char *buf, size_t len);
/* Ends the current string. */
int moat__trail_argv_end(moat_trail_argv *v);
/* The fields of the exec event: "argv" (whole, or the strings of the
 * first MOAT_TRAIL_ARGV_HEAD bytes, the last one cut) and, when cut,
 * "argv_truncated", "argc", "argv_bytes" and "argv_sha256". Adds them to f
 * and frees v. */
void moat__trail_argv_finish(moat_trail_argv *v, bool complete, json_t *f);
