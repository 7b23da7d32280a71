/* Approval gates, the keeper's side: one sandbox's queue of held actions
 * and its leases (approval.h holds the pure logic), shared by the thread
 * that holds actions (the gateway's) and the thread that serves the
 * control socket (the keeper's), and writing every step to the audit log:
 *
 *   approval.request    an action is held            {id, what, ...}
 *   approval.decision   allowed, denied, timed out,  {id, decision, by_uid,
 *                       withdrawn or ended            kind, scope, lease,
 *                                                     until, note|reason}
 *   lease.grant         a decision granted a lease   {lease, approval, ...}
 *   lease.expire        a lease ran out              {lease}
 *   lease.revoke        a person ended a lease       {lease, by_uid}
 *
 * Nothing here is reachable from inside the sandbox: decisions come only
 * through the keeper's control socket, whose peers are checked (the
 * keeper's uid or root). docs/approvals.md tells the story. */
#pragma once

#include "approval.h"
#include "error.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

struct moat_audit;

typedef struct moat_approvals moat_approvals;

typedef struct moat_approvals_opts {
	const char *session;   /* the sandbox's id, for the notify JSON */
	uint64_t timeout_ms;   /* 0: MOAT_APPROVAL_DEFAULT_TIMEOUT_MS */
	const char *notify;    /* approvals.notify: run by /bin/sh -c, or NULL */
	struct moat_audit *audit; /* may be NULL; not owned */
} moat_approvals_opts;

int moat_approvals_new(const moat_approvals_opts *o, moat_approvals **ret, moat_error *err);
void moat_approvals_free(moat_approvals *ap);
/* The sandbox's id, once it has one (the keeper names it after creating
 * the sandbox). */
void moat_approvals_set_session(moat_approvals *ap, const char *session);
static inline void moat_approvals_freep(moat_approvals **ap) { moat_approvals_free(*ap); }
#define _cleanup_approvals_ _cleanup_(moat_approvals_freep)

/* ---- the holder's side (the gateway's thread) ---- */

/* Called (without the lock held, from whichever thread decided) when
 * something the holder holds may have been decided: the holder then polls
 * its tickets. Must be quick and thread-safe (an eventfd write). */
typedef void (*moat_approvals_wake_fn)(void *ud);
void moat_approvals_set_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud);
/* More holders (the exec gate's trails): each is woken as the one above.
 * At most MOAT_APPROVALS_MAX_WAKES; add fails with false beyond. */
#define MOAT_APPROVALS_MAX_WAKES 80
bool moat_approvals_add_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud);
void moat_approvals_remove_wake(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud);

/* Called (with the lock held, from the holder's thread) when an action is
 * newly held, so that the deciding side's clock can be armed for its
 * timeout (moat_approvals_next_deadline). Must be quick, thread-safe and
 * must not call back in here (an eventfd write). */
void moat_approvals_set_schedule(moat_approvals *ap, moat_approvals_wake_fn fn, void *ud);

typedef struct moat_approvals_outcome {
	moat_approval_state state;
	char id[MOAT_APPROVAL_ID_LEN];    /* the approval (held) */
	char lease[MOAT_APPROVAL_ID_LEN]; /* the lease that let it through, or "" */
	char reason[MOAT_APPROVAL_NOTE_MAX];
	uint64_t timeout_ms;
	bool ended; /* DENIED because the sandbox ended, not by a person */
} moat_approvals_outcome;

/* Asks about a, held by the holder's ticket (unique while held). ALLOWED:
 * a lease covers it (ret->lease), nothing is held; PENDING: held, the
 * decision comes through the wake callback and moat_approvals_poll. On
 * failure (the queue is full: E2BIG) nothing is held and the action is to
 * be refused with err's message. */
int moat_approvals_ask(moat_approvals *ap, const moat_ask *a, uint64_t ticket, moat_approvals_outcome *ret,
		       moat_error *err);
/* The state of ticket's approval; once it is decided the entry is gone
 * (a second poll says DENIED: nothing is held under that ticket). */
void moat_approvals_poll(moat_approvals *ap, uint64_t ticket, moat_approvals_outcome *ret);
/* The holder let go of ticket (its client went away): a pending approval
 * ends as withdrawn. */
void moat_approvals_withdraw(moat_approvals *ap, uint64_t ticket, const char *why);
/* Denies everything pending with why (the sandbox is ending), and wakes
 * the holder. */
void moat_approvals_end(moat_approvals *ap, const char *why);

/* ---- the deciding side (the keeper's thread) ---- */

/* Times out and expires what has run out now (auditing each); wakes the
 * holder when something it holds timed out. Cheap when nothing has. */
void moat_approvals_tick(moat_approvals *ap);
/* When the next held action times out or lease ends, on moat__now_ns()'s
 * clock in ms; UINT64_MAX: nothing will. The deciding side arms a one-shot
 * timer for it (nothing polls), again after each tick, each request and
 * each schedule call. */
uint64_t moat_approvals_next_deadline(moat_approvals *ap);
/* How many actions wait for a decision, and how many leases are in force
 * (a session's show). */
void moat_approvals_counts(moat_approvals *ap, size_t *pending, size_t *leases);

/* One request from the control socket, by a peer of uid (already checked
 * to be the keeper's or root):
 *
 *   {"op": "ls"}                               {"approvals": [...]}
 *   {"op": "leases"}                           {"leases": [...]}
 *   {"op": "approve", "id", "kind": "once"|"for"|"session",
 *    "for_ms", "scope": "exact"|"path"|"host", "note", "by"}
 *                                              {"id", "lease", "until"}
 *   {"op": "deny", "id", "reason", "by"}       {"id"}
 *
 * "by" (optional) names who decided as the front knows them (moatd: a
 * token's name), logged beside the peer's uid.
 *   {"op": "revoke", "lease"}                  {"lease"}
 *
 * Fails naming the field (EINVAL), or ENOENT for an id this sandbox does
 * not hold (a front asks every session's keeper in turn). *ret is new. */
int moat_approvals_request(moat_approvals *ap, uid_t uid, json_t *req, json_t **ret, moat_error *err);

/* The JSON an approval is shown as (ls, notify): {id, session, state,
 * kind, what, host, port, method, path | exe, argv, asked_at, expires_at}
 * with times in seconds since the epoch. */
json_t *moat__approval_to_json(const moat_approval *e, const char *session, uint64_t now_mono_ms,
			       uint64_t now_wall_ms);
