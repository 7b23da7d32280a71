/* The host side of delegated nested runs (docs/nested.md): a sandbox whose
 * policy has exec.delegate gets a socket at /run/moat/ctl (a host folder of
 * its own, bound read-only at /run/moat) through which a `moat run` inside
 * asks for a sibling sandbox. Its server is one thread of the front with
 * one poll loop, or a descriptor in its owner's event loop (the keeper's):
 * it never blocks the supervisor, takes one message type (a
 * narrower run, nestproto.h), checks it against the outer policy (the
 * policy intersection), starts the sibling as a child `moat run` with the
 * intersected policy and the three stdio descriptors it was given, and
 * answers with its exit status when its pidfd fires. The sibling's audit
 * events are copied into the outer run's log. */
#pragma once

#include "audit.h"
#include "error.h"
#include "policy.h"

typedef struct moat_nest_server moat_nest_server;

/* Makes the socket's folder and listening socket, and adds the bind of
 * that folder at /run/moat to p (the outer policy, before it is compiled).
 * p is copied: the server checks requests against that copy. */
int moat_nest_server_new(moat_policy *p, moat_nest_server **ret, moat_error *err);
/* Starts the server's thread (call once the sandbox's init is cloned:
 * never clone from a threaded process). audit may be NULL. */
int moat_nest_server_start(moat_nest_server *s, moat_audit *audit, moat_error *err);
/* Or, for an owner with an event loop of its own (the keeper: one loop, no
 * thread per anything): makes the server's pollable descriptor, readable
 * when moat_nest_server_dispatch has something to do; dispatch never
 * blocks (a refused or answered request, a sibling started or reaped).
 * Call attach once the sandbox's init is cloned, as start. */
int moat_nest_server_attach(moat_nest_server *s, moat_audit *audit, moat_error *err);
int moat_nest_server_fd(const moat_nest_server *s);
int moat_nest_server_dispatch(moat_nest_server *s, moat_error *err);
/* Stops the thread, ends every sibling still running (SIGTERM, then
 * SIGKILL after a grace), reaps them, removes the folder, frees s. */
void moat_nest_server_free(moat_nest_server *s);
static inline void moat_nest_server_freep(moat_nest_server **s) { moat_nest_server_free(*s); }

/* The inside half: runs argv in a sibling through MOAT_NEST_SOCKET with
 * policy (the inner run's effective one), this process's working directory
 * and its fds 0, 1, 2. Returns the sibling's exit status, or -1 with err
 * (the front's refusal, naming the field, is err's message). */
int moat_nest_run(const moat_policy *policy, char *const *argv, moat_error *err);
