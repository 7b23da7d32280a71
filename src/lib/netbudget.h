/* Egress budgets: how much one sandbox may use the network, per destination
 * and for the whole run. Counts concurrent connections, requests per minute
 * (a token bucket refilled from a clock the caller passes in) and bytes
 * sent and received. Pure bookkeeping, no clock or I/O of its own, and not
 * thread-safe: the gateway's event loop owns it.
 *
 * A check that fails is a denial with a one-line reason; it changes no
 * counter, so a refused connection or request costs nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Destinations tracked per run; a run that talks to more is refused new
 * ones (its per-run budgets stay exact). */
#define MOAT_BUDGET_MAX_DESTS 4096
#define MOAT_BUDGET_DEST_MAX 300 /* "host:port" key, NUL included */
#define MOAT_BUDGET_REASON_MAX 256

/* 0 means "not limited" in every field. */
typedef struct moat_budget_limits {
	uint32_t max_conns;            /* concurrent connections */
	uint32_t requests_per_minute;  /* sustained rate; the burst is one minute's worth */
	uint64_t max_bytes_up;         /* sent by the sandbox, in total */
	uint64_t max_bytes_down;       /* received by the sandbox, in total */
} moat_budget_limits;

typedef struct moat_budget moat_budget;

/* run: limits for everything together; per_dest: for each destination. */
moat_budget *moat_budget_new(const moat_budget_limits *run, const moat_budget_limits *per_dest);
void moat_budget_free(moat_budget *b);
static inline void moat_budget_freep(moat_budget **b) { moat_budget_free(*b); }

/* A new connection to dest ("host:port"). On true the connection is
 * counted; close it with moat_budget_conn_close. */
bool moat_budget_conn_open(moat_budget *b, const char *dest, char *reason, size_t reason_len);
void moat_budget_conn_close(moat_budget *b, const char *dest);
/* One request (or one tunnel) at time now_ns (any monotonic clock). */
bool moat_budget_request(moat_budget *b, const char *dest, uint64_t now_ns, char *reason,
			 size_t reason_len);
/* Bytes about to be relayed. On false nothing is counted and the relay
 * should end the connection. */
bool moat_budget_bytes(moat_budget *b, const char *dest, uint64_t up, uint64_t down, char *reason,
		       size_t reason_len);

typedef struct moat_budget_usage {
	uint32_t conns;
	uint64_t requests;
	uint64_t bytes_up, bytes_down;
} moat_budget_usage;

/* Usage of one destination, or of the run when dest is NULL. Returns false
 * for a destination never seen. */
bool moat_budget_usage_get(const moat_budget *b, const char *dest, moat_budget_usage *ret);
