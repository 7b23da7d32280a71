/* One sandboxed run, start to finish: the sequencer that calls every
 * mechanism (userns, mount, net, cgroup, limits, confinement) in order. */
#pragma once

#include "config.h"
#include "result.h"

#include <sys/types.h>

struct moat_audit;  /* audit.h */
struct moat_gateway_config; /* gateway.h */
struct moat_record; /* record.h */

/* Where the run's output goes. By default stdout and stderr of the sandbox
 * are captured through pipes, counted, capped, and forwarded to fds 1 and 2
 * of the caller. */
typedef struct moat_run_io {
	int forward_stdout_fd; /* -1: do not forward */
	int forward_stderr_fd;
	/* With stdout_direct, the command's stdout is stdout_direct_fd itself
	 * (a pipe: moat_sandbox_run refuses anything else, a terminal above
	 * all), neither captured, counted, capped, recorded
	 * nor redacted: the caller reading its other end does that (moat mcp
	 * wrap). Not with config->tty. A flag of its own, so that a zeroed
	 * struct never hands fd 0 in. */
	bool stdout_direct;
	int stdout_direct_fd;
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
	 * has been cloned, so that no value is in memory the init inherits.
	 * With secrets, the output reaches record, on_output and the sinks
	 * redacted (redactstream.h), and so does the result's error. */
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

/* ------------------------------------------------------------------------
 * A sandbox as an object with a lifecycle.
 *
 * moat_sandbox_run above takes over its caller until the run ends: it
 * blocks the caller's SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE, sets
 * SIGCHLD to its default and reads the caller's terminal. The functions
 * below do none of that: the caller owns the event loop and the signals.
 *
 *   moat_sandbox_create()     namespaces, root, cgroup, gateway; the init
 *                             (pid 1 inside) runs and waits for commands
 *   moat_sandbox_spawn()      the init starts one command, confined by the
 *                             sandbox's policy in the child before execve
 *   moat_sandbox_fd()         readable when something happened:
 *   moat_sandbox_dispatch()   non-blocking; hands out one event at a time
 *   moat_sandbox_wait()       blocks until one command ends
 *   moat_sandbox_signal()     a signal to one command's process group
 *   moat_sandbox_stop()       ends every process of the sandbox
 *   moat_sandbox_destroy()    reaps, accounts, removes the cgroup; frees
 *
 * Only the init starts processes in the sandbox: nothing is ever entered
 * from the host with setns (the path of runc CVE-2016-9962 and
 * CVE-2019-5736). Every process of a sandbox dies with it, and
 * moat_sandbox_destroy leaves no process, mount or cgroup behind.
 *
 * What the library does not touch: signal dispositions and masks, fd 0,
 * the caller's terminal. It starts the init with no exit signal, so the
 * caller's SIGCHLD handler never sees it and a caller that ignores SIGCHLD
 * does not lose its status. The init dies with the thread that created the
 * sandbox (PR_SET_PDEATHSIG): create, use and destroy a sandbox from one
 * thread that outlives it. A moat_sandbox is not thread-safe.
 *
 * Limits: limits.wall_ms bounds the sandbox's life (its end event says
 * MOAT_STATUS_TIMEOUT); a cgroup limit reached (memory, pids, cpu) ends the
 * whole sandbox, as it ends a run. limits.output_bytes applies only where
 * moat reads the output (moat_sandbox_run): a spawned command writes to the
 * descriptors its caller gave, uncounted.
 * ------------------------------------------------------------------------ */

typedef struct moat_sandbox moat_sandbox;

/* At most this many commands live at once in one sandbox; a spawn beyond
 * it is refused with EAGAIN. */
#define MOAT_SANDBOX_MAX_COMMANDS 64

typedef struct moat_sandbox_opts {
	/* The runner's model (moat run, moat judge): the sandbox ends when its
	 * first command does, and every process it left is killed then. When
	 * false the sandbox stays until moat_sandbox_stop, its wall limit, a
	 * cgroup limit, or the death of the thread that created it. */
	bool ends_with_first_command;
	/* Audit writer, or NULL: session.start once the sandbox is up (in a
	 * sandbox that ends with its first command: once that command runs,
	 * so that the event carries its confinement), session.stop with the
	 * result at moat_sandbox_destroy. With config->audit_files it also
	 * gets the file and exec trail (filetrail.h): each command has a
	 * trail of its own (a thread while a process of it lives), with the
	 * kernel's fanotify account of opens (as root) only in a sandbox that
	 * ends with its first command, where one trail sees everything. */
	struct moat_audit *audit;
	/* With config->net == MOAT_NET_PROXY: the egress gateway's rules.
	 * Required then. */
	const struct moat_gateway_config *gateway;
	/* As in moat_run_io: the run's secrets, armed once the init has been
	 * cloned (the result's error is redacted with them), and what must
	 * happen then, before the init is told to go on. */
	struct moat_secrets *secrets;
	int (*after_clone)(void *arg, moat_error *err);
	void *after_clone_arg;
	/* The queue that holds actions for a person (a session's keeper's),
	 * or NULL. config->exec_approve needs it: without one the sandbox is
	 * refused, as an exec gate with no one to ask fails closed. */
	struct moat_approvals *approvals;
	/* Namespaces to join instead of making new ones (a pod's containers
	 * share the first one's network, ipc and uts namespaces; with
	 * network.mode: pod, the pod's network namespace), or NULL.
	 * The caller vouches that they are another sandbox's of the same user
	 * (oci.c checks it): the init joins that sandbox's user namespace and
	 * the ones given here (-1: a new one), and makes its own mount, pid
	 * and cgroup namespaces. */
	const struct moat_sandbox_join *join;
	/* With a gateway: the network namespace its upstream side lives in
	 * (its connections out and its DNS lookups), a Kubernetes pod's
	 * (oci.c); the sandbox keeps its own private network namespace with
	 * only the gateway's port. -1 (moat_sandbox_opts_init): the
	 * supervisor's own. The caller's; the sandbox keeps a copy. */
	int upstream_netns_fd;
	/* Or NULL; else 4 slots filled with the init's user, network, ipc
	 * and uts namespaces (-1 where one cannot be opened), opened right
	 * after the clone, while the init, not yet set up, may still be
	 * opened by its creator: a rootless moat-oci keeper hands them to a
	 * container of the same user that joins them (oci.c). The caller's
	 * to close. */
	int *keep_ns_fds;
	/* The cgroup the caller names (an OCI bundle's cgroupsPath), or NULL
	 * for moat's own beside its process's (cgroup.h). Read during
	 * moat_sandbox_create only. */
	const struct moat_cgroup_req *cgroup;
} moat_sandbox_opts;

typedef struct moat_sandbox_join {
	/* The owner of the ipc and uts namespaces, and of the network one
	 * unless net_foreign; -1: a user namespace of the sandbox's own
	 * (a pod's first container, joining only the pod's network). */
	int userns_fd;
	int netns_fd, ipcns_fd, utsns_fd;
	/* The network namespace is not userns_fd's: a pod's (network.mode:
	 * pod), made by the CNI plugin in the runtime's own user namespace.
	 * It is entered first, while the runtime's privilege over it holds;
	 * the sandbox's user has none there (it cannot change interfaces,
	 * routes or addresses). */
	bool net_foreign;
	/* A pod's network namespace with a policy that has a gateway: not
	 * joined (netns_fd is -1), but where the gateway's upstream side
	 * lives (moat_sandbox_opts.upstream_netns_fd); -1 without. */
	int upstream_netns_fd;
} moat_sandbox_join;

void moat_sandbox_opts_init(moat_sandbox_opts *o);

/* Builds the sandbox config describes (its argv is not used and may be
 * NULL) and returns once the init runs inside and waits for commands.
 * config must stay valid and unchanged until moat_sandbox_destroy. Returns
 * 0 and *ret, or a negative errno with err filled (nothing is left behind
 * then). */
int moat_sandbox_create(const moat_config *config, const moat_sandbox_opts *opts, moat_sandbox **ret,
			moat_error *err);

/* One command to start in a sandbox. */
typedef struct moat_spawn_spec {
	char *const *argv; /* required; argv[0] is looked up on the sandbox's PATH */
	/* NAME=VALUE entries set over the sandbox's environment (its base one,
	 * config->env and the proxy variables), or NULL. Never copied from the
	 * caller's environment. */
	char *const *env;
	const char *cwd;   /* inside; NULL: the sandbox's default (/out or /tmp) */
	/* The command's standard streams: descriptors of the caller, which the
	 * command gets copies of (the caller keeps and closes its own), or -1
	 * for /dev/null. A terminal is never passed through by default: a fd
	 * that is a terminal is refused (TIOCSTI, bubblewrap CVE-2017-5226);
	 * ask for tty instead. */
	int stdin_fd, stdout_fd, stderr_fd;
	/* A fresh pseudo-terminal of the sandbox's own is the command's
	 * controlling terminal and its three streams (the fds above must be
	 * -1); its master comes back in moat_command.pty_fd. */
	bool tty;
	/* With tty: the terminal's size (the caller's window), set before the
	 * command starts, so that one that reads it at once sees it; 0: none
	 * known (the kernel's 0x0). */
	unsigned short tty_rows, tty_cols;
} moat_spawn_spec;

/* argv NULL, env NULL, cwd NULL, the three streams /dev/null, no tty. */
void moat_spawn_spec_init(moat_spawn_spec *s);

/* A command the init accepted. */
typedef struct moat_command {
	uint32_t id;  /* names it to moat_sandbox_wait and moat_sandbox_signal */
	pid_t pid;    /* inside the sandbox's pid namespace; 0 when it never ran
		       * (its end event says why) */
	int pty_fd;   /* with spec->tty: the terminal's master, the caller's to
		       * close; else -1. It comes back even when the command
		       * has ended already, holding what the command wrote. */
} moat_command;

/* Asks the init to start spec's command; returns once the init says it
 * ran execve or could not. A command that could not be executed still gets
 * an id and an end event: exit code 127 (not found) or 126 (not
 * executable), or status MOAT_STATUS_SETUP_ERROR when its confinement
 * could not be put in place. Returns 0 and *ret, or a negative errno with
 * err filled: EINVAL (a bad spec), E2BIG (over a cap), EAGAIN
 * (MOAT_SANDBOX_MAX_COMMANDS live), ESRCH (the sandbox has ended), or the
 * first command of a sandbox that ends with it was already spawned
 * (EALREADY). */
int moat_sandbox_spawn(moat_sandbox *sb, const moat_spawn_spec *spec, moat_command *ret, moat_error *err);

/* How one command ended, measured by the init when it reaped it. */
typedef struct moat_command_result {
	uint32_t id;
	moat_status status; /* EXITED, SIGNALED or SETUP_ERROR */
	int exit_code;      /* EXITED: its exit code (127/126: exec failed); else -1 */
	int signal;         /* SIGNALED: the signal; else 0 */
	int exit_status;    /* as `moat run` would exit: code, 128+signal or 125 */
	uint64_t wall_ms;   /* from the spawn request to its end */
	uint64_t cpu_user_ms, cpu_sys_ms; /* wait4's, children it reaped included */
	/* Its processes' peak resident size (wait4's ru_maxrss), or 0 when
	 * that figure could be the init's, which the kernel carries into a
	 * command at its execve (moat_ctl_exit_usage in sandbox-internal.h) */
	uint64_t max_rss_bytes;
	char error[512];    /* why it did not run, when it did not */
	/* The sandbox's limit it met ("memory", "pids", "cpu", "wall"...:
	 * the result's "limit"), or "": the one that ended the sandbox with
	 * it, or the cgroup's verdict at its end (moat__limits_verdict). */
	char limit[24];
} moat_command_result;

typedef enum moat_sandbox_event_type {
	MOAT_SANDBOX_EVENT_EXITED = 1, /* a command ended: .command */
	MOAT_SANDBOX_EVENT_ENDED,      /* the sandbox ended: .status, .limit;
					* no command runs any more */
	_MOAT_SANDBOX_EVENT_MAX,
	_MOAT_SANDBOX_EVENT_INVALID = -1,
} moat_sandbox_event_type;

typedef struct moat_sandbox_event {
	moat_sandbox_event_type type;
	moat_command_result command;
	/* ENDED: MOAT_STATUS_EXITED when it was stopped or its first command
	 * ended it; TIMEOUT, OOM, PIDS_LIMIT, CPU_LIMIT when a limit did (and
	 * limit names it); SETUP_ERROR when its init failed. */
	moat_status status;
	char limit[24];
} moat_sandbox_event;

/* A descriptor that is readable (POLLIN) when moat_sandbox_dispatch has
 * something to do. Owned by the sandbox; valid until destroy. */
int moat_sandbox_fd(const moat_sandbox *sb);

/* The init's pid in the caller's pid namespace (its /proc/PID/root and
 * /proc/PID/ns are the sandbox's), or 0 once it was reaped. */
pid_t moat_sandbox_init_pid(const moat_sandbox *sb);

/* The gateway's request counters so far (safe while it runs on its own
 * thread); false when the sandbox has no gateway. */
typedef struct moat_sandbox_net {
	uint64_t allowed, denied, bytes_up, bytes_down;
} moat_sandbox_net;
bool moat_sandbox_net_counters(moat_sandbox *sb, moat_sandbox_net *ret);

/* Never blocks. Does what is ready (control messages, the init's end, the
 * wall timer, cgroup events) and returns 1 with *ret filled when an event
 * is due, 0 when nothing is (poll the fd again), or a negative errno with
 * err filled. After the ENDED event it returns 0 for good. */
int moat_sandbox_dispatch(moat_sandbox *sb, moat_sandbox_event *ret, moat_error *err);

/* Blocks until command id ends (timeout_ms < 0: no timeout) and fills
 * *ret; its end event is consumed, others stay for dispatch. Returns 0,
 * -ETIMEDOUT, -EINTR when a signal of the caller interrupted the wait,
 * -ESRCH for an id that is not live nor ended unreported, or another
 * negative errno with err filled. */
int moat_sandbox_wait(moat_sandbox *sb, uint32_t id, int timeout_ms, moat_command_result *ret, moat_error *err);

/* Sends sig to command id's process group (each command leads its own
 * session). Returns 0, -ESRCH when it has ended, -EINVAL for a bad signal. */
int moat_sandbox_signal(moat_sandbox *sb, uint32_t id, int sig, moat_error *err);

/* Ends every process of the sandbox now (SIGKILL): each live command gets
 * its end event, then ENDED. Does not block on them; destroy or dispatch
 * collect them. Returns 0 or a negative errno. */
int moat_sandbox_stop(moat_sandbox *sb, moat_error *err);

/* Ends the sandbox if it still runs, reaps its init, accounts (ret: the
 * sandbox's whole life: status, cpu and memory of every process, limits and
 * what enforced them, isolation; in a sandbox that ends with its first
 * command, the status and exit are that command's, as moat_sandbox_run
 * reports them), stops its gateway, removes its cgroup,
 * writes session.stop, checks (or copies out) /out, and frees sb. ret may
 * be NULL; sb and err may be NULL. Returns 0, or a negative errno with err filled
 * when the sandbox could not be accounted or /out not checked (the
 * sandbox is gone all the same). */
int moat_sandbox_destroy(moat_sandbox *sb, moat_result *ret, moat_error *err);

static inline void moat_sandbox_destroyp(moat_sandbox **sb)
{
	moat_sandbox_destroy(*sb, NULL, NULL);
}
#define _cleanup_sandbox_ _cleanup_(moat_sandbox_destroyp)
