/* What a moat killed with SIGKILL leaves on the host, and how the next moat
 * of the same user sweeps it, whatever that run's options.
 *
 * A killed moat cannot clean up after itself; the sandbox dies with it (its
 * init has PR_SET_PDEATHSIG), but two kinds of host objects stay: the run's
 * cgroup directories (one per hierarchy, named moat-PID-N, and on cgroup v2
 * the moat-supervisor-PID leaf the supervisor moved itself into), the
 * judge's staging folder ($TMPDIR/moat-judge-PID-XXXXXX) and the nested
 * runs' socket folder ($TMPDIR/moat-nest-PID-XXXXXX, nested.h). Each carries the
 * PID of the moat that made it; one whose maker is gone is removed by the
 * next moat: cgroups when it makes its own (cgroup.c, in every hierarchy it
 * can write, not only the ones its own run uses), the folders when it
 * makes a sandbox (moat__sandbox_prepare). */
#pragma once

#include "util.h"

#include <sys/types.h>
#include <time.h>

/* True when the process that made an object at `made` (CLOCK_REALTIME)
 * and named it after its pid is certainly gone: no process has that pid,
 * or the one that has it started after the object was made (the pid was
 * reused). Unsure (an unreadable /proc entry) is false. */
bool moat__maker_gone(pid_t pid, time_t made);
/* moat__maker_gone in two halves, for a caller that asks of one pid for
 * several objects (a sweep of every cgroup hierarchy): whether pid lives
 * (1, *ret its start, CLOCK_REALTIME seconds), is gone (0) or unsure (-1);
 * and whether a maker started at started is not the one of an object made
 * at made. */
int moat__maker_started(pid_t pid, time_t *ret);
bool moat__maker_gone_since(time_t started, time_t made);

/* Removes the judge's staging folders and the nested runs' socket folders
 * that a killed moat of this user left in tmpdir (NULL: $TMPDIR, else
 * /tmp). Never follows a link, and touches only folders the caller owns.
 * Returns how many it removed. */
unsigned moat__sweep_stages(const char *tmpdir);

/* The prefix of a staging folder's name; the PID and six random
 * characters follow. */
#define MOAT_STAGE_PREFIX "moat-judge-"
/* The same for the nested runs' folder: its siblings' policies and logs,
 * and sock/ with the socket. */
#define MOAT_NEST_PREFIX "moat-nest-"
