/* The supervisor loop of a run (moat_sandbox_run): everything the host
 * side does while the run's one command runs in its sandbox object
 * (sandbox.h), from the spawn until the sandbox is destroyed and its
 * output delivered.
 *
 * sandbox.c creates the sandbox, spawns the command with the write ends of
 * the output pipes and hands the rest over in a moat_super; moat__supervise
 * then owns them. It polls the output pipes (counted, capped, forwarded
 * through bounded buffers, iobuf.h), the sandbox's descriptor (its events:
 * the command's end, the sandbox's end on a limit), the caller's signals (a
 * signalfd) and the command's terminal (tty.h); never blocks but in poll;
 * ends the sandbox on the output cap; destroys it (reaped, accounted,
 * cgroup removed, audit end written, /out checked), and delivers what
 * consumers have not taken yet for a bounded time. */
#pragma once

#include "iobuf.h"
#include "runlimits.h"
#include "redactstream.h"
#include "sandbox.h"
#include "tty.h"

#include <sys/resource.h>
#include <sys/types.h>

struct moat_netproxy;
struct moat_filetrail;

typedef struct moat_super {
	/* Given by sandbox.c. */
	const moat_config *c;
	const moat_run_io *io;
	moat_result *r;        /* the caller's: filled by the destroy */
	moat_sandbox *sb;      /* owned: destroyed by the loop */
	uint32_t id;           /* the command */
	uint64_t t0;           /* when the run started */
	int out_fd, err_fd;    /* read ends of the output pipes, or -1; owned */
	int stdin_feed;        /* write end of the stdin pipe, or -1; owned */
	int sig_fd;            /* the caller's signals; not owned */

	/* The loop's state. */
	bool got_exit;         /* the command's end event came */
	uint64_t out_total;
	/* Where output goes: never written with a blocking call (iobuf.h). */
	moat_sink out, err;
	moat_tty tty;
	bool sandbox_gone;     /* the sandbox ended: take what pipes hold */
	uint64_t grace_end_ns; /* a caller's signal was passed on: end by then */
	int caller_signal;     /* the last signal the caller sent us, or 0 */
	/* With secrets, the command's stdout and stderr go through a redactor
	 * each (redactstream.h) before they reach any consumer; without, no
	 * redactor is in the path. */
	bool redacting;
	moat_redact_stream red_out, red_err;
	/* What moat_sandbox_destroy said. */
	int destroy_rc;
	moat_error destroy_err;
} moat_super;

/* Every descriptor -1, sinks and terminal empty. */
void moat__super_init(moat_super *s, const moat_config *c, const moat_run_io *io, moat_result *r);
/* Closes every descriptor still held and the sinks; restores the caller's
 * terminal. Safe to call twice. */
void moat__super_close(moat_super *s);
/* The command was spawned: runs the sandbox to its end, destroys it and
 * fills *s->r (status, accounting, output counts); destroy_rc and
 * destroy_err say what the destroy returned. Closes what it owns but the
 * signalfd. */
void moat__supervise(moat_super *s);
