/* moatd's warm pool (docs/api.md, "Warm pool"): per pooled profile, a few
 * sandboxes made ahead, each a keeper (keeper.h) waiting with its init,
 * namespaces, root and cgroup in place. A run takes one, has its command
 * spawned there and the sandbox stopped at its end: a pooled sandbox
 * serves one request and is never used again. The pool refills one
 * sandbox at a time in the background.
 *
 * moatd holds no sandbox's memory: a pooled sandbox is its keeper's. Each
 * one moatd made is recorded in STATE/pool/ID; at its start moatd stops
 * those a previous instance left (killed before it could stop them), and
 * a pooled keeper nobody takes ends by itself after MOATD_POOL_IDLE_MS,
 * so that none is left behind even when moatd never starts again. */
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>

#include "keeper.h"
#include "poolplan.h"

#define MOATD_POOL_IDLE_MS (10u * 60u * 1000u)

typedef struct moatd_pool moatd_pool;
typedef struct moatd_pool_run moatd_pool_run;

/* Starts the pool for conf: stops what an earlier moatd left in
 * STATE/pool, then fills each profile one sandbox at a time. moat: the
 * binary keepers are run from. */
int moatd_pool_new(struct event_base *base, const moatd_pool_conf *conf, const char *moat, const char *state,
		   moatd_pool **ret, moat_error *err);
/* Stops every pooled sandbox not taken, and frees. Runs under way end
 * with their own (their callbacks are not called). */
void moatd_pool_free(moatd_pool *p);

/* How a pooled run ended. */
typedef struct moatd_pool_end {
	moat_keeper_exit x;  /* valid when ok */
	bool ok;             /* the keeper said how the command ended */
	const char *limit;   /* "wall", "output": moatd ended it for that; else NULL */
	char error[256];     /* when !ok: why */
	/* when !ok and the keeper refused the spawn itself (the command
	 * never started): its errno, EINVAL or E2BIG for a request it could
	 * never run; else 0 */
	int spawn_error;
	/* What the keeper said of its sandbox (isolation, enforced, the
	 * cgroup's figures; moat__result_sandbox_json), or NULL: the pool's,
	 * freed after the callback. */
	struct json_t *sandbox;
} moatd_pool_end;

typedef void (*moatd_pool_run_cb)(void *arg, const moatd_pool_end *end);

/* Spawns argv in a ready sandbox of plan->profile with the command's
 * streams in, out, errfd (the caller's; the keeper gets copies), and
 * calls cb once it ended (after cb the run is freed). -ENOENT when no
 * sandbox of that profile is ready (a miss: the caller runs it cold); any
 * other error with err filled (EINVAL, E2BIG: the request cannot be
 * sent). It does not wait for the keeper: a spawn the keeper refuses
 * comes to cb, with end->spawn_error. */
int moatd_pool_run_start(moatd_pool *p, const moatd_pool_plan *plan, char *const *argv, int in, int out, int errfd,
			 moatd_pool_run_cb cb, void *arg, moatd_pool_run **ret, moat_error *err);
/* Ends the run's sandbox now (the client left, or its output went over
 * the cap: limit names it, or NULL); cb still comes. */
void moatd_pool_run_stop(moatd_pool_run *r, const char *limit);

/* Pool size, hits and misses, in the Prometheus text format. */
void moatd_pool_metrics(moatd_pool *p, struct evbuffer *b);
/* A miss for a run that could not be pooled (why: poolplan's why_cold). */
void moatd_pool_count_cold(moatd_pool *p, const char *why);
