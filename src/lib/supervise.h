/* The supervisor loop: everything the host side does while a sandbox runs,
 * from the init's GO until its exit is reaped, accounted and reported.
 *
 * sandbox.c builds the sandbox (namespaces, maps, cgroup, pipes) and hands
 * its descriptors over in a moat_super; moat__supervise then owns them. It
 * polls the output pipes (counted, capped, forwarded through bounded
 * buffers, iobuf.h), the control socket, the init's pidfd, the wall timer,
 * the cgroup's events, the caller's signals (a signalfd) and the command's
 * terminal (tty.h); never blocks but in poll; kills the init on a limit
 * (the kernel then kills every process of the pid namespace); reaps it,
 * accounts, removes the cgroup, writes the audit end, and delivers what
 * consumers have not taken yet for a bounded time. */
#pragma once

#include "iobuf.h"
#include "limits.h"
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
	moat_result *r;
	moat_run_limits *lim;  /* owned: freed once the run is accounted */
	int pidfd;             /* the init's; owned */
	pid_t pid;
	uint64_t t0;           /* when the init was cloned */
	int ctl;               /* control socket to the init; owned */
	int out_fd, err_fd;    /* read ends of the output pipes; owned */
	int stdin_feed;        /* write end of the stdin pipe, or -1; owned */
	int timer_fd;          /* wall-clock timer, or -1; owned */
	int sig_fd;            /* the caller's signals; not owned */

	/* The loop's state. */
	bool killed;
	moat_status kill_reason;
	bool got_exit;
	int wait_status;
	bool setup_failed;
	int setup_errno;
	bool exec_failed;
	uint64_t out_total;
	struct moat_netproxy *netproxy;
	/* Transparent egress: the redirected TCP listener and the DNS stub's
	 * socket, held until the proxy port arrives and the gateway starts
	 * with all three (netnat.h); -1 when none. */
	int transparent_fd, dns_fd;
	struct moat_filetrail *trail; /* the file and exec trail, when on */
	bool session_logged;   /* session.start is in the audit log */
	/* Where output goes: never written with a blocking call (iobuf.h). */
	moat_sink out, err;
	moat_tty tty;
	bool sandbox_gone;     /* the init is reaped: take what pipes hold */
	uint64_t grace_end_ns; /* a caller's signal was passed on: end by then */
	int caller_signal;     /* the last signal the caller sent us, or 0 */
	/* With secrets, the command's stdout and stderr go through a redactor
	 * each (redactstream.h) before they reach any consumer; without, no
	 * redactor is in the path. */
	bool redacting;
	moat_redact_stream red_out, red_err;
	int out_fs;            /* the capped /out's tmpfs (outdir.c), or -1; the
	                        * front copies it out after the loop, then closes it */
} moat_super;

/* Every descriptor -1, sinks and terminal empty. */
void moat__super_init(moat_super *s, const moat_config *c, const moat_run_io *io, moat_result *r);
/* Kills the init unless it is reaped already, reaps it (the kernel has
 * then ended every process of its pid namespace) and closes its pidfd.
 * ru, when set, gets its resource usage. Safe to call twice. */
void moat__super_end_init(moat_super *s, struct rusage *ru);
/* Closes every descriptor still held and the sinks; restores the caller's
 * terminal. Safe to call twice. */
void moat__super_close(moat_super *s);
/* The init was told GO: runs the sandbox to its end and fills *s->r
 * (status, accounting, output counts). Closes what it owns but the
 * signalfd. */
void moat__supervise(moat_super *s);
