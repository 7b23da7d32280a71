/* Approval gates, the pure part: the queue of actions held for a person,
 * the leases their decisions grant, and which later actions a lease lets
 * through. No clock, no locks, no I/O: the caller passes the time in and
 * makes the ids (approvals.h is the thread-safe keeper side around it, and
 * docs/approvals.md tells the whole story).
 *
 * An action asked about is a network request (host, port, and the method
 * and path when the gateway can see them) or a program to run (its path
 * and argv). A decision allows or denies one held action. An allow is
 *
 *   once     that action alone goes through; the next one like it waits
 *   for D    a lease: matching actions go through until D has passed
 *   session  a lease for as long as the session lives
 *
 * and a lease's scope says what matches it:
 *
 *   exact    the same request (method, host, port, path with its query),
 *            or the same program with the same argv
 *   path     the same method on the same host and port, with a path
 *            inside the asked path's folder (/v1/mail/send: /v1/mail/...),
 *            or the same program with any argv
 *   host     anything on the same host and port (network only) */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Ids: "a" or "l" and 8 lower-case hex digits (the caller draws them). */
#define MOAT_APPROVAL_ID_LEN 16
/* Held actions one session may have at once; one more is refused at once. */
#define MOAT_APPROVAL_MAX_PENDING 256
/* Leases one session may hold at once. */
#define MOAT_APPROVAL_MAX_LEASES 256
/* Caps on what an ask carries (longer paths are cut: the cut form never
 * matches an exact lease, see moat__approval_ask_set_path). */
#define MOAT_APPROVAL_HOST_MAX 256
#define MOAT_APPROVAL_METHOD_MAX 32
#define MOAT_APPROVAL_PATH_MAX 2048
#define MOAT_APPROVAL_ARGV_MAX 256
#define MOAT_APPROVAL_ARGS_MAX 4096 /* all arguments with their NULs */
#define MOAT_APPROVAL_NOTE_MAX 256
/* approvals.timeout when the policy does not set it. */
#define MOAT_APPROVAL_DEFAULT_TIMEOUT_MS (5ull * 60 * 1000)

typedef enum moat_ask_kind {
	MOAT_ASK_NET = 0,
	MOAT_ASK_EXEC,
	MOAT_ASK_TOOL, /* an MCP tools/call (moat mcp wrap) */
} moat_ask_kind;

typedef struct moat_ask {
	moat_ask_kind kind;
	/* network: method "" when not visible (a tunnel) */
	char host[MOAT_APPROVAL_HOST_MAX];
	uint16_t port;
	char method[MOAT_APPROVAL_METHOD_MAX];
	char path[MOAT_APPROVAL_PATH_MAX];
	bool path_cut; /* longer than the cap: matches no exact or path lease */
	bool tls;      /* inside TLS the gateway terminates: shown as https:// */
	/* exec: the program and its arguments (n_argv of them); tool: the
	 * server's name in exe, and the tool and its arguments (as JSON, cut
	 * past the cap) as the two arguments */
	char exe[MOAT_APPROVAL_PATH_MAX];
	char args[MOAT_APPROVAL_ARGS_MAX]; /* argv[0] NUL argv[1] NUL ... */
	size_t args_len, n_argv;
	bool argv_cut; /* more or longer arguments than the caps: matches no exact lease */
} moat_ask;

/* Fills a network ask; host and method are copied (a value over its cap
 * fails with E2BIG, as it is never a request the gateway allows anyway),
 * path is cut if need be. method and path may be NULL (a tunnel). */
int moat__approval_ask_net(moat_ask *a, const char *host, uint16_t port, const char *method, const char *path,
			   moat_error *err);
/* Fills an exec ask from exe and argv (NULL-terminated). */
int moat__approval_ask_exec(moat_ask *a, const char *exe, char *const *argv, moat_error *err);
/* Fills a tool ask: an MCP server's tool, called with args_json (its
 * arguments as compact JSON; cut, argv_cut set, when over the cap). A lease
 * of scope exact covers the same tool with the same arguments, of scope
 * path the same tool with any. */
int moat__approval_ask_tool(moat_ask *a, const char *server, const char *tool, const char *args_json,
			    moat_error *err);
/* One line for people: "POST http://mail.test:8025/v1/send" (https://
 * inside terminated TLS) or "/usr/bin/git push origin main". */
void moat__approval_ask_format(const moat_ask *a, char *buf, size_t len);

typedef enum moat_lease_kind {
	MOAT_LEASE_ONCE = 0,
	MOAT_LEASE_FOR,
	MOAT_LEASE_SESSION,
} moat_lease_kind;

typedef enum moat_scope {
	MOAT_SCOPE_EXACT = 0,
	MOAT_SCOPE_PATH,
	MOAT_SCOPE_HOST,
} moat_scope;

const char *moat_lease_kind_to_string(moat_lease_kind k);
const char *moat_scope_to_string(moat_scope s);
/* -1 for anything else. */
int moat_scope_from_string(const char *s);

typedef struct moat_lease {
	char id[MOAT_APPROVAL_ID_LEN];
	moat_lease_kind kind; /* FOR or SESSION (ONCE makes no lease) */
	moat_scope scope;
	moat_ask what; /* the action it was granted for */
	uint64_t granted_ms;
	uint64_t until_ms; /* FOR: when it ends; SESSION: 0 */
	uid_t by;
	char note[MOAT_APPROVAL_NOTE_MAX];
	uint64_t used; /* actions it let through */
} moat_lease;

/* Whether a scope can be granted for what a (EINVAL naming why not: a
 * host scope for a program). */
int moat__approval_scope_check(const moat_ask *a, moat_scope scope, moat_error *err);
/* Whether lease l (still valid at now_ms) covers a. */
bool moat__lease_matches(const moat_lease *l, const moat_ask *a, uint64_t now_ms);

typedef enum moat_approval_state {
	MOAT_APPROVAL_PENDING = 0,
	MOAT_APPROVAL_ALLOWED,
	MOAT_APPROVAL_DENIED,
	MOAT_APPROVAL_TIMED_OUT,
} moat_approval_state;

const char *moat_approval_state_to_string(moat_approval_state s);

typedef struct moat_approval {
	char id[MOAT_APPROVAL_ID_LEN];
	uint64_t ticket; /* the holder's handle (the gateway's connection) */
	moat_ask ask;
	uint64_t asked_ms, expires_ms;
	moat_approval_state state;
	/* decided: by whom, why (deny's reason or allow's note), and the
	 * lease that let it through (allowed with a lease) */
	uid_t by;
	char reason[MOAT_APPROVAL_NOTE_MAX];
	char lease[MOAT_APPROVAL_ID_LEN];
} moat_approval;

typedef struct moat_approval_queue {
	moat_approval *v; /* held and decided-but-not-collected, in asking order */
	size_t n;
	moat_lease *leases;
	size_t n_leases;
} moat_approval_queue;

void moat__approval_queue_init(moat_approval_queue *q);
void moat__approval_queue_done(moat_approval_queue *q);

/* Pending approvals (state PENDING) in q. */
size_t moat__approval_pending(const moat_approval_queue *q);

/* The first lease that covers a at now_ms, or NULL. */
moat_lease *moat__approval_lease_match(moat_approval_queue *q, const moat_ask *a, uint64_t now_ms);

/* Holds a: a new PENDING entry with id and ticket, asked at now_ms, timing
 * out timeout_ms later. E2BIG when MOAT_APPROVAL_MAX_PENDING wait already,
 * EEXIST for an id or ticket in use. Returns the entry. */
int moat__approval_add(moat_approval_queue *q, const moat_ask *a, const char *id, uint64_t ticket, uint64_t now_ms,
		       uint64_t timeout_ms, moat_approval **ret, moat_error *err);

moat_approval *moat__approval_find(moat_approval_queue *q, const char *id);
moat_approval *moat__approval_find_ticket(moat_approval_queue *q, uint64_t ticket);

/* What a person decided. */
typedef struct moat_decision {
	bool allow;
	moat_lease_kind kind;
	moat_scope scope;
	uint64_t for_ms; /* kind FOR: how long, > 0 */
	uid_t by;
	const char *note; /* allow: the note; deny: the reason; may be NULL */
	const char *lease_id; /* FOR and SESSION: the new lease's id */
} moat_decision;

/* Decides the pending approval id at now_ms. ENOENT: no such id; EALREADY:
 * it is decided already (or timed out); EINVAL: a decision that does not
 * hold together (a lease without an id or a duration, a scope the ask
 * cannot take); E2BIG: the lease table is full. An allow with a lease also
 * allows every other pending approval the new lease covers (their lease
 * field names it). *ret_lease: the new lease, or NULL. */
int moat__approval_decide(moat_approval_queue *q, const char *id, const moat_decision *d, uint64_t now_ms,
			  moat_lease **ret_lease, moat_error *err);

/* Ends what has run out at now_ms: each pending approval past its expiry
 * becomes TIMED_OUT (on_timeout called), each FOR lease past its end is
 * removed (on_lease_expire called before). Callbacks may be NULL. */
void moat__approval_expire(moat_approval_queue *q, uint64_t now_ms,
			   void (*on_timeout)(void *ud, const moat_approval *a),
			   void (*on_lease_expire)(void *ud, const moat_lease *l), void *ud);

/* Removes the lease id (into *ret when not NULL). ENOENT when none. */
int moat__approval_revoke(moat_approval_queue *q, const char *id, moat_lease *ret, moat_error *err);

/* Removes the entry with ticket (its holder collected the decision or went
 * away); returns whether there was one, its last state in *ret. */
bool moat__approval_remove_ticket(moat_approval_queue *q, uint64_t ticket, moat_approval *ret);

/* The soonest moment something in q runs out (a pending expiry or a
 * lease's end), or UINT64_MAX. */
uint64_t moat__approval_next_deadline(const moat_approval_queue *q);

/* Whether s is an approval id ('a') or a lease id ('l'). */
bool moat__approval_id_valid(const char *s, char prefix);

/* A token bucket that bounds how often something the sandbox can cause is
 * done on the host (the notify command): burst at once, then one every
 * every_ms. */
typedef struct moat_rate {
	uint64_t burst, every_ms;
	uint64_t tokens_milli; /* thousandths of a token */
	uint64_t last_ms;
	bool started;
} moat_rate;

/* Pure: takes a token at now_ms (true), or says there is none (false). */
bool moat__rate_take(moat_rate *r, uint64_t now_ms);
