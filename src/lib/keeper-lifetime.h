/* A keeper's own end of its sandbox (keeper.h): a hard time to live and an
 * idle time, both timers in the keeper's event loop (nothing polls), and
 * end.json, which says why the sandbox ended, written into a folder its
 * front gave (a session's record folder: session.h) when the keeper exits.
 * Set by the lifetime request (keeper-proto.h). */
#pragma once

#include "error.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a sandbox ended, as end.json's "reason" says it. */
#define MOAT_END_TTL "ttl"         /* lifetime.ttl_ms passed */
#define MOAT_END_IDLE "idle"       /* lifetime.idle_ms with no command */
#define MOAT_END_STOPPED "stopped" /* a front asked (stop) */
#define MOAT_END_LIMIT "limit"     /* a limit of the sandbox's ended it (end.json "limit" says which) */
#define MOAT_END_ENDED "ended"     /* its init ended on its own */

typedef struct moat_keeper_lifetime_state {
	struct event_base *base;
	struct event *ttl_ev, *idle_ev;
	uint64_t ttl_ms, idle_ms;
	int end_dir;       /* the folder end.json goes to, or -1 */
	char reason[16];   /* set when the keeper itself ended the sandbox */
	/* Called (once) when a timer passes: the keeper stops its sandbox. */
	void (*expire)(void *arg, const char *reason);
	void *arg;
} moat_keeper_lifetime_state;

void moat__keeper_lifetime_init(moat_keeper_lifetime_state *lt, struct event_base *base,
				void (*expire)(void *arg, const char *reason), void *arg);
/* Sets both timers from now (0: none) and takes end_dir (the caller's
 * copy stays the caller's). n_live: commands running now. */
int moat__keeper_lifetime_set(moat_keeper_lifetime_state *lt, uint64_t ttl_ms, uint64_t idle_ms, int end_dir, size_t n_live,
			      moat_error *err);
/* A command started or ended: with none running the idle timer runs from
 * now, else it waits. */
void moat__keeper_lifetime_activity(moat_keeper_lifetime_state *lt, size_t n_live);
/* Records reason when none is set (a stop asked by a front). */
void moat__keeper_lifetime_note(moat_keeper_lifetime_state *lt, const char *reason);
/* end.json with the reason alone (cpu_ms null) when the reason is known
 * before the sandbox goes: written before the keeper stops answering, so
 * a front that finds the session dead finds why. */
void moat__keeper_lifetime_write_reason(moat_keeper_lifetime_state *lt);
/* Writes end.json (reason, the limit that ended the sandbox if any, when,
 * and the CPU time of everything that ran in it, or null (cpu_ms < 0)
 * when that is not known) into end_dir, replacing it whole, and lets end_dir go. */
void moat__keeper_lifetime_write_end(moat_keeper_lifetime_state *lt, const char *limit_hit, int64_t cpu_ms);
void moat__keeper_lifetime_done(moat_keeper_lifetime_state *lt);

/* Pure: end.json's text for reason and limit (NULL or ""), at time t,
 * after cpu_ms of CPU time (null when negative: not known). */
char *moat__keeper_end_json(const char *reason, const char *limit, int64_t t, int64_t cpu_ms);
