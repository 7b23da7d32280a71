/* Internal interfaces between the sandbox sequencer (sandbox.c), the init
 * that runs as pid 1 inside (init.c) and the mechanisms they call. */
#pragma once

#include "config.h"
#include "runlimits.h"
#include "result.h"

#include <sys/types.h>

/* The uid and gid the sandboxed command has inside its user namespace by
 * default; moat_config.sandbox_uid/gid are what a sandbox uses (the base
 * root's /etc/passwd names these). */
#define MOAT_SANDBOX_UID MOAT_DEFAULT_SANDBOX_UID
#define MOAT_SANDBOX_GID MOAT_DEFAULT_SANDBOX_GID
/* As root, what the sandbox user is on the host: an unprivileged id, never
 * host root (see docs/security.md). */
#define MOAT_ROOT_HOST_UID 65534
#define MOAT_ROOT_HOST_GID 65534

/* Messages on the control socket between the supervisor and the init.
 * SOCK_SEQPACKET keeps each one whole. GO carries the protocol's version:
 * an init of another version refuses it (docs/architecture.md).
 *
 * Version 3: the init serves a table of commands, each named by an id the
 * supervisor picks (a SPAWN's a). A SPAWN carries the command's stdin,
 * stdout and stderr and, after them, a sealed memfd holding its spec
 * (spawnspec.h), always: a run is a sandbox object too, and its command
 * comes the same way as every other (version 2 also took a SPAWN without
 * the memfd, for the command the init was cloned with). */
#define MOAT_CTL_VERSION 3

typedef enum moat_ctl_type {
	MOAT_CTL_GO = 1,          /* sup -> init: maps written; a = version */
	MOAT_CTL_SIGNAL,          /* sup -> init: signal a to command b's
				   * process group (b = 0: the first one) */
	MOAT_CTL_SETUP_ERROR,     /* init -> sup: errno a, text; the sandbox
				   * could not be set up (or, in a sandbox that
				   * ends with its first command, that command
				   * could not be confined) and ends */
	MOAT_CTL_STARTED,         /* init -> sup: command b execve'd as pid a
				   * (in the pid ns); text = moat_isolation */
	MOAT_CTL_EXEC_FAILED,     /* init -> sup: command b: execve failed with
				   * errno a, text = the program */
	MOAT_CTL_EXITED,          /* init -> sup: command b reaped with wait
				   * status a; text = moat_ctl_exit_usage */
	MOAT_CTL_FD,              /* init -> sup: an fd rides along (b = kind;
				   * a = command id for a terminal) */
	MOAT_CTL_CGROUP_JOINED,   /* sup -> init: the init is in the run's cgroup */
	MOAT_CTL_SPAWN,           /* sup -> init: start command a; its stdin,
				   * stdout, stderr and spec ride along */
	MOAT_CTL_READY,           /* init -> sup: set up, serving commands */
	MOAT_CTL_REFUSED,         /* init -> sup: SPAWN of command b refused,
				   * errno a, text says why; nothing started */
	MOAT_CTL_SPAWN_FAILED,    /* init -> sup: command b could not be
				   * confined (errno a, text); its EXITED follows */
	MOAT_CTL_SHUTDOWN,        /* sup -> init: kill every process, report
				   * each command's end, exit */
} moat_ctl_type;

/* The resource usage of a command, from the init's wait4. maxrss_kb is
 * not the command's alone: at its execve the kernel carries the peak
 * resident size of the memory it leaves (the init's, shared until then:
 * CLONE_VM) into the process's (fs/exec.c, exec_mmap). inherited_kb is
 * the init's own peak read once the command had execed, which that
 * carried figure cannot exceed: a maxrss_kb above it is the command's
 * own peak; one at or below it says only "at most that much". */
typedef struct moat_ctl_exit_usage {
	int64_t utime_us, stime_us;
	int64_t maxrss_kb;
	int64_t inherited_kb;
} moat_ctl_exit_usage;

typedef enum moat_ctl_fd_kind {
	MOAT_CTL_FD_PTY_MASTER = 1,
	MOAT_CTL_FD_PROXY_LISTENER,
	MOAT_CTL_FD_NOTIFY,
	MOAT_CTL_FD_OUT_TMPFS, /* the capped /out, for the copy-out (outdir.c) */
	MOAT_CTL_FD_TRANSPARENT_LISTENER, /* redirected TCP (netnat.h) */
	MOAT_CTL_FD_DNS_STUB,             /* the DNS stub's UDP socket */
} moat_ctl_fd_kind;

typedef struct moat_ctl_msg {
	int type;
	int a;
	int b;
	char text[1024];
} moat_ctl_msg;

int moat__ctl_send(int fd, int type, int a, int b, const char *text);
int moat__ctl_send_fd(int fd, int kind, int passfd);
/* The same, naming command a (a terminal's master). */
int moat__ctl_send_fd_for(int fd, int kind, int a, int passfd);
/* Sends len bytes of binary data in the text field (len < its size). */
int moat__ctl_send_data(int fd, int type, int a, int b, const void *data, size_t len);
/* Receives one message; *ret_fd gets a passed fd or -1. Returns 0, or
 * -EPIPE at EOF, or -errno. */
int moat__ctl_recv(int fd, moat_ctl_msg *m, int *ret_fd);
/* A message of type with a and n descriptors (n <= MOAT_CTL_MAX_FDS). */
#define MOAT_CTL_MAX_FDS 4
int moat__ctl_send_fds(int fd, int type, int a, const int *fds, size_t n);
/* Receives one message with up to max descriptors into fds (*ret_n of
 * them; any beyond max are closed). Returns as moat__ctl_recv. */
int moat__ctl_recv_fds(int fd, moat_ctl_msg *m, int *fds, size_t max, size_t *ret_n);

/* A host path the init binds, resolved by the supervisor before clone
 * (hostpath.h): inside its user namespace the init sees host root as the
 * overflow uid and could not tell a root-owned link from one the sandbox
 * planted. real is the path of what was found, free of links; the init
 * opens it with RESOLVE_NO_SYMLINKS and checks it is still the same inode. */
typedef struct moat_host_src {
	const char *path; /* as given */
	char *real;       /* NULL when missing */
	dev_t dev;
	ino_t ino;
} moat_host_src;

#define MOAT_MAX_HOST_SRCS (MOAT_MAX_BINDS + 32)

typedef struct moat_host_srcs {
	moat_host_src v[MOAT_MAX_HOST_SRCS];
	size_t n;
} moat_host_srcs;

/* mount.c, in the supervisor: resolves every host path the root
 * filesystem will bind (the system folders, --out, --ro and --rw). */
int moat__rootfs_resolve_sources(const moat_config *c, moat_host_srcs *ret, moat_error *err);
void moat__rootfs_sources_free(moat_host_srcs *s);

/* Everything the init needs, prepared by the supervisor before clone so the
 * child never allocates from state the parent might have half-built. */
typedef struct moat_init_args {
	const moat_config *config;
	int ctl_fd;            /* control socket, init side; the command's
				* streams come over it with MOAT_CTL_SPAWN */
	bool rootless;
	/* The runner's model: the sandbox ends when its first command does.
	 * Otherwise the init serves commands until SHUTDOWN. */
	bool ends_with_first;
	bool say_ready;        /* send READY once set up (not in a run) */
	const char *cwd;       /* inside; the default of every command */
	bool out_bound;
	/* limits.c: rlimits standing in for what no cgroup enforces, and
	 * whether to wait for MOAT_CTL_CGROUP_JOINED before forking the
	 * command (the supervisor joins the init to a v1 cgroup while the
	 * init sets up the root filesystem). */
	moat_rlimit_plan rlimits;
	bool wait_cgroup;
	bool file_trail;       /* install the file trail's notify filter */
	bool uts_joined;       /* another sandbox's uts namespace: its hostname
				* stays unless config->hostname names one */
	bool net_joined;       /* another's network namespace: its loopback is
				* as its maker left it (a pod's is not ours to
				* change) */
	const moat_host_srcs *host_srcs;
	/* The run's own cgroup directories, bound read-only under
	 * /sys/fs/cgroup so runtimes see their limits (mount.c). */
	moat_cgroup_mount cgroup_mounts[_MOAT_CG_MAX];
	size_t n_cgroup_mounts;
} moat_init_args;

/* sandbox.c: what every front shares to bring a sandbox up.
 *
 * moat__sandbox_prepare: validates, checks --rw sources and hands --out to
 * the sandbox user (as root); fills iso's identity. No process yet. */
struct moat_gateway_config;
int moat__sandbox_prepare(const moat_config *c, const struct moat_gateway_config *gateway, moat_isolation *iso,
			  moat_error *err);
/* The sandbox's base environment: PATH, HOME, LANG, TERM, config->env and
 * the proxy variables. */
int moat__sandbox_build_env(const moat_config *c, char ***ret);

typedef struct moat_boot {
	const moat_config *c;
	moat_run_limits *lim;  /* prepared (moat__limits_prepare) */
	bool ends_with_first;
	bool say_ready;        /* the creator waits for READY */
	bool file_trail;
	moat_isolation *iso;   /* identity in (prepare); namespaces out */
	const struct moat_sandbox_join *join; /* or NULL (sandbox.h) */
	int *keep_ns_fds;      /* or NULL (sandbox.h) */
	/* Armed, then called, right after the clone and before the maps:
	 * what the init must never hold in its copy of our memory (the
	 * secrets' values, the gateway's CA key) exists only from then on. */
	struct moat_secrets *secrets;
	struct moat_audit *audit;
	int (*after_clone)(void *arg, moat_error *err);
	void *after_clone_arg;
	/* Out: set once the init exists (pid != 0), even on failure, and
	 * then the caller's to end and close. */
	int ctl, pidfd;
	pid_t pid;
	uint64_t t0;
} moat_boot;

/* Resolves the host paths, clones the init into every namespace (and the
 * cgroup), writes its maps, says GO and joins it to the cgroup. The init
 * then sets up and serves the control socket. On failure after clone the
 * init may have said why: its SETUP_ERROR waits on b->ctl. */
int moat__sandbox_boot(moat_boot *b, moat_error *err);

/* sandbox-object.c, for the runner's supervisor loop (supervise.c), which
 * reads the command's output itself: ends the sandbox for a limit only
 * the loop sees (the output cap, a second signal of the caller), and the
 * result moat_sandbox_destroy completes, for the output counts. */
struct moat_sandbox;
void moat__sandbox_kill(struct moat_sandbox *sb, moat_status why, const char *limit);
moat_result *moat__sandbox_result(struct moat_sandbox *sb);

/* After the sandbox is gone: checks what it left in --out (or copies the
 * capped /out from out_fs). On failure r becomes a setup error and
 * *ret_errno its code. */
int moat__sandbox_out_finish(const moat_config *c, int out_fs, moat_result *r, int *ret_errno);

/* The body of pid 1 inside the sandbox. Never returns. */
_noreturn_ void moat__init_main(const moat_init_args *a);

/* sysctl.c: writes config->sysctls ("key=value") through /proc/sys, in the
 * caller's namespaces (the init's, before its root is built). */
int moat__sysctl_write(const moat_config *c, moat_error *err);

/* userns.c: writes uid_map, setgroups and gid_map of pid, from the host. */
int moat__userns_write_maps(pid_t pid, bool rootless, uid_t uid, gid_t gid, uid_t host_uid, gid_t host_gid,
			    moat_error *err);
/* Whether this process is root of the host: uid 0 in the initial user
 * namespace. Root of another user namespace (rootless podman runs its
 * runtime as such) cannot map MOAT_ROOT_HOST_UID and runs sandboxes as a
 * rootless caller does. */
bool moat__userns_host_root(void);
/* Inside, after the maps exist: become the sandbox user, keeping the
 * capabilities the rest of setup needs. */
int moat__userns_become_sandbox_user(bool rootless, uid_t uid, gid_t gid, moat_error *err);

/* Limits the kernel keeps per user namespace (/proc/sys/user/NAME). The
 * sandbox's namespace belongs to the caller, so what the sandbox holds of
 * these objects is charged to the caller's host user too (as root: to host
 * root); the values below bound that. */
typedef struct moat_userns_limit {
	const char *name;
	unsigned value;
} moat_userns_limit;
/* Pure: the limits for a profile ("code" or "agent"), ending with a NULL
 * name. */
const moat_userns_limit *moat__userns_limits(const char *profile);
/* In the init, while it holds every capability of its namespace: writes
 * them into the files under sys_user_fd (/proc/sys/user). A kernel that
 * lacks one of the files lacks that kind of object. */
int moat__userns_set_limits(int sys_user_fd, const char *profile, moat_error *err);

/* mount.c: builds the read-only root and pivots into it. */
int moat__rootfs_setup(const moat_init_args *a, moat_isolation *iso, moat_error *err);
/* Part of it, callable alone (tests bind a fake tree into a scratch root):
 * binds the run's cgroup directories read-only below rootfd's
 * sys/fs/cgroup, as moat__cgroup_mounts() lists them. Needs a mount
 * namespace of its own. */
int moat__rootfs_cgroup(int rootfd, const moat_cgroup_mount *mounts, size_t n, moat_error *err);

/* net.c: brings up loopback in the new network namespace. */
int moat__net_loopback_up(moat_error *err);

/* outdir.c, after the run, from the host: makes what the run left in the
 * output directory harmless to read (links out, FIFOs, sockets, devices,
 * setuid bits): how many entries were removed and how many modes fixed. */
int moat__out_sanitize(const char *out_dir, unsigned *ret_removed, unsigned *ret_fixed, moat_error *err);

/* outdir.c, pure: whether /out is a tmpfs capped at limits.disk and
 * limits.inodes, copied out to the host's --out folder after the run
 * (true when either limit is set), or the host folder bound in place (the
 * agent profile's workspace, exec.workspace: it keeps the folder's files
 * live, and the two limits are reported as not enforced). */
bool moat__out_capped(const moat_config *c);

/* outdir.c: records in r what enforces limits.disk and limits.inodes. */
void moat__out_enforced(const moat_config *c, moat_result *r);

/* outdir.c, after the run, from the host: checks the capped /out (out_fs,
 * the tmpfs's mount descriptor, which nothing of the run can reach any
 * more) with the same hygiene walk, then copies it into the --out folder.
 * The copy writes at most limits.disk bytes and limits.inodes entries (hard
 * links and sparse files cannot make it larger than what the cap held);
 * anything that stops it is an error: the folder may then hold part of the
 * output, and the run is a setup error. */
int moat__out_copy_out(const moat_config *c, int out_fs, unsigned *ret_removed, unsigned *ret_fixed,
		       moat_error *err);

/* sandbox-object.c: what moat eval's warm path (eval_warm.c) reads of a
 * sandbox it created: its cgroup directories (cgroup.h) and the isolation
 * its first command was started with. */
struct moat_sandbox;
size_t moat__sandbox_cgroup_mounts(struct moat_sandbox *sb, moat_cgroup_mount ret[_MOAT_CG_MAX]);
const moat_isolation *moat__sandbox_isolation(const struct moat_sandbox *sb);
/* What a run's result would say of the sandbox now, for a keeper whose
 * sandbox serves one command (moatd's pool): isolation, enforced,
 * limits_note, and the cgroup's CPU time (true: known) and memory peak
 * so far. */
bool moat__sandbox_report(struct moat_sandbox *sb, moat_result *ret);
