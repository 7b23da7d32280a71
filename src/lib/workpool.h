/* A pool of forked workers that runs n independent items, at most
 * `parallel` at once, and hands back each item's result in item order
 * (moat judge's cases, moat eval's samples).
 *
 * Each item runs in a process of its own, forked from the caller: the
 * sandbox it starts is cloned from a process that holds no other item's
 * state, and a crash of one item is that item's failure alone. A worker
 * writes one message on a pipe and exits; the caller turns the message
 * (or the worker's death) into the item's result. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct moat_workpool_ops {
	/* In the worker (a forked child): runs item i and writes its message
	 * on fd, then _exit()s. Must not return. */
	void (*work)(void *ctx, size_t i, int fd);
	/* In the caller, once item i's worker has ended: msg (len bytes, not
	 * NUL-terminated; NULL when it sent nothing) and its wait status.
	 * Returns the item's result, a string of the caller's (malloc'd),
	 * or NULL when out of memory. */
	char *(*done)(void *ctx, size_t i, const char *msg, size_t len, int status);
	/* In the caller, in item order: item i's result, which emit now owns. */
	void (*emit)(void *ctx, size_t i, char *result);
	/* Optional: after each item's worker ended (in the order they end). */
	void (*progress)(void *ctx, size_t done, size_t n);
} moat_workpool_ops;

/* Runs items 0..n-1 with at most parallel (>= 1) workers; a worker's
 * message longer than msg_max counts as the worker failing. Fails only on
 * the pool's own errors (fork, poll, memory), after ending every worker. */
int moat__workpool_run(size_t n, unsigned parallel, size_t msg_max, const moat_workpool_ops *ops, void *ctx,
		       moat_error *err);
