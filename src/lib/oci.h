/* moat as an OCI runtime: the runtime CLI that runc, crun and runsc share
 * and that podman, containerd and Kubernetes call (create, start, state,
 * kill, delete, exec, list), on moat's sandbox object.
 *
 * One keeper per container. `create` starts it (fork and exec of moat's
 * own binary, `moat __oci-keeper`): it reads the bundle's config.json
 * (oci-spec.h), builds the sandbox under the policy the annotations name,
 * and waits; `start` asks it to spawn the container's process, whose
 * standard streams are those `create` was given (or, with a terminal, a
 * pseudo-terminal whose master went to --console-socket). The keeper is
 * the pid the caller gets (--pid-file): it ends when the container's
 * process does, with its exit status, and takes every process of the
 * container with it; a caller that reaps it (conmon, containerd's shim, as
 * subreapers) reads the container's exit status from it.
 *
 * State, under the runtime's root (--root, default /run/moat-oci, or
 * $XDG_RUNTIME_DIR/moat-oci without root), one folder per container:
 *   ROOT/ID/state.json   the runtime-spec state, written by the keeper
 *   ROOT/ID/lock         flock held by each command while it acts, so two
 *                        callers at once act one after the other
 *   ROOT/ID/keeper.lock  flock held by the keeper for its whole life: free
 *                        means the keeper (and so the container) is gone
 *   ROOT/ID/ctl          the keeper's socket (SOCK_SEQPACKET), only for
 *                        its own user (and root)
 * `delete` removes the folder. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

#define MOAT_OCI_VERSION "1.2.0" /* the runtime-spec version moat reports */
#define MOAT_OCI_ID_MAX 128
#define MOAT_OCI_DEFAULT_ROOT "/run/moat-oci"

/* Pure: whether id may name a container (letters, digits, '_', '-', '.',
 * '+', starting with a letter or digit, at most MOAT_OCI_ID_MAX). */
bool moat_oci_id_valid(const char *id);
/* Pure: "KILL", "SIGKILL", "9" -> 9; -1 when not a signal. */
int moat_oci_signal_from_string(const char *s);
/* The default --root for a process of effective uid euid. */
int moat_oci_default_root(char *ret, size_t len);

typedef struct moat_oci_create_opts {
	const char *bundle;         /* the bundle's folder; NULL: the working directory */
	const char *pid_file;       /* where the keeper's pid is written, or NULL */
	const char *console_socket; /* with process.terminal: where the pty master goes */
	const char *exe;            /* moat's binary; NULL: /proc/self/exe */
} moat_oci_create_opts;

/* Creates container id and returns once its sandbox is ready and waiting
 * for start (*ret_pid: its keeper). The keeper's standard streams are the
 * caller's, for the container's process. */
int moat_oci_create(const char *root, const char *id, const moat_oci_create_opts *o, pid_t *ret_pid,
		    moat_error *err);
int moat_oci_start(const char *root, const char *id, moat_error *err);
/* The runtime-spec state as JSON (ociVersion, id, status, pid, bundle,
 * annotations), the caller's to free. */
int moat_oci_state(const char *root, const char *id, char **ret_json, moat_error *err);
/* Sends sig to the container's process (all: to every process of it). A
 * container not yet started ends. */
int moat_oci_kill(const char *root, const char *id, int sig, bool all, moat_error *err);
/* Removes a stopped or created container; a running one only with force
 * (it is killed first). */
int moat_oci_delete(const char *root, const char *id, bool force, moat_error *err);
/* The state JSON of every container under root, as a JSON array. */
int moat_oci_list(const char *root, char **ret_json, moat_error *err);

typedef struct moat_oci_exec_opts {
	const char *process_file; /* a runtime-spec "process" JSON, or NULL */
	char *const *argv;        /* without process_file: the command */
	char *const *env;         /* NAME=VALUE added (-e) */
	const char *cwd;          /* NULL: the container's */
	bool tty;
	const char *console_socket; /* with tty: where the pty master goes */
	bool detach;
	const char *pid_file;
} moat_oci_exec_opts;

/* Runs a further process in a running container. Without detach, returns
 * once it ends with *ret_status its exit status (code, or 128+signal).
 * With detach, a small process of ours waits for it and exits with its
 * status; its pid goes to pid_file and *ret_status is 0. */
int moat_oci_exec(const char *root, const char *id, const moat_oci_exec_opts *o, int *ret_status, moat_error *err);

/* The `features` document (runtime-spec features.md), the caller's to
 * free. */
char *moat_oci_features_json(void);

/* The body of `moat __oci-keeper ROOT ID BUNDLE CONSOLE_SOCKET|-`: reports
 * on setup_fd (one message: "ok" or the error), then serves the container
 * and returns the process's exit status. */
int moat__oci_keeper_main(const char *root, const char *id, const char *bundle, const char *console_socket,
			  int setup_fd);
