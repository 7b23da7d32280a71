/* One sandboxed run, start to finish: the sequencer that calls every
 * mechanism (userns, mount, net, cgroup, limits, confinement) in order. */
#pragma once

#include "config.h"
#include "result.h"

struct moat_audit;  /* audit.h */
struct moat_gateway_config; /* gateway.h */
struct moat_record; /* record.h */

/* Where the run's output goes. By default stdout and stderr of the sandbox
 * are captured through pipes, counted, capped, and forwarded to fds 1 and 2
 * of the caller. */
typedef struct moat_run_io {
	int forward_stdout_fd; /* -1: do not forward */
	int forward_stderr_fd;
	/* Called with every chunk read (before forwarding), e.g. to keep the
	 * output for comparison. stream is 1 or 2. May be NULL. */
	void (*on_output)(void *userdata, int stream, const char *buf, size_t len);
	void *userdata;
	/* When set, the sandbox's stdin is a pipe fed with these bytes (then
	 * closed); otherwise config->stdin_path, or with stdin_inherit the
	 * caller's stdin when it is not a terminal, or /dev/null. */
	const char *stdin_data;
	size_t stdin_len;
	bool stdin_data_set;
	/* The caller's fd 0 is the command's stdin (unless it is a terminal):
	 * only when asked, since a library's caller may be a server whose fd 0
	 * is not meant for the sandbox. */
	bool stdin_inherit;
	/* Audit writer, or NULL. With config->audit_files it also gets the
	 * file and exec trail (filetrail.h). */
	struct moat_audit *audit;
	/* With config->net == MOAT_NET_PROXY: the egress gateway's rules,
	 * names and budgets, and where its events go. Required then. */
	const struct moat_gateway_config *gateway;
	/* Terminal recording of the output (and, with -t, the input), or
	 * NULL. */
	struct moat_record *record;
	/* The run's secrets (secretstore.h), or NULL: armed once the init
	 * has been cloned, so that no value is in memory the init inherits. */
	struct moat_secrets *secrets;
	/* Called once the init has been cloned and before the command
	 * starts, for what must not be in memory the init inherits (the TLS
	 * authority's key). A failure ends the run as a setup error. */
	int (*after_clone)(void *arg, moat_error *err);
	void *after_clone_arg;
} moat_run_io;

void moat_run_io_init(moat_run_io *io);

/* Runs config->argv in a fresh sandbox and fills *ret. Returns 0 when the
 * run happened (whatever the command did: see ret->status) and a negative
 * errno with err filled when moat could not set it up; in that case
 * ret->status is setup_error and ret->exit_status is 125. */
int moat_sandbox_run(const moat_config *config, const moat_run_io *io, moat_result *ret, moat_error *err);
