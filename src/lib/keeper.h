/* One keeper per sandbox: a small, single-threaded process that owns one
 * sandbox (moat_sandbox, sandbox.h) and everything that lives as long as
 * it: its init, its gateway, its audit log and its control socket. Fronts
 * (the CLI, a daemon) are only its clients, so a front that ends or
 * restarts loses nothing, and a keeper that dies takes its sandbox with it.
 *
 * A keeper is started with fork and exec of moat's own binary (the hidden
 * entry `moat __keeper`), never by a fork alone: a front's heap may hold
 * other sandboxes' secrets, and nothing of it may be copied towards a
 * sandbox's init. It runs in a session of its own with its standard streams
 * on /dev/null, and reports on the setup channel that it is ready, or why
 * it could not start. Its control socket is at
 *
 *   root:      /run/moat/sandboxes/ID/ctl
 *   rootless:  $XDG_RUNTIME_DIR/moat/sandboxes/ID/ctl, or, without it,
 *              /tmp/moat-UID/sandboxes/ID/ctl
 *
 * in folders only its user can enter; every connection's peer is checked
 * (SO_PEERCRED: the keeper's own uid or root, else refused and audited).
 * The protocol is keeper-proto.h; docs/architecture.md tells the whole
 * lifecycle. */
#pragma once

#include "error.h"
#include "keeper-proto.h"
#include "sandbox.h"

#include <linux/limits.h> /* PATH_MAX; "limits.h" is moat's own */

/* ---- the runtime directory (keeper-rundir.c) ---- */

/* Pure: the folder that holds the sandboxes' runtime directories for a
 * process of effective uid euid, given $XDG_RUNTIME_DIR (NULL or not
 * absolute: unset). */
int moat__keeper_base_path(uid_t euid, const char *xdg_runtime_dir, char *ret, size_t len);

/* Opens (making them as needed, mode 0700) the base folder's components
 * below the system's own (/run, $XDG_RUNTIME_DIR, /tmp), never through a
 * link, and checks each is a folder of ours that no one else may write.
 * Returns the descriptor, or a negative errno with err filled. */
int moat__keeper_base_open(char *ret_path, size_t len, moat_error *err);
/* The same for a sibling folder of sandboxes/ (sessions/: session.h). */
int moat__runtime_base_open(const char *leaf, char *ret_path, size_t len, moat_error *err);

/* A keeper's runtime directory, made and locked: the keeper holds lock_fd
 * (an flock on ID/lock, which holds its pid) for as long as it lives, so
 * that a sweep can tell a live keeper's folder from a dead one's. */
typedef struct moat_keeper_rundir {
	char id[MOAT_KEEPER_ID_LEN];
	char path[PATH_MAX];   /* BASE/ID */
	char socket[PATH_MAX]; /* BASE/ID/ctl */
	int dir_fd;
	int lock_fd;
} moat_keeper_rundir;

/* Makes BASE/ID and takes its lock: ID is the one already in ret->id when
 * it holds a valid one (the keeper picks it before it opens its audit
 * log), else a fresh random one. */
int moat__keeper_rundir_make(moat_keeper_rundir *ret, moat_error *err);
/* Removes the socket, the lock and the folder; closes the descriptors. */
void moat__keeper_rundir_remove(moat_keeper_rundir *d);

/* Removes the runtime directories in base_fd whose keeper is gone (their
 * lock is free), touching only folders of ours with a valid id and files
 * a keeper makes. Returns how many it removed. */
unsigned moat__keeper_sweep(int base_fd);

/* The socket of sandbox id, into ret. EINVAL for an id that is not one. */
int moat_keeper_socket_path(const char *id, char *ret, size_t len, moat_error *err);

/* ---- the keeper process (keeper.c) ---- */

/* What a keeper that could not start exits with (moat's setup error). */
#define MOAT_KEEPER_EXIT_SETUP 125

/* The body of `moat __keeper`: reads its sandbox's policy from setup_fd,
 * creates the sandbox, serves it until it ends, and returns the process's
 * exit status (0, or 125 when it could not start: the reason was sent on
 * setup_fd). */
int moat__keeper_main(int setup_fd);

/* ---- the client side (keeper-client.c) ---- */

typedef struct moat_keeper_start_opts {
	/* moat's binary, run as `EXE __keeper`; NULL: /proc/self/exe (the
	 * caller is moat itself). */
	const char *exe;
	/* The keeper's environment (NAME=VALUE); NULL: an empty one. Never
	 * copied from the caller's own. */
	char *const *envp;
} moat_keeper_start_opts;

typedef struct moat_keeper_info {
	char id[MOAT_KEEPER_ID_LEN];
	pid_t pid;
	char socket[PATH_MAX];
} moat_keeper_info;

/* Starts a keeper for a sandbox held to policy_yaml (an effective policy,
 * moat_policy_to_yaml: host paths absolute) and returns once it serves
 * its socket. The keeper is not the caller's child (it is reparented as a
 * daemon is) and outlives the caller. Fails with the keeper's own reason
 * when it could not create the sandbox. */
int moat_keeper_start(const char *policy_yaml, const moat_keeper_start_opts *opts, moat_keeper_info *ret,
		      moat_error *err);

/* For a daemon that must not wait, nor fork its own memory: starts a
 * keeper for policy_yaml as the caller's child (posix_spawn; a session of
 * its own, nothing of the caller's but its setup channel), sends it the
 * policy and returns at once. *ret_fd (O_CLOEXEC, the caller's) then
 * yields the keeper's one-line setup report, then end of file: read it
 * whole and hand it to moat_keeper_ready_parse. The caller reaps the
 * keeper (waitpid on *ret_pid) when it ends. */
int moat_keeper_spawn_process(const char *policy_yaml, const moat_keeper_start_opts *opts, pid_t *ret_pid,
			      int *ret_fd, moat_error *err);
/* The most a setup report takes, its newline included. */
#define MOAT_KEEPER_READY_MAX (MOAT_ERROR_MAX + PATH_MAX + 256)
/* Parses a setup report (buf: len bytes, its first line read): ready
 * fills ret; not ready is the keeper's reason, in err. */
int moat_keeper_ready_parse(const char *buf, size_t len, moat_keeper_info *ret, moat_error *err);

/* A connection to a keeper. Its calls block; one connection serves one
 * caller at a time (open several to wait on several commands at once). */
typedef struct moat_keeper moat_keeper;

/* How long a connect waits for the keeper's hello (and for a full listen
 * queue to take it). A keeper that does not answer in that time is stopped
 * or hung, not slow: its loop answers a hello at once, and seconds leave
 * room for a machine under heavy load. */
#define MOAT_KEEPER_HELLO_TIMEOUT_S 10

/* Connects to the socket and says hello; ETIMEDOUT when the keeper does
 * not answer within MOAT_KEEPER_HELLO_TIMEOUT_S. Later calls wait as long
 * as the keeper takes, unless moat_keeper_set_timeout bounds them. */
int moat_keeper_connect(const char *socket_path, moat_keeper **ret, moat_error *err);
/* Bounds each later call's send and answer to seconds (0: no bound); a
 * call that runs out fails with ETIMEDOUT, and the connection is then of
 * no further use (a late answer may still come): close it. */
int moat_keeper_set_timeout(moat_keeper *k, unsigned seconds, moat_error *err);
void moat_keeper_close(moat_keeper *k);
static inline void moat_keeper_closep(moat_keeper **k) { moat_keeper_close(*k); }
#define _cleanup_keeper_ _cleanup_(moat_keeper_closep)

/* The sandbox's id and keeper pid from the hello. */
const char *moat_keeper_sandbox_id(const moat_keeper *k);
pid_t moat_keeper_pid(const moat_keeper *k);

/* Starts spec's command (argv, env, cwd, tty, stdio fds: -1 for /dev/null)
 * in the keeper's sandbox. ret->id names it; with spec->tty, ret->pty_fd
 * is the terminal's master, the caller's to close. */
int moat_keeper_spawn(moat_keeper *k, const moat_spawn_spec *spec, moat_command *ret, moat_error *err);
/* As moat_keeper_spawn; attached: the command is killed when this
 * connection closes while it runs (its front ended, even by SIGKILL). */
int moat_keeper_spawn_attached(moat_keeper *k, const moat_spawn_spec *spec, bool attached, moat_command *ret,
			       moat_error *err);
/* As moat_keeper_spawn_attached; record (an absolute path, or NULL) names
 * the asciicast file this front records the command's terminal in, which
 * the keeper's log names (command.start). */
int moat_keeper_spawn_recorded(moat_keeper *k, const moat_spawn_spec *spec, bool attached, const char *record,
			       moat_command *ret, moat_error *err);
/* For a front that polls and runs one command: spawns spec (no tty) and
 * waits for its end in the same request, so that its exit comes without a
 * wait of its own (one round trip less). Then, each time moat_keeper_fd
 * is readable, moat_keeper_spawn_wait_recv takes one answer: SPAWNED
 * (ret_cmd filled), EXIT (ret_exit and *ret_sandbox, as
 * moat_keeper_wait_recv_report fills them: the end), OTHER (an answer to
 * nothing of this spawn's), or a negative errno (the keeper refused the
 * spawn or the wait, or the connection broke). Nothing else may be asked
 * on this connection in between. */
enum { MOAT_KEEPER_RECV_EXIT = 0, MOAT_KEEPER_RECV_SPAWNED = 1, MOAT_KEEPER_RECV_OTHER = 2 };
int moat_keeper_spawn_wait_send(moat_keeper *k, const moat_spawn_spec *spec, bool attached, moat_error *err);
int moat_keeper_spawn_wait_recv(moat_keeper *k, moat_command *ret_cmd, moat_keeper_exit *ret_exit,
				struct json_t **ret_sandbox, moat_error *err);
/* Blocks until command id has ended, and says how. */
int moat_keeper_wait(moat_keeper *k, uint32_t id, moat_keeper_exit *ret, moat_error *err);
/* The same wait in two halves, for a front that polls: the request, then
 * (once moat_keeper_fd is readable) its answer. Nothing else may be asked
 * on this connection in between. */
int moat_keeper_fd(const moat_keeper *k);
int moat_keeper_wait_send(moat_keeper *k, uint32_t id, moat_error *err);
int moat_keeper_wait_recv(moat_keeper *k, moat_keeper_exit *ret, moat_error *err);
/* As moat_keeper_wait_recv, and *ret_sandbox takes the exit's report of
 * the sandbox (keeper-proto.h: isolation, enforced, cgroup figures), a
 * JSON object to json_decref, or NULL when the keeper sent none. */
int moat_keeper_wait_recv_report(moat_keeper *k, moat_keeper_exit *ret, struct json_t **ret_sandbox,
				 moat_error *err);
int moat_keeper_signal(moat_keeper *k, uint32_t id, int sig, moat_error *err);
/* Ends every process of the sandbox; the keeper then removes what it made
 * and exits. */
int moat_keeper_stop(moat_keeper *k, moat_error *err);
/* The sandbox ends ttl_ms from now, and after idle_ms with no command
 * running (0: never); when it ends, for whatever reason, the keeper writes
 * end.json into folder end_dir (-1: none) saying why (keeper-lifetime.h). */
int moat_keeper_lifetime(moat_keeper *k, uint64_t ttl_ms, uint64_t idle_ms, int end_dir, moat_error *err);
/* Tells the keeper, for its audit log (session.cp), of a copy this front
 * made into (into) or out of its sandbox; error: why it stopped, or NULL. */
int moat_keeper_copied(moat_keeper *k, bool into, const char *host, const char *path, uint64_t files, uint64_t dirs,
		       uint64_t bytes, const char *error, moat_error *err);
/* The keeper's answer to status: state and live command ids. */
int moat_keeper_status(moat_keeper *k, moat_keeper_msg *ret, moat_error *err);

/* One request to the sandbox's approval gates (approvals.h: body is the
 * request object); *ret: the answer's body, the caller's to release. */
int moat_keeper_approvals(moat_keeper *k, struct json_t *body, struct json_t **ret, moat_error *err);

/* Socket I/O shared by both sides: one message and up to 3 descriptors. */
int moat__keeper_send(int fd, const moat_keeper_msg *m, const int *fds, size_t n_fds, moat_error *err);
/* Receives one message into m (initialised by the caller), its
 * descriptors into fds (*ret_n of them, O_CLOEXEC; any beyond max are
 * closed). -EPIPE at end of file. */
int moat__keeper_recv(int fd, moat_keeper_msg *m, int *fds, size_t max, size_t *ret_n, moat_error *err);
