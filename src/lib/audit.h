/* The audit trail: a hash-chained JSON Lines event log.
 *
 * Every line is one event: {"seq", "time", "session", "type", FIELDS...,
 * "prev"}, where prev is the hex SHA-256 of the previous line's bytes
 * (without its newline). The first line is a "log.start" header that carries
 * a random nonce and is chained to it (prev = SHA-256 of the nonce's hex
 * text), so no two logs share a chain and lines cannot be spliced from one
 * log into another. `moat audit verify` walks the chain and names the first
 * line that was edited, reordered, removed, truncated or forged.
 *
 * A chain without a key proves order and integrity against anyone who does
 * not rewrite every later line too; the hash of the last line (the "head")
 * is what a caller keeps elsewhere to prove the log was not rewritten or cut
 * at a line boundary (verify --head).
 *
 * Crash safety: each line is written with a single write() on an O_APPEND
 * descriptor, so a crash loses at most the event being written; events with
 * MOAT_AUDIT_SYNC (session boundaries, policy decisions) are fsync'd before
 * the call returns.
 *
 * The writer is safe to call from several threads of one process (the file
 * trail reports from its own thread); a second process appending to the same
 * log at the same time is refused with an exclusive lock. */
#pragma once

#include "config.h"
#include "error.h"
#include "redact.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

/* fsync the log before returning. */
#define MOAT_AUDIT_SYNC (1u << 0)

/* Events a sandbox can cause are never exempt from the log's size cap;
 * these few (session.start, session.stop) are, so that a capped log still
 * says how the session ended. */
#define MOAT_AUDIT_ALWAYS (1u << 1)

/* One line may not be longer than this. An event that would be is written
 * with its fields replaced by {"oversize": BYTES}, so the fact that it
 * happened is never lost. */
#define MOAT_AUDIT_MAX_LINE (1u << 20)
/* Hex SHA-256 plus NUL. */
#define MOAT_AUDIT_HASH_HEX 65
/* Session ids: 32 hex characters plus NUL. */
#define MOAT_AUDIT_ID_LEN 33
#define MOAT_AUDIT_VERSION 1

typedef struct moat_audit moat_audit;

/* Opens (or creates, mode 0600) the log at path for appending, never through
 * a symlink. A new log starts with its log.start header. An existing log is
 * continued: its last line must be complete and chained to the line before
 * it, and the next event carries on its seq and hash. session_id may be
 * NULL: a random one is made. */
int moat_audit_open(const char *path, const char *session_id, moat_audit **ret, moat_error *err);
/* As moat_audit_open, for a long-lived writer that must restart after a
 * SIGKILL (moatd): a log that ends in a partial line (a write() the kernel
 * cut short, see docs/audit.md "Crash safety") is made whole instead of
 * refused. The partial tail is copied to PATH.partial-OFFSET (OFFSET: where
 * it began), fsync'd, cut from the log, and an "audit.partial_tail" event
 * ({offset, bytes, sha256, moved_to}) is the first this writer appends, so
 * the chain goes on from the last complete line and says what was set
 * aside. ret_moved (PATH_MAX bytes, may be NULL) gets that file's name, ""
 * when the log was whole. Everything else is refused as moat_audit_open
 * refuses it. */
int moat_audit_open_recover(const char *path, const char *session_id, moat_audit **ret, char *ret_moved,
			    moat_error *err);
/* Appends one event. fields is a JSON object (or NULL) and is stolen, even
 * on failure; its keys may not be seq, time, session, type or prev. String
 * fields are redacted first. After a failed write the writer refuses more
 * events: the file may end in a partial line, and verify will say so. */
int moat_audit_event(moat_audit *a, const char *type, json_t *fields, unsigned flags, moat_error *err);
/* Caps the bytes this writer appends (its header included) at max_size,
 * within [MOAT_AUDIT_MIN_MAX_SIZE, MOAT_AUDIT_MAX_MAX_SIZE]. The first event
 * that would pass it is replaced by one "audit.overflow" event
 * ({"max_size", "written"}); from then on every event is dropped and counted
 * but those written with MOAT_AUDIT_ALWAYS, which still go past the cap.
 * The default is MOAT_AUDIT_DEFAULT_MAX_SIZE. */
int moat_audit_set_max_size(moat_audit *a, uint64_t max_size, moat_error *err);
/* Events dropped since the cap was reached. */
uint64_t moat_audit_dropped(moat_audit *a);
/* Registers a secret value: from now on every occurrence in any string of
 * any event reads [REDACTED:NAME]. */
int moat_audit_add_secret(moat_audit *a, const char *name, const char *value, moat_error *err);
/* The redactor, shared with the terminal recording of the same run. */
const moat_redactor *moat_audit_redactor(const moat_audit *a);
const char *moat_audit_session(const moat_audit *a);
/* Hex hash of the last line written: the head to keep as an anchor. */
void moat_audit_head(moat_audit *a, char ret[MOAT_AUDIT_HASH_HEX]);
/* fsync now. */
int moat_audit_sync(moat_audit *a, moat_error *err);
/* fsync and close; accepts NULL. */
void moat_audit_close(moat_audit *a);
static inline void moat_audit_closep(moat_audit **a) { moat_audit_close(*a); }
#define _cleanup_audit_ _cleanup_(moat_audit_closep)

/* ---- Pure parts, for tests and for verify. ---- */

/* Random 128-bit id as 32 hex characters. */
int moat_audit_new_id(char ret[MOAT_AUDIT_ID_LEN]);
/* Hex SHA-256 of buf. */
void moat_audit_hash(const void *buf, size_t len, char ret[MOAT_AUDIT_HASH_HEX]);
/* RFC 3339 UTC with microseconds: 2024-05-01T12:00:00.123456Z. */
void moat_audit_format_time(uint64_t unix_us, char *buf, size_t len);
/* Parses the same form (and any RFC 3339 time with an offset and any number
 * of fraction digits) into microseconds since the epoch. */
int moat_audit_parse_time(const char *s, uint64_t *ret);
/* Formats one line (without newline). fields is borrowed and redacted in
 * place with red (which may be NULL). */
int moat_audit_format_line(uint64_t seq, const char *time, const char *session, const char *type,
			   json_t *fields, const char *prev, const moat_redactor *red, char **ret,
			   moat_error *err);

typedef enum moat_audit_problem {
	MOAT_AUDIT_INTACT = 0,
	MOAT_AUDIT_EDITED,     /* a line's hash differs from the next line's prev */
	MOAT_AUDIT_REORDERED,  /* seq out of order */
	MOAT_AUDIT_REMOVED,    /* seq gap */
	MOAT_AUDIT_TRUNCATED,  /* partial last line, or the head anchor is missing */
	MOAT_AUDIT_FORGED,     /* a line whose prev matches no line the writer wrote */
	MOAT_AUDIT_MALFORMED,  /* not an event: bad JSON, missing fields, no header */
	_MOAT_AUDIT_PROBLEM_MAX,
	_MOAT_AUDIT_PROBLEM_INVALID = -1,
} moat_audit_problem;

const char *moat_audit_problem_to_string(moat_audit_problem p);

typedef struct moat_audit_verdict {
	moat_audit_problem problem;
	size_t line;       /* 1-based line of the first problem, 0 when intact */
	uint64_t events;   /* complete lines that verified */
	uint64_t last_seq; /* seq of the last verified line */
	char head[MOAT_AUDIT_HASH_HEX]; /* hash of the last verified line */
	size_t unclosed;   /* sessions with a session.start and no session.stop */
	char reason[256];
} moat_audit_verdict;

/* The buffer starts at an arbitrary line of a log rather than at its header
 * (used to check the tail of a log before appending to it). */
#define MOAT_AUDIT_VERIFY_TAIL (1u << 0)

/* Verifies buf[0..len) as a whole log. Returns 0 when intact, 1 when a
 * problem was found (described in *ret), -ENOMEM. */
int moat_audit_verify_buffer(const char *buf, size_t len, unsigned flags, moat_audit_verdict *ret);

/* One readable line for an event object: "TIME TYPE key=value ...", with
 * control characters escaped (moat__escape_controls). */
char *moat_audit_format_readable(const json_t *event);
/* A log line as JSON for a terminal: the line itself when it holds no
 * control character, else the same object re-encoded in ASCII with every
 * control as a \u escape. NULL when it is not JSON (or out of memory). */
char *moat_audit_format_json_line(const char *line, size_t len);

/* ---- Run events: the types documented in docs/audit.md. ---- */

struct moat_isolation;
struct moat_result;

/* session.start: policy name and hash, user, host, command and isolation. */
int moat_audit_session_start(moat_audit *a, const char *policy_name, const char *policy_hash,
			     char *const *argv, const struct moat_isolation *iso, moat_error *err);
/* exec: a program was started. source is "supervisor" or "seccomp". */
int moat_audit_exec(moat_audit *a, const char *path, char *const *argv, pid_t pid, pid_t parent,
		    const char *source, moat_error *err);
/* file.open, file.write, file.unlink, file.rename: what the program asked
 * for. result is the syscall's return when known; pass MOAT_AUDIT_UNKNOWN
 * when the call was let through unseen (see docs/audit.md). */
#define MOAT_AUDIT_UNKNOWN INT64_MIN
int moat_audit_file(moat_audit *a, const char *type, const char *syscall, const char *path, const char *path2,
		    int flags, int64_t result, pid_t pid, moat_error *err);
/* A JSON string for bytes from the system (paths, argv): UTF-8 as it is,
 * anything else with \xNN escapes so the exact bytes stay readable. */
json_t *moat_audit_bytes_json(const char *s);
/* The "flags" field of file.open/file.write: the access mode and the flags
 * that change a file, by name (["O_WRONLY","O_CREAT","O_TRUNC"]). */
json_t *moat_audit_open_flags_json(int flags);
/* limit.hit: which limit ended the run and its value. */
int moat_audit_limit_hit(moat_audit *a, const char *limit, uint64_t value, const char *unit, moat_error *err);
/* denied: a layer (seccomp, landlock, policy) refused something. */
int moat_audit_denied(moat_audit *a, const char *layer, const char *what, const char *detail, moat_error *err);
/* session.stop: the run's result object; extra (stolen, may be NULL) adds
 * fields. */
int moat_audit_session_stop(moat_audit *a, const struct moat_result *r, json_t *extra, moat_error *err);

/* The run's own events, written by the supervisor (sandbox.c): session.start
 * and, without the file trail, the exec of the command; then limit.hit when
 * a limit ended the run, and session.stop. Errors leave the writer broken,
 * which the caller sees from moat_audit_failed(). */
struct moat_config;
struct moat_filetrail_stats;
void moat__audit_run_started(moat_audit *a, const struct moat_config *c, const struct moat_isolation *iso,
			     pid_t cmd_pid, bool trail);
void moat__audit_run_finished(moat_audit *a, const struct moat_config *c, const struct moat_result *r,
			      const struct moat_filetrail_stats *trail);
/* True when a write failed and the log is incomplete. */
bool moat_audit_failed(moat_audit *a);
