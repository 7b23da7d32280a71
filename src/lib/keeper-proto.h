/* The protocol between a front (the CLI, a daemon, a test driver) and the
 * keeper of one sandbox (keeper.h): one JSON object per SOCK_SEQPACKET
 * packet, at most MOAT_KEEPER_MAX_MSG bytes, with a command's standard
 * streams riding along as SCM_RIGHTS on a spawn. Encoding and decoding are
 * pure functions of their input, so unit tests and fuzzers call them
 * directly; the socket I/O is in keeper-client.c.
 *
 * Every request carries a tag the front chooses; the keeper's answer to it
 * carries the same tag, so a front may have several requests open at once
 * (a wait on each of several commands) and still tell the answers apart.
 * The first exchange is hello: the front lists the versions it speaks, the
 * keeper picks one or refuses.
 *
 *   front -> keeper                 keeper -> front
 *   hello  {versions}               hello  {version, sandbox, pid}
 *   spawn  {tag, argv, env, cwd,    spawned {tag, id, pid}
 *           tty, rows, cols, stdio,
 *           attached, record, wait} + fds
 *     (wait: the spawn is a wait too, its exit answered with the
 *      spawn's tag: a front that runs one command saves a round trip)
 *   wait   {tag, id}                exit   {tag, id, status, exit_code,
 *                                           signal, exit_status, wall_ms,
 *                                           cpu_user_ms, cpu_sys_ms,
 *                                           max_rss_bytes, error,
 *                                           limit?, sandbox?}
 *     (limit: the sandbox's limit the command met, as a run's result
 *      names it; sandbox: what a run's result says of the sandbox,
 *      moat__result_sandbox_json. Both optional: a front that knows
 *      neither reads the rest as before.)
 *   signal {tag, id, signal}        ok     {tag}
 *   stop   {tag}                    ok     {tag}
 *   status {tag}                    status {tag, sandbox, pid, state,
 *                                           commands, net?, approvals?}
 *     (net: the gateway's {allowed, denied, bytes_up, bytes_down};
 *      approvals: {pending, leases})
 *   approvals {tag, body}           approvals {tag, body}
 *     (body: one JSON object, the approval gates' own request and
 *      answer, checked by approvals.h)
 *   lifetime {tag, ttl_ms, idle_ms} ok     {tag}
 *           + the folder for end.json (keeper-lifetime.h)
 *   copied {tag, into, host, path,  ok     {tag}
 *           files, dirs, bytes,
 *           error}                  (logged as session.cp: keeper-audit.c)
 *   (any)                           error  {tag, errno, message}
 */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The versions this build speaks: the keeper and the front pick the
 * highest both know. */
#define MOAT_KEEPER_PROTO_MIN 1
#define MOAT_KEEPER_PROTO_MAX 1

/* Caps on what one message may hold: a packet larger than this is refused
 * whole (it is never read in parts). */
#define MOAT_KEEPER_MAX_MSG 65536
#define MOAT_KEEPER_MAX_ARGS 1024
#define MOAT_KEEPER_MAX_STRING 4096
#define MOAT_KEEPER_MAX_VERSIONS 16
#define MOAT_KEEPER_MAX_COMMANDS 64
#define MOAT_KEEPER_MAX_ERROR 512
/* lifetime's ttl_ms and idle_ms: at most a year. */
#define MOAT_KEEPER_MAX_LIFETIME_MS (366ull * 24 * 3600 * 1000)
/* A sandbox's id: this many random bytes, hex-encoded. */
#define MOAT_KEEPER_ID_BYTES 12
#define MOAT_KEEPER_ID_LEN (MOAT_KEEPER_ID_BYTES * 2 + 1)

typedef enum moat_keeper_msg_type {
	MOAT_KEEPER_HELLO = 0,
	MOAT_KEEPER_SPAWN,
	MOAT_KEEPER_WAIT,
	MOAT_KEEPER_SIGNAL,
	MOAT_KEEPER_STOP,
	MOAT_KEEPER_STATUS,
	MOAT_KEEPER_SPAWNED,
	MOAT_KEEPER_EXIT,
	MOAT_KEEPER_OK,
	MOAT_KEEPER_ERROR,
	MOAT_KEEPER_APPROVALS,
	MOAT_KEEPER_LIFETIME,
	MOAT_KEEPER_COPIED,
	_MOAT_KEEPER_MSG_MAX,
	_MOAT_KEEPER_MSG_INVALID = -1,
} moat_keeper_msg_type;

const char *moat_keeper_msg_type_to_string(moat_keeper_msg_type t);
moat_keeper_msg_type moat_keeper_msg_type_from_string(const char *s);

/* How a command ended, as the keeper reports it. */
typedef struct moat_keeper_exit {
	uint32_t id;
	char status[16]; /* "exited", "signaled" or "setup_error" */
	int exit_code;   /* exited: its code; else -1 */
	int signal;      /* signaled: the signal; else 0 */
	int exit_status; /* as `moat run` would exit: code, 128+signal or 125 */
	uint64_t wall_ms, cpu_user_ms, cpu_sys_ms, max_rss_bytes;
	char error[MOAT_KEEPER_MAX_ERROR]; /* why it did not run, when it did not */
	char limit[24]; /* the limit it met ("memory", "pids", "cpu"...), or "" */
} moat_keeper_exit;

/* One message, decoded. Which fields mean something depends on type (see
 * the table above); strings and vectors are owned by the message. */
typedef struct moat_keeper_msg {
	moat_keeper_msg_type type;
	uint64_t tag;

	/* hello (front): the versions it speaks; (keeper): the one chosen */
	unsigned versions[MOAT_KEEPER_MAX_VERSIONS];
	size_t n_versions;
	unsigned version;

	/* hello, status (keeper) */
	char sandbox[MOAT_KEEPER_ID_LEN];
	pid_t pid; /* also spawned: the command's pid inside */
	char state[16]; /* status: "running" or "ended" */
	uint32_t commands[MOAT_KEEPER_MAX_COMMANDS]; /* status: live ids */
	size_t n_commands;
	/* status: the gateway's request counters (net_known: it has one),
	 * and the approval gates' held actions and leases in force */
	bool net_known;
	uint64_t net_allowed, net_denied, net_bytes_up, net_bytes_down;
	uint64_t approvals_pending, approvals_leases;

	/* spawn */
	char **argv;
	char **env; /* NAME=VALUE */
	char *cwd;  /* NULL: the sandbox's default */
	bool tty;
	/* With tty: the front's window size, set on the terminal before the
	 * command starts; 0: unknown. */
	uint16_t rows, cols;
	/* Which of stdin, stdout, stderr ride along as descriptors, in that
	 * order; the others are /dev/null. */
	bool stdio[3];
	/* The command belongs to the connection that spawned it: when that
	 * connection closes (its front ended, even by SIGKILL) while the
	 * command lives, the keeper kills the command, so that nothing runs on
	 * unattended. */
	bool attached;
	/* spawn: after spawned, the command's exit comes with the same tag,
	 * as if a wait had been asked at once */
	bool and_wait;
	/* spawn: where the front records the command's terminal (asciicast),
	 * for the log only (command.start names it); NULL: not recorded */
	char *record;

	/* spawned, wait, signal, exit */
	uint32_t id;
	int signal; /* signal */

	moat_keeper_exit exit; /* exit */
	/* exit: the sandbox's report (owned: a reference), or NULL */
	struct json_t *sandbox_report;

	/* lifetime: the sandbox is stopped ttl_ms from now, and after
	 * idle_ms with no command running (0: never) */
	uint64_t ttl_ms, idle_ms;

	/* copied: a front copied files into (into) or out of the sandbox:
	 * host and path (the sandbox's), what moved, and why it stopped
	 * (message; NULL: it did not) */
	bool into;
	char *host, *path;
	uint64_t files, dirs, bytes;

	/* error */
	int error_errno;
	char *message;

	/* approvals: the request or answer (owned: a reference) */
	struct json_t *body;
} moat_keeper_msg;

void moat_keeper_msg_init(moat_keeper_msg *m, moat_keeper_msg_type type);
/* Frees what m holds and leaves it as moat_keeper_msg_init(m, type) did. */
void moat_keeper_msg_done(moat_keeper_msg *m);

/* Pure: m as one JSON object, NUL-terminated, in *ret (malloc'd), at most
 * MOAT_KEEPER_MAX_MSG bytes. Fails with EINVAL naming the field a value
 * that the decoder would refuse, E2BIG when over a cap. */
int moat__keeper_encode(const moat_keeper_msg *m, char **ret, moat_error *err);

/* Pure: one packet of len bytes into *ret (which the caller initialised;
 * moat_keeper_msg_done frees it, on failure too). Any departure from the
 * table above (not JSON, an unknown or missing field, a wrong type, a value
 * out of range, a cap passed) is EINVAL (E2BIG for a cap) with one message
 * naming the field: "spawn.argv[2]: not a string". */
int moat__keeper_decode(const char *buf, size_t len, moat_keeper_msg *ret, moat_error *err);

/* Pure: whether s is a sandbox id as moat makes them (lower-case hex of
 * MOAT_KEEPER_ID_BYTES bytes). */
bool moat__keeper_id_valid(const char *s);

/* Pure: the highest version both lists hold, or 0. */
unsigned moat__keeper_pick_version(const unsigned *theirs, size_t n);
